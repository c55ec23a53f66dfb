import { readFileSync, writeFileSync } from 'node:fs';
import type { Command } from 'commander';
import { addEndpoint, listEndpoints, removeEndpoint, rotateSecret, rotateSecrets, updateEndpoint, type EndpointSummary } from '../../../functions/core/delivery/endpoints.js';
import { SIGNING_SCHEMES, type SigningScheme } from '../../../functions/core/delivery/signing.js';
import { sendTestEvent } from '../../../functions/core/events/test-event.js';
import type { CheckAnswer, RuleResult } from '../../../functions/core/events/receiver-check.js';
import { callSettingsApi } from '../settings-api.js';
import { CliError, printResult, printTable, safeText } from '../output.js';
import { act } from '../run.js';
import { waitForFirstOutcome } from '../../../functions/core/delivery/first-outcome.js';
import { endpointStatistics } from '../../../functions/core/settings/statistics.js';
import { STATS_WINDOWS, type StatsWindow } from '../../../functions/core/delivery/statistics.js';

/** An endpoint's circuit in a table cell: `closed` (or `closed (slow lane)`: failing or slow, attempted apart), `open until …` (deliveries re-scheduled, not attempted) or `half-open (probing)`. */
export const circuitText = (c: EndpointSummary['circuit'] | undefined): string => {
  if (!c || c.state === 'closed') return c?.slowLane ? 'closed (slow lane)' : 'closed';
  return c.state === 'open' ? `open until ${c.until}` : 'half-open (probing)';
};
const shownOnce = (secret: string) => {
  console.log(`\n  ${secret}\n`);
  console.log('Copy the signing secret now: it will not be shown again. Receivers verify with it (docs/webhooks.md).');
};
/** An ed25519 endpoint's keys: the public key receivers verify with (not a secret: shown at any time), and a retiring one's end. */
const publicKeys = (endpoint: EndpointSummary) => {
  if (endpoint.publicKey) console.log(`\nPublic key (receivers verify v1a signatures with it, docs/webhooks.md):\n\n  ${endpoint.publicKey}\n`);
  for (const k of endpoint.signingKeys.filter((k) => k.expiresAt)) {
    console.log(`Also signing until ${k.expiresAt}: ${k.scheme === 'ed25519' ? `ed25519 key ${k.publicKey}` : 'the previous hmac secret'}`);
  }
};
/** `--signing hmac|ed25519`. */
const scheme = (value: string | undefined): SigningScheme | undefined => {
  if (value === undefined) return undefined;
  if (!(SIGNING_SCHEMES as string[]).includes(value)) throw new CliError(`--signing must be ${SIGNING_SCHEMES.join(' or ')}, got "${value}"`, 2);
  return value as SigningScheme;
};
const bool = (flag: string, value: string | undefined) => {
  if (value === undefined) return undefined;
  if (value === 'true' || value === 'false') return value === 'true';
  throw new CliError(`${flag} must be true or false, got "${value}"`, 2);
};
/**
 * Custom header changes (the domain validates them: a 422 names the header). `--header Name` takes
 * the value from the environment (`CRM_HEADER_<NAME>`) and `--headers-file` from a file of
 * `Name: value` lines, so a value stays out of argv (the process list) and shell history;
 * `--header 'Name: value'` still works, with that exposure. `--remove-header Name` removes one.
 */
