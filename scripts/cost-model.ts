/**
 * The cost of a stage at a load, line by line, from its synthesized CloudFormation template, a
 * dated price table (docs/prices-us-east-1.json), the units the benchmarks measured
 * (bench/measured-units.json) and the figures no bench measures (docs/cost-assumptions.json).
 * Pure: no CDK, no files; scripts/cost.ts reads the inputs and prints (docs/capacity.md "Cost").
 *
 * What the template decides: the functions' memory and architecture and which are traced, the
 * log groups and their retention, which tables have point-in-time recovery, the backup plan's
 * rules, copies and selected tables, the WAF's rules, the alarms, dashboards, secrets and keys,
 * and the deliveries' retention (the runtime configuration's default, in the settings parameter).
 * Every function of the topology must have its figures: one the model cannot price is an error,
 * not a line left out (the CDK's own helper functions, a few calls per deploy, are skipped).
 */
import { functions as topologyFunctions } from '../lib/topology.js';

export interface Load {
  leadsPerSecond: number;
  hoursPerDay: number;
  daysPerMonth: number;
  deliveriesPerLead: number;
  /** Months of leads the durable tables (clients, work orders) hold. */
  durableMonths: number;
}
export const plannedLoad: Load = { leadsPerSecond: 200, hoursPerDay: 8, daysPerMonth: 22, deliveriesPerLead: 5, durableMonths: 1 };

type Tier = { upToMillions?: number; usd: number };
export interface Prices {
  region: string;
  asOf: string;
  apiGateway: { restRequestsPerMillion: Tier[] };
  waf: { webAclPerMonth: number; rulePerMonth: number; requestsPerMillion: number };
  lambda: { requestsPerMillion: number; gbSecond: Record<string, number> };
  dynamodb: { writeRequestUnitsPerMillion: number; readRequestUnitsPerMillion: number; storageGbMonth: number; pointInTimeRecoveryGbMonth: number };
  backup: { dynamodbWarmGbMonth: number; dynamodbColdGbMonth: number; crossRegionTransferGb: number };
  sqs: { requestsPerMillion: number };
  cloudwatch: { logsIngestGb: number; logsStorageGbMonth: number; alarmPerMonth: number; dashboardPerMonth: number; customMetricPerMonth: number };
  xray: { tracesRecordedPerMillion: number };
  secretsManager: { secretPerMonth: number };
  kms: { keyPerMonth: number };
}

export interface Measured {
  delivery: { writeUnits: { value: number }; sqsRequests: { value: number }; measuredAt: string };
  lead: { writeUnits: { value: number }; measuredAt: string };
}

export interface FunctionLoad { per: 'lead' | 'delivery' | 'month'; invocations: number; ms: number; logBytes: number; viaApi?: boolean }
export interface Assumptions {
  functions: Record<string, FunctionLoad>;
  lead: { apiRequests: number; readUnits: { value: number }; apiAccessLogBytes: { value: number }; durableBytes: Record<string, number | string> };
  delivery: { readUnits: { value: number }; storedBytes: { value: number; table: string } };
  xray: { reservoirPerSecond: number; fixedRate: number };
  /**
   * The delivery statistics' counters (docs/capacity.md "Statistics"): 1 WRU per (endpoint, hour) a
   * stream batch touched, so per active endpoint per batch its records land in (at most one per
   * stream record); and the fan-out's lead counters, 1 WRU per (organization, day) a clients batch touched.
   */
  statistics: {
    activeEndpoints: { value: number };
    batchesPerEndpointMinute: { value: number };
    recordsPerDelivery: { value: number };
    leadCounterWriteUnits: { value: number };
  };
  /** Tables whose size does not follow the load (GB). */
  tables: Record<string, number | string>;
  customMetrics: { value: number };
}

export interface Template { Resources: Record<string, { Type: string; Properties?: Record<string, unknown> }> }

/** One line of the report: dollars per million leads, per million deliveries (the lines they drive), and a month in all. */
export interface CostLine { service: string; what: string; perMillionLeads?: number; perMillionDeliveries?: number; monthly: number }
export interface CostReport {
  load: Load;
  leads: number;
  deliveries: number;
  lines: CostLine[];
  total: { perMillionLeads: number; perMillionDeliveries: number; monthly: number };
}

const GB = 1024 ** 3;
const DAYS_PER_MONTH = 365.25 / 12;
const M = 1e6;

