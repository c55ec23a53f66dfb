/**
 * The cost computation on a small template and a round price table: each line's formula shows in
 * its figure, so a change of formula (or a template setting the report should follow) fails here.
 */
import { describe, it, expect } from '@jest/globals';
import { estimateCost, pointsPerMonth, renderReport, tiered, type Assumptions, type Measured, type Prices, type Template } from '../../../scripts/cost-model.js';

const prices: Prices = {
  region: 'test-1', asOf: '2026-01-01',
  apiGateway: { restRequestsPerMillion: [{ upToMillions: 1, usd: 4 }, { usd: 2 }] },
  waf: { webAclPerMonth: 5, rulePerMonth: 1, requestsPerMillion: 1 },
  lambda: { requestsPerMillion: 0.2, gbSecond: { arm64: 0.00001, x86_64: 0.00002 } },
  dynamodb: { writeRequestUnitsPerMillion: 1, readRequestUnitsPerMillion: 0.1, storageGbMonth: 0.25, pointInTimeRecoveryGbMonth: 0.2 },
  backup: { dynamodbWarmGbMonth: 0.1, dynamodbColdGbMonth: 0.03, crossRegionTransferGb: 0.02 },
  sqs: { requestsPerMillion: 0.4 },
  cloudwatch: { logsIngestGb: 0.5, logsStorageGbMonth: 0.03, alarmPerMonth: 0.1, dashboardPerMonth: 3, customMetricPerMonth: 0.3 },
  xray: { tracesRecordedPerMillion: 5 },
  secretsManager: { secretPerMonth: 0.4 },
  kms: { keyPerMonth: 1 },
};
const measured: Measured = { delivery: { writeUnits: { value: 3 }, sqsRequests: { value: 0.5 }, measuredAt: '2026-01-02' }, lead: { writeUnits: { value: 4 }, measuredAt: '2026-01-03' } };
const GiB = 1024 ** 3;
const assumed: Assumptions = {
  functions: {
    intake: { per: 'lead', invocations: 1, ms: 100, logBytes: GiB / 1e6 }, // 1 GiB of logs a million leads
    deliver: { per: 'delivery', invocations: 0.1, ms: 1000, logBytes: 0 },
  },
  lead: { apiRequests: 1, readUnits: { value: 2 }, apiAccessLogBytes: { value: 0 }, durableBytes: { clients: GiB / 1e6 } },
  delivery: { readUnits: { value: 10 }, storedBytes: { value: GiB / 1e6, table: 'deliveries' } },
  tables: { organizations: 3 },
  xray: { reservoirPerSecond: 0, fixedRate: 0.1 },
  // 100 endpoints × 2 batches a minute over 1e6/60 active minutes: 3.3 M writes, capped at 0.5 a delivery (1 M).
  statistics: { activeEndpoints: { value: 100 }, batchesPerEndpointMinute: { value: 2 }, recordsPerDelivery: { value: 0.5 }, leadCounterWriteUnits: { value: 1 } },
  customMetrics: { value: 10 },
};
const template: Template = { Resources: {
  Api: { Type: 'AWS::ApiGateway::RestApi' },
  Acl: { Type: 'AWS::WAFv2::WebACL', Properties: { Rules: [{}, {}] } },
  intakeFunction1: { Type: 'AWS::Lambda::Function', Properties: { MemorySize: 1024, Architectures: ['arm64'], TracingConfig: { Mode: 'Active' } } },
  deliverFunction1: { Type: 'AWS::Lambda::Function', Properties: { MemorySize: 2048 } }, // x86_64 when unsaid, not traced
  CustomResourceHandler: { Type: 'AWS::Lambda::Function', Properties: { MemorySize: 128 } },
  intakeFunctionLogs1: { Type: 'AWS::Logs::LogGroup', Properties: { RetentionInDays: 61 } },
  clientsTable1: { Type: 'AWS::DynamoDB::Table', Properties: { PointInTimeRecoverySpecification: { PointInTimeRecoveryEnabled: true } } },
  deliveriesTable1: { Type: 'AWS::DynamoDB::Table', Properties: {} },
  organizationsTable1: { Type: 'AWS::DynamoDB::Table', Properties: { PointInTimeRecoverySpecification: { PointInTimeRecoveryEnabled: true } } },
  Settings: { Type: 'AWS::SSM::Parameter', Properties: { Value: JSON.stringify({ retentionDays: 365.25 / 12 * 2 }) } },
  Plan: { Type: 'AWS::Backup::BackupPlan', Properties: { BackupPlan: { BackupPlanRule: [
    { RuleName: 'Monthly', ScheduleExpression: 'cron(0 3 1 * ? *)', Lifecycle: { DeleteAfterDays: 365 }, CopyActions: [{ Lifecycle: { DeleteAfterDays: 365.25 / 2 } }] },
  ] } } },
  Selection: { Type: 'AWS::Backup::BackupSelection', Properties: { BackupSelection: { Resources: [{ 'Fn::GetAtt': ['clientsTable1', 'Arn'] }, { 'Fn::GetAtt': ['organizationsTable1', 'Arn'] }] } } },
  Alarm1: { Type: 'AWS::CloudWatch::Alarm' },
  Alarm2: { Type: 'AWS::CloudWatch::Alarm' },
  Secret: { Type: 'AWS::SecretsManager::Secret' },
} };
// 1 lead/s for 1,000,000 s: a million leads, two million deliveries, the durable table holding 1 month of them.
const load = { leadsPerSecond: 1, hoursPerDay: 1e6 / 3600, daysPerMonth: 1, deliveriesPerLead: 2, durableMonths: 1 };
/** The functions the fixture's "topology" has (the real one's names are lib/topology.ts's). */
const project = ['intake', 'deliver'];
const line = (report: ReturnType<typeof estimateCost>, service: string, what: RegExp) => {
  const found = report.lines.filter((l) => l.service === service && what.test(l.what));
  expect(found).toHaveLength(1);
  return found[0];
};