const collect = (value: string, previous: string[] = []) => [...previous, value];
/** The environment variable `--header Name` reads: CRM_HEADER_ and the name upper-cased, other characters as `_`. */
const headerEnvName = (name: string) => `CRM_HEADER_${name.toUpperCase().replace(/[^A-Z0-9]/g, '_')}`;
function headerPair(entry: string, from: string): [string, string] {
  const colon = entry.indexOf(':');
  if (colon > 0) return [entry.slice(0, colon).trim(), entry.slice(colon + 1).trim()];
  if (colon === 0) throw new CliError(`${from} must be "Name" or "Name: value", got "${entry}"`, 2);
  const value = process.env[headerEnvName(entry.trim())];
  if (value === undefined) throw new CliError(`${from} ${entry}: no value: set ${headerEnvName(entry.trim())} in the environment, or use --headers-file`, 2);
  return [entry.trim(), value.trim()];
}
function headersFile(path: string | undefined): string[] {
  if (path === undefined) return [];
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    throw new CliError(`--headers-file ${path}: ${(error as Error).message}`, 2);
  }
  const lines = text.split(/\r?\n/).map((l) => l.trim());
  // The line's number, never its text: it may be a value.
  lines.forEach((line, i) => {
    if (line && !line.startsWith('#') && line.indexOf(':') <= 0) throw new CliError(`--headers-file ${path}: line ${i + 1} is not "Name: value"`, 2);
  });
  return lines.filter((l) => l && !l.startsWith('#'));
}
function headerChanges(set: string[] = [], removed: string[] = [], file?: string): Record<string, string | null> | undefined {
  const fromFile = headersFile(file);
  if (!set.length && !removed.length && !fromFile.length) return undefined;
  const changes: Record<string, string | null> = {};
  for (const line of fromFile) {
    const [name, value] = headerPair(line, '--headers-file');
    changes[name] = value;
  }
  for (const entry of set) {
    const [name, value] = headerPair(entry, '--header');
    changes[name] = value;
  }
  for (const name of removed) changes[name] = null;
  return changes;
}
/** `--rate-limit <n>` deliveries a second, or `none`. */
function rateLimit(value: string | undefined): number | null | undefined {
  if (value === undefined) return undefined;
  if (value === 'none') return null;
  if (!/^\d+$/.test(value)) throw new CliError(`--rate-limit must be a whole number of deliveries a second, or none; got "${value}"`, 2);
  return Number(value);
}
const optionsOf = (o: OptionFlags) => {
  const headers = headerChanges(o.header, o.removeHeader, o.headersFile);
  const rate = rateLimit(o.rateLimit);
  return { ...(headers ? { headers } : {}), ...(rate !== undefined ? { rateLimitPerSecond: rate } : {}) };
};
/** Custom headers as listed: names and masked values. */
const headersText = (headers: Record<string, string>) => Object.entries(headers).map(([n, v]) => `${n}: ${v}`).join(', ');
type OptionFlags = { header?: string[]; removeHeader?: string[]; headersFile?: string; rateLimit?: string };
const HEADER_HELP = 'a custom header sent with every delivery (repeatable): Name takes its value from $CRM_HEADER_<NAME>; "Name: value" also works, but the value then shows in the process list and shell history';
const HEADERS_FILE_HELP = 'custom headers from a file of "Name: value" lines (# comments): values kept out of argv';

const hours = (value: string | undefined, flag = '--grace') => {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (!Number.isFinite(n) || n < 0) throw new CliError(`${flag} must be zero or more hours, got "${value}"`, 2);
  return n;
};