/** A tiered price: the first `upToMillions` at its rate, and so on. */
export function tiered(tiers: Tier[], count: number): number {
  let cost = 0;
  let from = 0;
  for (const tier of tiers) {
    const to = tier.upToMillions === undefined ? Infinity : tier.upToMillions * M;
    if (count > from) cost += (Math.min(count, to) - from) * tier.usd / M;
    from = to;
  }
  return cost;
}

const ofType = (template: Template, type: string) => Object.entries(template.Resources).filter(([, r]) => r.Type === type);
/** The topology name a logical id starts with (`clientsTable1A2B…`, `leadIntakeFunctionLogs…`). */
const named = (logicalId: string, names: string[], suffix: string) => names.find((n) => logicalId.startsWith(`${n}${suffix}`));
/** A Ref or GetAtt to a resource: its logical id. */
const refOf = (value: unknown): string | undefined => {
  const v = value as { Ref?: string; 'Fn::GetAtt'?: [string, string] };
  return v?.Ref ?? v?.['Fn::GetAtt']?.[0];
};

/** How often a backup rule's cron runs, in points a month (daily, weekly or monthly schedules). */
export function pointsPerMonth(schedule: string): number {
  const [, , dayOfMonth, , dayOfWeek] = /^cron\((.*)\)$/.exec(schedule)?.[1].split(' ') ?? [];
  if (dayOfMonth && /^\d+$/.test(dayOfMonth)) return 1;
  if (dayOfWeek && /^[A-Z]{3}$|^\d$/.test(dayOfWeek)) return DAYS_PER_MONTH / 7;
  if (dayOfMonth === '*' || dayOfWeek === '*') return DAYS_PER_MONTH;
  throw new Error(`Cannot tell how often the backup rule runs: ${schedule}`);
}

/**
 * `projectFunctions`: the topology's function names (their logical ids start `<name>Function`), each
 * of which must be in `assumed.functions`; any other function of the template is a CDK helper.
 */