describe('the cost report', () => {
  const report = estimateCost(template, prices, measured, assumed, load, project);

  it('counts leads and deliveries from the load', () => {
    expect(report.leads).toBeCloseTo(1e6);
    expect(report.deliveries).toBeCloseTo(2e6);
  });

  it('prices each request line per lead or per delivery, and the month from them', () => {
    expect(line(report, 'API Gateway', /REST/)).toMatchObject({ perMillionLeads: expect.closeTo(4, 6), monthly: expect.closeTo(4, 6) });
    expect(line(report, 'WAF', /requests/)).toMatchObject({ perMillionLeads: expect.closeTo(1, 6) });
    expect(line(report, 'WAF', /web ACL/).monthly).toBeCloseTo(5 + 2 * 1);
    // Measured write units: 4 a lead, 3 a delivery, at $1 a million.
    expect(line(report, 'DynamoDB', /writes/)).toMatchObject({ perMillionLeads: expect.closeTo(4, 6), perMillionDeliveries: expect.closeTo(3, 6), monthly: expect.closeTo(4 + 6, 6) });
    expect(line(report, 'DynamoDB', /reads/)).toMatchObject({ perMillionLeads: expect.closeTo(0.2, 6), perMillionDeliveries: expect.closeTo(1, 6) });
    expect(line(report, 'SQS', /requests/).perMillionDeliveries).toBeCloseTo(0.2);
    // The statistics' counters: 1 WRU a lead (the fan-out's), and per endpoint-batch, at most one per stream record.
    expect(line(report, 'DynamoDB', /^statistics/)).toMatchObject({ perMillionLeads: expect.closeTo(1, 6), perMillionDeliveries: expect.closeTo(0.5, 6) });
    const sparse = estimateCost(template, prices, measured, { ...assumed, statistics: { ...assumed.statistics, activeEndpoints: { value: 6 } } }, load, project);
    // 6 endpoints × 2 × 1e6/60 minutes = 200,000 writes over 2 M deliveries.
    expect(line(sparse, 'DynamoDB', /^statistics/).perMillionDeliveries).toBeCloseTo(0.1);
  });

  it('refuses a project function it has no figures for, and skips the CDK\'s helpers', () => {
    const withMailer: Template = { Resources: { ...template.Resources, mailerFunction1: { Type: 'AWS::Lambda::Function', Properties: { MemorySize: 256 } } } };
    expect(() => estimateCost(withMailer, prices, measured, assumed, load, [...project, 'mailer'])).toThrow(/No cost figures for the function mailer/);
    // Its log group alone is refused too.
    const withLogs: Template = { Resources: { ...template.Resources, mailerFunctionLogs1: { Type: 'AWS::Logs::LogGroup', Properties: { RetentionInDays: 30 } } } };
    expect(() => estimateCost(withLogs, prices, measured, assumed, load, [...project, 'mailer'])).toThrow(/mailer/);
    // By default the names are the topology's: this fixture's are not, so its functions are helpers, priced at nothing.
    expect(estimateCost(template, prices, measured, assumed, load).lines.filter((l) => l.service === 'Lambda')).toEqual([]);
  });

  it('prices Lambda at the template\'s memory and architecture (x86_64 when unsaid), and skips functions that are not the project\'s', () => {
    // 1 GB × 0.1 s × arm64 $0.00001 + $0.2 a million requests.
    expect(line(report, 'Lambda', /^intake \(1024 MB arm64/).perMillionLeads).toBeCloseTo(1e6 * (0.1 * 0.00001) + 0.2);
    // 0.1 invocation × (2 GB × 1 s × x86_64 $0.00002 + $0.2 a million).
    expect(line(report, 'Lambda', /^deliver \(2048 MB x86_64/).perMillionDeliveries).toBeCloseTo(0.1 * (1e6 * 2 * 0.00002 + 0.2));
    expect(report.lines.filter((l) => l.service === 'Lambda')).toHaveLength(2);
  });

  it('keeps logs the retention their group has in the template', () => {
    expect(line(report, 'CloudWatch Logs', /ingested/).perMillionLeads).toBeCloseTo(0.5);
    // 1 GiB a month kept 61 days: 2 months' worth stored at $0.03.
    expect(line(report, 'CloudWatch Logs', /stored \(kept 61 days/).monthly).toBeCloseTo(0.03 * 61 / (365.25 / 12));
  });

  it('samples traces of traced functions only', () => {
    expect(line(report, 'X-Ray', /traces/)).toMatchObject({ perMillionLeads: expect.closeTo(0.1 * 5, 6), perMillionDeliveries: expect.closeTo(0, 6) });
  });

  it('stores each table as long as it keeps its items, recovers the tables with point-in-time recovery, backs up only the selected ones', () => {
    // clients 1 GiB (a month of leads), deliveries 2 GiB kept 2 months = 4 GiB, organizations 3 GiB.
    expect(line(report, 'DynamoDB', /storage/).monthly).toBeCloseTo(0.25 * (1 + 4 + 3));
    expect(line(report, 'DynamoDB', /point-in-time recovery \(clients, organizations\)/).monthly).toBeCloseTo(0.2 * (1 + 3));
    // Monthly points kept 365 days: 12 full copies of clients and organizations (4 GiB).
    expect(line(report, 'AWS Backup', /^Monthly: 12 points of clients, organizations$/).monthly).toBeCloseTo(12 * 4 * 0.1);
    // Their copies kept half a year: 6, and one point's transfer a month.
    expect(line(report, 'AWS Backup', /^Monthly: 6 copies/).monthly).toBeCloseTo(6 * 4 * 0.1 + 4 * 0.02);
  });

  it('prices the points moved to cold storage at the cold rate, the copies by their own lifecycle', () => {
    const plan = template.Resources.Plan.Properties!.BackupPlan as { BackupPlanRule: Record<string, unknown>[] };
    const cold: Template = { Resources: { ...template.Resources, Plan: { Type: 'AWS::Backup::BackupPlan', Properties: { BackupPlan: { BackupPlanRule: [{
      ...plan.BackupPlanRule[0], Lifecycle: { DeleteAfterDays: 365, MoveToColdStorageAfterDays: 30 },
      CopyActions: [{ Lifecycle: { DeleteAfterDays: 365, MoveToColdStorageAfterDays: 100 } }],
    }] } } } } };
    const coldReport = estimateCost(cold, prices, measured, assumed, load, project);
    // 12 points of 4 GiB: the newest warm, 11 cold.
    expect(line(coldReport, 'AWS Backup', /^Monthly: 12 points \(1 warm, 11 cold\)/).monthly).toBeCloseTo((1 * 0.1 + 11 * 0.03) * 4);
    // Copies cold after 100 days: 3 warm, 9 cold, and a point's transfer.
    expect(line(coldReport, 'AWS Backup', /^Monthly: 12 copies \(3 warm, 9 cold\)/).monthly).toBeCloseTo((3 * 0.1 + 9 * 0.03) * 4 + 4 * 0.02);
  });

  it('adds what costs the same every month', () => {
    expect(line(report, 'CloudWatch', /2 alarms, 0 dashboard, 10 custom metrics/).monthly).toBeCloseTo(0.2 + 3);
    expect(line(report, 'Secrets Manager, KMS', /1 secret/).monthly).toBeCloseTo(0.4);
  });

  it('totals every line, and renders one row per line with the target\'s verdict', () => {
    expect(report.total.monthly).toBeCloseTo(report.lines.reduce((s, l) => s + l.monthly, 0));
    expect(report.total.perMillionDeliveries).toBeCloseTo(3 + 1 + 0.2 + 0.5 + 0.1 * (1e6 * 2 * 0.00002 + 0.2));
    const text = renderReport(report, { prices, measured, stage: 'test', target: 10 });
    expect(text.split('\n').filter((l) => l.startsWith('| ') && !l.startsWith('| service'))).toHaveLength(report.lines.length + 1);
    expect(text).toMatch(/Target ≤ \$10\.00 a month: NOT met\. Largest lines: DynamoDB writes: 4 WRU a lead, 3 a delivery \$10\.00;/);
    expect(renderReport(report, { prices, measured, stage: 'test', target: 1e6 })).toContain('a month: met.');
  });
});

describe('prices and schedules', () => {
  it('charges tiered requests tier by tier', () => {
    expect(tiered(prices.apiGateway.restRequestsPerMillion, 3e6)).toBeCloseTo(4 + 2 * 2);
  });
  it('tells daily, weekly and monthly backup rules apart', () => {
    expect(pointsPerMonth('cron(0 3 * * ? *)')).toBeCloseTo(365.25 / 12);
    expect(pointsPerMonth('cron(0 3 ? * SUN *)')).toBeCloseTo(365.25 / 12 / 7);
    expect(pointsPerMonth('cron(0 3 1 * ? *)')).toBe(1);
  });
});