export function register(program: Command): void {
  const webhooks = program.command('webhooks').description('webhook endpoints of an organization');
  webhooks
    .command('add')
    .description('register an endpoint (prints its signing secret once)')
    .requiredOption('--org <id>', 'organization id')
    .requiredOption('--url <url>', 'https URL the events are POSTed to')
    .option('--events <list>', 'all, or event names separated by commas (client.created or client_created)', 'all')
    .option('--description <text>', 'what this endpoint is for')
    .option('--header <name>', HEADER_HELP, collect)
    .option('--headers-file <path>', HEADERS_FILE_HELP)
    .option('--rate-limit <n>', 'at most n deliveries a second (default: no limit)')
    .option('--signing <scheme>', 'hmac (default: a whsec_ secret, shown once) or ed25519 (v1a signatures: prints the public key receivers verify with)')
    .action(act<{ org: string; url: string; events: string; description?: string; signing?: string } & OptionFlags>(async ({ target, options, json }) => {
      const signing = scheme(options.signing);
      const { endpoint, secret } = await addEndpoint(target.deps, options.org, { url: options.url, events: options.events, description: options.description, ...(signing ? { signing } : {}), ...optionsOf(options) });
      printResult({ json }, { ...endpoint, ...(secret ? { secret } : {}) }, () => {
        console.log(safeText(`Added endpoint ${endpoint.id} → ${endpoint.url} (${endpoint.events.join(', ')}), signing ${endpoint.signing}`));
        if (secret) shownOnce(secret);
        publicKeys(endpoint);
      });
    }));
  webhooks
    .command('list')
    .description('list endpoints (never their secrets)')
    .requiredOption('--org <id>', 'organization id')
    .action(act<{ org: string }>(async ({ target, options, json }) => {
      const list = await listEndpoints(target.deps, options.org);
      printResult({ json }, list, () => printTable(list.map((e) => ({ ...e, events: e.events.join(','), circuit: circuitText(e.circuit), headers: headersText(e.headers), rateLimit: e.rateLimitPerSecond ? `${e.rateLimitPerSecond}/s` : '' })),
        ['id', 'url', 'events', 'enabled', 'signing', 'circuit', 'headers', 'rateLimit', 'description', 'failingSince', 'disabledReason']));
    }));
  webhooks
    .command('update')
    .description('change an endpoint’s URL, events, description, enabled flag, custom headers, rate limit or signing scheme')
    .requiredOption('--org <id>', 'organization id')
    .requiredOption('--endpoint <id>', 'endpoint id')
    .option('--url <url>', 'new URL')
    .option('--events <list>', 'all, or event names separated by commas')
    .option('--description <text>', 'new description')
    .option('--enabled <bool>', 'true or false (true also clears a health-based disable)')
    .option('--header <name>', `${HEADER_HELP}; the others stay`, collect)
    .option('--headers-file <path>', HEADERS_FILE_HELP)
    .option('--remove-header <name>', 'remove a custom header (repeatable)', collect)
    .option('--rate-limit <n>', 'at most n deliveries a second, or none')
    .option('--keep-headers', 'with --url on the same origin: keep the stored custom headers (else set each again or remove it)')
    .option('--signing <scheme>', 'switch to hmac or ed25519: the new key signs at once, the old scheme too for --grace hours')
    .option('--grace <hours>', 'with --signing: hours the old scheme keeps signing (default 24; 0 stops it now)')
    .action(act<{ org: string; endpoint: string; url?: string; events?: string; description?: string; enabled?: string; keepHeaders?: boolean; signing?: string; grace?: string } & OptionFlags>(async ({ target, options, json }) => {
      const signing = scheme(options.signing);
      if (options.grace !== undefined && !signing) throw new CliError('--grace goes with --signing (for a new secret of the same scheme: crm webhooks rotate-secret --grace)', 2);
      const { secret, ...updated } = await updateEndpoint(target.deps, options.org, options.endpoint, {
        url: options.url, events: options.events, description: options.description, enabled: bool('--enabled', options.enabled), ...optionsOf(options),
        ...(options.keepHeaders ? { keepHeaders: true } : {}),
        ...(signing ? { signing, graceHours: hours(options.grace) } : {}),
      });
      printResult({ json }, { ...updated, ...(secret ? { secret } : {}) }, () => {
        console.log(safeText(`Updated ${updated.id}: ${updated.url} (${updated.events.join(', ')}), ${updated.enabled ? 'enabled' : 'disabled'}, signing ${updated.signing}`));
        console.log(safeText(`Custom headers: ${headersText(updated.headers) || 'none'}; rate limit: ${updated.rateLimitPerSecond ? `${updated.rateLimitPerSecond} a second` : 'none'}`));
        if (secret) shownOnce(secret);
        if (signing) publicKeys(updated);
      });
    }));
  webhooks
    .command('remove')
    .description('remove an endpoint')
    .requiredOption('--org <id>', 'organization id')
    .requiredOption('--endpoint <id>', 'endpoint id')
    .action(act<{ org: string; endpoint: string }>(async ({ target, options, json }) => {
      const removed = await removeEndpoint(target.deps, options.org, options.endpoint);
      printResult({ json }, removed, () => console.log(safeText(`Removed ${removed.id} (${removed.url}).`)));
    }));
  webhooks
    .command('rotate-secret')
    .description('issue a new signing secret (hmac) or key (ed25519); the old one keeps signing too during the grace period')
    .requiredOption('--org <id>', 'organization id')
    .requiredOption('--endpoint <id>', 'endpoint id')
    .option('--grace <hours>', 'hours the old secret keeps signing (default 24; 0 drops it now)')
    .action(act<{ org: string; endpoint: string; grace?: string }>(async ({ target, options, json }) => {
      const { endpoint, secret } = await rotateSecret(target.deps, options.org, options.endpoint, { graceHours: hours(options.grace) });
      printResult({ json }, { ...endpoint, ...(secret ? { secret } : {}) }, () => {
        console.log(`New signing ${secret ? 'secret' : 'key'} for ${endpoint.id} (${endpoint.signingKeys.length} signing now):`);
        if (secret) shownOnce(secret);
        publicKeys(endpoint);
      });
    }));
  webhooks
    .command('rotate-secrets')
    .description('after a leak: a new signing secret for every endpoint of an organization (--org) or of all of them (--all); the old ones keep signing during the grace (docs/operations.md)')
    .option('--org <id>', 'this organization\'s endpoints')
    .option('--all', 'every organization\'s endpoints')
    .option('--grace-hours <n>', 'hours the old secrets keep signing (default 24; 0 drops them now: receivers fail until they have the new one)')
    .option('--dry-run', 'list the endpoints it would rotate; write nothing')
    .option('--out <file>', 'write the new secrets there (JSON lines, created with mode 600; an existing file is refused) instead of printing them')
    .action(act<{ org?: string; all?: boolean; graceHours?: string; dryRun?: boolean; out?: string }>(async ({ target, options, json }) => {
      if (Boolean(options.org) === Boolean(options.all)) throw new CliError('Say whose secrets to rotate: --org <id> or --all.', 2);
      const graceHours = hours(options.graceHours, '--grace-hours');
      const outcomes = await rotateSecrets(target.deps, options.all ? 'all' : [options.org!], {
        graceHours, dryRun: options.dryRun,
        onEach: (o, done, total) => process.stderr.write(`[${done}/${total}] ${o.organizationId} ${o.endpointId} ${options.dryRun ? 'would rotate' : o.error ? `NOT rotated: ${safeText(o.error)}` : 'rotated'}\n`),
      });
      const failed = outcomes.filter((o) => o.error).length;
      if (options.out && !options.dryRun) {
        const lines = outcomes.filter((o) => o.secret).map((o) => JSON.stringify({ organizationId: o.organizationId, endpointId: o.endpointId, url: o.url, secret: o.secret }));
        writeFileSync(options.out, lines.map((l) => `${l}\n`).join(''), { mode: 0o600, flag: 'wx' });
      }
      const shown = options.out ? outcomes.map(({ secret: _secret, ...rest }) => rest) : outcomes;
      const summary = { dryRun: Boolean(options.dryRun), endpoints: outcomes.length, rotated: outcomes.filter((o) => o.secret).length, failed, outcomes: shown };
      printResult({ json }, summary, () => {
        printTable(shown.map((o) => ({ ...o, status: options.dryRun ? 'would rotate' : o.error ? `not rotated: ${o.error}` : 'rotated' })), ['organizationId', 'endpointId', 'url', 'status', ...(options.out ? [] : ['secret'])]);
        console.log(options.dryRun ? `${outcomes.length} endpoints would be rotated.` : `${summary.rotated} of ${outcomes.length} endpoints rotated${failed ? `, ${failed} not (run again for them once fixed)` : ''}; the old secrets sign for ${graceHours ?? 24} h more.${options.out ? ` New secrets in ${options.out}.` : ' Copy the new secrets now: they will not be shown again.'}`);
      });
      if (failed) process.exitCode = 1;
    }));
  webhooks
    .command('test')
    .description('send a webhook.test event and print the outcome of the first attempt')
    .requiredOption('--org <id>', 'organization id')
    .option('--endpoint <id>', 'only this endpoint (default: all of the organization’s)')
    .action(act<{ org: string; endpoint?: string }>(async ({ target, options, json }) => {
      const { eventId, deliveryIds } = await sendTestEvent(target.deps, options.org, options.endpoint);
      if (deliveryIds.length === 0) throw new CliError(`Organization ${options.org} has no webhook endpoints: add one with \`crm webhooks add\`.`);
      if (!json) console.log(`Sent ${eventId}; waiting for the first attempt…`);
      const outcomes = await Promise.all(deliveryIds.map((id) => waitForFirstOutcome(target.deps, options.org, { deliveryId: id, eventId })));
      const rows = outcomes.map((d, i) => {
        const attempt = (d?.attempts as { statusCode?: number; latencyMs?: number; error?: string }[] | undefined)?.[0];
        return { deliveryId: deliveryIds[i], endpointId: d?.endpointId, status: d?.status ?? 'unknown', httpStatus: attempt?.statusCode, latencyMs: attempt?.latencyMs, error: attempt?.error ?? d?.reason };
      });
      printResult({ json }, { eventId, deliveries: rows }, () => printTable(rows, ['endpointId', 'status', 'httpStatus', 'latencyMs', 'error', 'deliveryId']));
      if (rows.some((r) => r.status !== 'delivered')) process.exitCode = 1;
    }));
  webhooks
    .command('check')
    .description('check that the endpoint\'s receiver verifies: correctly signed, forged, altered, unsigned, stale, future-dated, replayed and retired-secret test events, sent by the stack\'s settings API (docs/webhooks.md#checking-a-receiver); exit code 1 on fail')
    .argument('<id>', 'endpoint id')
    .requiredOption('--org <id>', 'organization id')
    .action(act<{ org: string }>(async ({ target, options, json, args: [endpointId] }) => {
      if (!json) console.log(safeText(`Checking the receiver of ${endpointId} from ${target.describe} (up to ~15 s)…`));
      // Run by the stage's settings function, where deliveries are sent from: never from this machine.
      const answer = await callSettingsApi<CheckAnswer>(target, options.org, 'POST', `/api/settings/webhooks/${encodeURIComponent(endpointId)}/check`);
      printResult({ json }, answer, () => {
        console.log('');
        printTable(answer.rules.map((r) => ({ ...r, status: r.status === null && r.ok ? '-' : answerText(r), result: ruleMark(r) })), ['rule', 'expected', 'status', 'result']);
        const advice = answer.rules.filter((r) => r.advice);
        if (advice.length) console.log('');
        for (const r of advice) console.log(safeText(`${r.rule}: ${r.advice}`));
        console.log(`\nVerdict: ${answer.verdict.toUpperCase()} (checked at ${answer.checked_at})`);
      });
      if (answer.verdict === 'fail') process.exitCode = 1;
    }));
  webhooks
    .command('stats')
    .description('an endpoint’s deliveries over the last 24 hours (hourly) or 7 days (daily): delivered, failed, retrying, latency')
    .argument('<endpoint>', 'endpoint id')
    .requiredOption('--org <id>', 'organization id')
    .option('--window <window>', '24h or 7d', '24h')
    .action(act<{ org: string; window: string }>(async ({ target, options, json, args }) => {
      if (!(options.window in STATS_WINDOWS)) throw new CliError(`--window must be 24h or 7d, got "${options.window}"`, 2);
      const stats = await endpointStatistics(target.deps, options.org, args[0], options.window as StatsWindow);
      printResult({ json }, stats, () => {
        const { delivered, failed, retrying, success_rate: rate } = stats.totals;
        console.log(`Last ${stats.window}: ${delivered} delivered, ${failed} failed, ${retrying} retrying; success rate ${rate === null ? '–' : `${(rate * 100).toFixed(1)}%`}`);
        printTable(stats.buckets.map((b) => ({ ...b, p50_ms: b.p50_ms ?? '', p95_ms: b.p95_ms ?? '' })), ['start', 'delivered', 'failed', 'retrying', 'p50_ms', 'p95_ms']);
      });
    }));
}

/** The receiver's answer to a rule's request: its status, or `no answer`. */
const answerText = (rule: RuleResult): string => (rule.status === null ? 'no answer' : String(rule.status));

/** A rule's outcome in a word: ok, FAIL, advice (met, with a note), or not checked. */
function ruleMark(rule: RuleResult): string {
  if (rule.status === null && rule.ok) return 'not checked';
  if (!rule.ok) return 'FAIL';
  return rule.advice ? 'ok (advice)' : 'ok';
}