export function estimateCost(template: Template, prices: Prices, measured: Measured, assumed: Assumptions, load: Load,
  projectFunctions: readonly string[] = Object.keys(topologyFunctions)): CostReport {
  const activeSeconds = load.leadsPerSecond > 0 ? load.hoursPerDay * 3600 * load.daysPerMonth : 0;
  const leads = load.leadsPerSecond * activeSeconds;
  const deliveries = leads * load.deliveriesPerLead;
  const lines: CostLine[] = [];
  /** A line from unit costs: `lead` and `delivery` in dollars per lead / per delivery, `fixed` dollars a month. */
  const add = (service: string, what: string, cost: { lead?: number; delivery?: number; fixed?: number }) => {
    const monthly = (cost.lead ?? 0) * leads + (cost.delivery ?? 0) * deliveries + (cost.fixed ?? 0);
    lines.push({
      service, what, monthly,
      ...(cost.lead !== undefined ? { perMillionLeads: cost.lead * M } : {}),
      ...(cost.delivery !== undefined ? { perMillionDeliveries: cost.delivery * M } : {}),
    });
  };
  const functionNames = [...projectFunctions].sort((a, b) => b.length - a.length); // the longest first: `mailFeedback` before `mail…`
  const figures = (name: string): FunctionLoad => {
    const f = assumed.functions[name];
    if (!f) throw new Error(`No cost figures for the function ${name}: add it to docs/cost-assumptions.json "functions" (docs/capacity.md "Cost")`);
    return f;
  };
  const per = (f: FunctionLoad) => (f.per === 'lead' ? 'lead' : f.per === 'delivery' ? 'delivery' : 'fixed') as 'lead' | 'delivery' | 'fixed';

  // The front door: every lead and settings call is one API request, inspected by the WAF first.
  const monthlyApiCalls = Object.values(assumed.functions).filter((f) => f.viaApi && f.per === 'month').reduce((s, f) => s + f.invocations, 0);
  const apiRequests = leads * assumed.lead.apiRequests + monthlyApiCalls;
  const apiAverage = apiRequests > 0 ? tiered(prices.apiGateway.restRequestsPerMillion, apiRequests) / apiRequests : prices.apiGateway.restRequestsPerMillion[0].usd / M;
  if (ofType(template, 'AWS::ApiGateway::RestApi').length > 0) {
    add('API Gateway', 'REST requests (leads; settings calls)', { lead: assumed.lead.apiRequests * apiAverage, fixed: monthlyApiCalls * apiAverage });
  }
  const acls = ofType(template, 'AWS::WAFv2::WebACL');
  if (acls.length > 0) {
    const rules = acls.reduce((s, [, acl]) => s + ((acl.Properties?.Rules as unknown[]) ?? []).length, 0);
    add('WAF', `${acls.length} web ACL, ${rules} rules`, { fixed: acls.length * prices.waf.webAclPerMonth + rules * prices.waf.rulePerMonth });
    add('WAF', 'requests inspected', { lead: assumed.lead.apiRequests * prices.waf.requestsPerMillion / M, fixed: monthlyApiCalls * prices.waf.requestsPerMillion / M });
  }

  // Lambda at each function's configured memory and architecture.
  const traced: { unit: 'lead' | 'delivery' | 'fixed'; invocations: number }[] = [];
  for (const [id, fn] of ofType(template, 'AWS::Lambda::Function')) {
    const name = named(id, functionNames, 'Function');
    if (!name) continue; // the CDK's own custom-resource handlers: a few calls per deploy
    const spec = figures(name);
    const memoryGb = Number(fn.Properties?.MemorySize ?? 128) / 1024;
    const architecture = ((fn.Properties?.Architectures as string[] | undefined) ?? ['x86_64'])[0];
    const gbSecond = prices.lambda.gbSecond[architecture];
    if (gbSecond === undefined) throw new Error(`No Lambda price for architecture ${architecture}`);
    const perInvocation = prices.lambda.requestsPerMillion / M + memoryGb * (spec.ms / 1000) * gbSecond;
    add('Lambda', `${name} (${Math.round(memoryGb * 1024)} MB ${architecture}, ${spec.ms} ms × ${spec.invocations.toLocaleString('en-US')}${spec.per === 'month' ? ' a month' : ` per ${spec.per}`})`, { [per(spec)]: spec.invocations * perInvocation });
    if ((fn.Properties?.TracingConfig as { Mode?: string } | undefined)?.Mode === 'Active') traced.push({ unit: per(spec), invocations: spec.invocations });
  }

  // DynamoDB requests: write units as the benchmarks measured them, reads as docs/cost-assumptions.json counts them.
  const wru = prices.dynamodb.writeRequestUnitsPerMillion / M;
  const rru = prices.dynamodb.readRequestUnitsPerMillion / M;
  add('DynamoDB', `writes: ${measured.lead.writeUnits.value} WRU a lead, ${measured.delivery.writeUnits.value} a delivery (measured)`, { lead: measured.lead.writeUnits.value * wru, delivery: measured.delivery.writeUnits.value * wru });
  add('DynamoDB', `reads: ${assumed.lead.readUnits.value} RRU a lead, ${assumed.delivery.readUnits.value} a delivery`, { lead: assumed.lead.readUnits.value * rru, delivery: assumed.delivery.readUnits.value * rru });

  // The statistics' counters: an active endpoint's records land in a few batches a minute, each batch writing its endpoint-hour once.
  const stats = assumed.statistics;
  const statisticsWrites = Math.min(deliveries * stats.recordsPerDelivery.value, stats.activeEndpoints.value * (activeSeconds / 60) * stats.batchesPerEndpointMinute.value);
  add('DynamoDB', `statistics: 1 WRU per endpoint-hour a stream batch touched (${stats.activeEndpoints.value.toLocaleString('en-US')} endpoints, ${stats.batchesPerEndpointMinute.value} batches a minute each); lead counters ${stats.leadCounterWriteUnits.value} WRU a lead`, {
    lead: stats.leadCounterWriteUnits.value * wru, delivery: deliveries > 0 ? statisticsWrites / deliveries * wru : 0,
  });

  add('SQS', `${measured.delivery.sqsRequests.value} requests a delivery (measured)`, { delivery: measured.delivery.sqsRequests.value * prices.sqs.requestsPerMillion / M });

  // Logs: ingested per lead and per delivery, kept each group's configured retention.
  const groups = ofType(template, 'AWS::Logs::LogGroup');
  const ingest = { lead: 0, delivery: 0, fixed: 0 };
  const stored = { lead: 0, delivery: 0, fixed: 0 };
  const retentions = new Set<number>();
  for (const [id, group] of groups) {
    const retention = Number(group.Properties?.RetentionInDays ?? 0);
    const fn = named(id, functionNames, 'FunctionLogs');
    const bytes: Partial<Record<'lead' | 'delivery' | 'fixed', number>> = fn
      ? { [per(figures(fn))]: figures(fn).invocations * figures(fn).logBytes }
      : id.startsWith('ApiAccessLogs') ? { lead: assumed.lead.apiRequests * assumed.lead.apiAccessLogBytes.value, fixed: monthlyApiCalls * assumed.lead.apiAccessLogBytes.value }
        : {}; // API Gateway's execution logs (errors only) and the WAF's (blocked requests only): nothing at a normal load
    for (const [unit, b] of Object.entries(bytes) as ['lead' | 'delivery' | 'fixed', number][]) {
      ingest[unit] += b;
      // A month's lines kept `retention` days: that many days' worth stored at any time (never expiring: a year's).
      stored[unit] += b * Math.min(retention || 365, 3653) / DAYS_PER_MONTH;
      retentions.add(retention);
    }
  }
  const logsIn = prices.cloudwatch.logsIngestGb / GB;
  const logsKept = prices.cloudwatch.logsStorageGbMonth / GB;
  add('CloudWatch Logs', 'ingested', { lead: ingest.lead * logsIn, delivery: ingest.delivery * logsIn, fixed: ingest.fixed * logsIn });
  add('CloudWatch Logs', `stored (kept ${[...retentions].sort((a, b) => a - b).join(', ')} days, uncompressed)`, {
    fixed: (stored.lead * leads + stored.delivery * deliveries + stored.fixed) * logsKept,
  });

  // X-Ray: the default rule samples the first request each second and a fixed share of the rest.
  const apiTraced = ofType(template, 'AWS::ApiGateway::Stage').some(([, s]) => s.Properties?.TracingEnabled === true);
  const traceRate = assumed.xray.fixedRate * prices.xray.tracesRecordedPerMillion / M;
  const tracedPer = (unit: 'lead' | 'delivery' | 'fixed') => traced.filter((t) => t.unit === unit).reduce((s, t) => s + t.invocations, 0);
  // A lead's trace starts at API Gateway and holds its function: one trace, whichever is traced.
  const leadTraces = Math.max(tracedPer('lead'), apiTraced ? assumed.lead.apiRequests : 0);
  add('X-Ray', `traces: ${assumed.xray.reservoirPerSecond}/s + ${assumed.xray.fixedRate * 100}% of the rest`, {
    lead: leadTraces * traceRate, delivery: tracedPer('delivery') * traceRate,
    fixed: tracedPer('fixed') * traceRate + (traced.length > 0 ? assumed.xray.reservoirPerSecond * activeSeconds * prices.xray.tracesRecordedPerMillion / M : 0),
  });

  // Table storage, point-in-time recovery and backups, from what each table holds.
  const tables = ofType(template, 'AWS::DynamoDB::Table');
  const fixedGb = Object.fromEntries(Object.entries(assumed.tables).filter(([, gb]) => typeof gb === 'number')) as Record<string, number>;
  const tableNames = [...new Set([assumed.delivery.storedBytes.table, ...Object.keys(assumed.lead.durableBytes).filter((k) => k !== 'source'), ...Object.keys(fixedGb)])];
  const retentionDays = settingsRetentionDays(template);
  const gbOf = (name: string): number => {
    if (name in fixedGb) return fixedGb[name];
    if (name === assumed.delivery.storedBytes.table) return deliveries * assumed.delivery.storedBytes.value * (retentionDays / DAYS_PER_MONTH) / GB;
    return leads * load.durableMonths * Number(assumed.lead.durableBytes[name] ?? 0) / GB;
  };
  const sized = tables.map(([id, table]) => ({ id, table, name: named(id, tableNames, 'Table') })).filter((t) => t.name);
  const storageGb = sized.reduce((s, t) => s + gbOf(t.name!), 0);
  add('DynamoDB', `storage: ${describeSizes(sized.map((t) => [t.name!, gbOf(t.name!)]))}`, { fixed: storageGb * prices.dynamodb.storageGbMonth });
  const recoverable = sized.filter((t) => (t.table.Properties?.PointInTimeRecoverySpecification as { PointInTimeRecoveryEnabled?: boolean } | undefined)?.PointInTimeRecoveryEnabled);
  add('DynamoDB', `point-in-time recovery (${recoverable.length === sized.length ? 'every table' : recoverable.map((t) => t.name).join(', ')})`, {
    fixed: recoverable.reduce((s, t) => s + gbOf(t.name!), 0) * prices.dynamodb.pointInTimeRecoveryGbMonth,
  });

  const selectedIds = new Set(ofType(template, 'AWS::Backup::BackupSelection').flatMap(([, s]) =>
    ((s.Properties?.BackupSelection as { Resources?: unknown[] } | undefined)?.Resources ?? []).map(refOf)));
  const backedUp = sized.filter((t) => selectedIds.has(t.id));
  const backedUpGb = backedUp.reduce((s, t) => s + gbOf(t.name!), 0);
  type Lifecycle = { DeleteAfterDays?: number; MoveToColdStorageAfterDays?: number };
  /** The points a lifecycle holds at any time, warm and cold (moved after MoveToColdStorageAfterDays). */
  const held = (taken: number, lifecycle: Lifecycle | undefined) => {
    const keptDays = Number(lifecycle?.DeleteAfterDays ?? 36500);
    const warmDays = Math.min(keptDays, Number(lifecycle?.MoveToColdStorageAfterDays ?? keptDays));
    const all = Math.max(1, Math.round(taken * keptDays / DAYS_PER_MONTH));
    const cold = warmDays < keptDays ? all - Math.min(all, Math.round(taken * warmDays / DAYS_PER_MONTH)) : 0;
    return { all, warm: all - cold, cold, usd: ((all - cold) * prices.backup.dynamodbWarmGbMonth + cold * prices.backup.dynamodbColdGbMonth) * backedUpGb };
  };
  const split = (h: { warm: number; cold: number }) => (h.cold > 0 ? ` (${h.warm} warm, ${h.cold} cold)` : '');
  for (const [, plan] of ofType(template, 'AWS::Backup::BackupPlan')) {
    const rules = ((plan.Properties?.BackupPlan as { BackupPlanRule?: Record<string, unknown>[] })?.BackupPlanRule ?? []);
    for (const rule of rules) {
      const taken = pointsPerMonth(String(rule.ScheduleExpression));
      const lifecycle = rule.Lifecycle as Lifecycle | undefined;
      // Every point is a full copy of the table (DynamoDB backups are not incremental).
      const points = held(taken, lifecycle);
      add('AWS Backup', `${rule.RuleName}: ${points.all} points${split(points)} of ${backedUp.map((t) => t.name).join(', ')}`, { fixed: points.usd });
      for (const copy of (rule.CopyActions as { Lifecycle?: Lifecycle }[] | undefined) ?? []) {
        const copies = held(taken, { DeleteAfterDays: lifecycle?.DeleteAfterDays, ...copy.Lifecycle });
        add('AWS Backup', `${rule.RuleName}: ${copies.all} copies${split(copies)} in the second region, and their transfer`, {
          fixed: copies.usd + taken * backedUpGb * prices.backup.crossRegionTransferGb,
        });
      }
    }
  }

  // What costs the same whatever the load.
  const count = (type: string) => ofType(template, type).length;
  add('CloudWatch', `${count('AWS::CloudWatch::Alarm')} alarms, ${count('AWS::CloudWatch::Dashboard')} dashboard, ${assumed.customMetrics.value} custom metrics`, {
    fixed: count('AWS::CloudWatch::Alarm') * prices.cloudwatch.alarmPerMonth + count('AWS::CloudWatch::Dashboard') * prices.cloudwatch.dashboardPerMonth + assumed.customMetrics.value * prices.cloudwatch.customMetricPerMonth,
  });
  const keys = count('AWS::KMS::Key');
  const secretCount = count('AWS::SecretsManager::Secret');
  add('Secrets Manager, KMS', `${secretCount} secret${secretCount === 1 ? '' : 's'}${keys ? `, ${keys} key${keys === 1 ? '' : 's'}` : ''}`, {
    fixed: count('AWS::SecretsManager::Secret') * prices.secretsManager.secretPerMonth + keys * prices.kms.keyPerMonth,
  });

  const sum = (pick: (l: CostLine) => number | undefined) => lines.reduce((s, l) => s + (pick(l) ?? 0), 0);
  return {
    load, leads, deliveries, lines,
    total: { perMillionLeads: sum((l) => l.perMillionLeads), perMillionDeliveries: sum((l) => l.perMillionDeliveries), monthly: sum((l) => l.monthly) },
  };
}

/** The deliveries' retention: the runtime configuration's default, which the stack writes into the settings parameter. */
function settingsRetentionDays(template: Template): number {
  for (const [, parameter] of ofType(template, 'AWS::SSM::Parameter')) {
    try {
      const days = (JSON.parse(String(parameter.Properties?.Value)) as { retentionDays?: number }).retentionDays;
      if (typeof days === 'number') return days;
    } catch { /* another parameter */ }
  }
  throw new Error('No settings parameter with retentionDays in the template');
}

const describeSizes = (sizes: [string, number][]) => sizes.map(([name, gb]) => `${name} ${gb < 10 ? gb.toFixed(1) : Math.round(gb).toLocaleString('en-US')} GB`).join(', ');

const usd = (n: number | undefined) => (n === undefined ? '' : n >= 100 ? `$${Math.round(n).toLocaleString('en-US')}` : `$${n.toFixed(2)}`);

/** The report as a Markdown table, one line per cost, the totals last (what `npm run cost` prints and docs/capacity.md holds). */
export function renderReport(report: CostReport, sources: { prices: Prices; measured: Measured; stage: string; target?: number; nextMonth?: CostReport; steadyState?: CostReport }): string {
  const { load } = report;
  const out = [
    `Stage \`${sources.stage}\` at ${load.leadsPerSecond} leads/s for ${load.hoursPerDay} h × ${load.daysPerMonth} days (${(report.leads / M).toFixed(1)} M leads a month), ` +
      `${load.deliveriesPerLead} deliveries per lead (${(report.deliveries / M).toFixed(1)} M), durable tables holding ${load.durableMonths} month${load.durableMonths === 1 ? '' : 's'} of leads. ` +
      `Prices: ${sources.prices.region} list, as of ${sources.prices.asOf}; units measured ${sources.measured.delivery.measuredAt} (deliveries), ${sources.measured.lead.measuredAt} (leads).`,
    '',
    '| service | what | per million leads | per million deliveries | a month |',
    '|---|---|--:|--:|--:|',
    ...report.lines.map((l) => `| ${l.service} | ${l.what} | ${usd(l.perMillionLeads)} | ${usd(l.perMillionDeliveries)} | ${usd(l.monthly)} |`),
    `| **total** | | **${usd(report.total.perMillionLeads)}** | **${usd(report.total.perMillionDeliveries)}** | **${usd(report.total.monthly)}** |`,
  ];
  if (sources.target !== undefined) {
    const top = [...report.lines].sort((a, b) => b.monthly - a.monthly).slice(0, 3).map((l) => `${l.service} ${l.what.replace(/ \(.*$/, '')} ${usd(l.monthly)}`);
    out.push('', `Target ≤ ${usd(sources.target)} a month: ${report.total.monthly <= sources.target ? 'met' : 'NOT met'}. Largest lines: ${top.join('; ')}.`);
  }
  if (sources.nextMonth) {
    out.push('', `Each further month of leads the durable tables hold adds ${usd(sources.nextMonth.total.monthly - report.total.monthly)} a month (their storage, point-in-time recovery and backups).`);
  }
  if (sources.steadyState) {
    // What grew with the durable tables, largest first.
    const { load: later, total } = sources.steadyState;
    const grown = sources.steadyState.lines.map((l, i) => ({ l, by: l.monthly - (report.lines[i]?.monthly ?? 0) })).filter((g) => g.by > 0.5).sort((a, b) => b.l.monthly - a.l.monthly);
    const verdict = sources.target === undefined ? '' : total.monthly <= sources.target ? ', within the target' : `, above the ${usd(sources.target)} target`;
    out.push('', `With the durable tables holding ${later.durableMonths} months of leads (\`--durable-months ${later.durableMonths}\`): ${usd(total.monthly)} a month${verdict}. ` +
      `The lines that grew: ${grown.map((g) => `${g.l.service} ${g.l.what.replace(/ \(.*$/, '')} ${usd(g.l.monthly)}`).join('; ')}.`);
  }
  return out.join('\n') + '\n';
}
