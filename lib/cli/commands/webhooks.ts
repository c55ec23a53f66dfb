import { readFileSync } from 'node:fs';
import type { Command } from 'commander';
import { addEndpoint, listEndpoints, removeEndpoint, rotateSecret, updateEndpoint, type EndpointSummary } from '../../../functions/core/delivery/endpoints.js';
import { sendTestEvent } from '../../../functions/core/events/test-event.js';
import { CliError, printResult, printTable, safeText } from '../output.js';
import { act } from '../run.js';
import { waitForFirstOutcome } from '../../../functions/core/delivery/first-outcome.js';

/** An endpoint's circuit in a table cell: `closed` (or `closed (slow lane)`: failing or slow, attempted apart), `open until …` (deliveries re-scheduled, not attempted) or `half-open (probing)`. */
export const circuitText = (c: EndpointSummary['circuit'] | undefined): string => {
  if (!c || c.state === 'closed') return c?.slowLane ? 'closed (slow lane)' : 'closed';
  return c.state === 'open' ? `open until ${c.until}` : 'half-open (probing)';
};
const shownOnce = (secret: string) => {
  console.log(`\n  ${secret}\n`);
  console.log('Copy the signing secret now: it will not be shown again. Receivers verify with it (docs/webhooks.md).');
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

const hours = (value: string | undefined) => {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (!Number.isFinite(n) || n < 0) throw new CliError(`--grace must be zero or more hours, got "${value}"`, 2);
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
    .action(act<{ org: string; url: string; events: string; description?: string } & OptionFlags>(async ({ target, options, json }) => {
      const { endpoint, secret } = await addEndpoint(target.deps, options.org, { url: options.url, events: options.events, description: options.description, ...optionsOf(options) });
      printResult({ json }, { ...endpoint, secret }, () => {
        console.log(safeText(`Added endpoint ${endpoint.id} → ${endpoint.url} (${endpoint.events.join(', ')})`));
        shownOnce(secret);
      });
    }));
  webhooks
    .command('list')
    .description('list endpoints (never their secrets)')
    .requiredOption('--org <id>', 'organization id')
    .action(act<{ org: string }>(async ({ target, options, json }) => {
      const list = await listEndpoints(target.deps, options.org);
      printResult({ json }, list, () => printTable(list.map((e) => ({ ...e, events: e.events.join(','), circuit: circuitText(e.circuit), headers: headersText(e.headers), rateLimit: e.rateLimitPerSecond ? `${e.rateLimitPerSecond}/s` : '' })),
        ['id', 'url', 'events', 'enabled', 'circuit', 'headers', 'rateLimit', 'description', 'failingSince', 'disabledReason']));
    }));
  webhooks
    .command('update')
    .description('change an endpoint’s URL, events, description, enabled flag, custom headers or rate limit')
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
    .action(act<{ org: string; endpoint: string; url?: string; events?: string; description?: string; enabled?: string; keepHeaders?: boolean } & OptionFlags>(async ({ target, options, json }) => {
      const updated = await updateEndpoint(target.deps, options.org, options.endpoint, {
        url: options.url, events: options.events, description: options.description, enabled: bool('--enabled', options.enabled), ...optionsOf(options),
        ...(options.keepHeaders ? { keepHeaders: true } : {}),
      });
      printResult({ json }, updated, () => {
        console.log(safeText(`Updated ${updated.id}: ${updated.url} (${updated.events.join(', ')}), ${updated.enabled ? 'enabled' : 'disabled'}`));
        console.log(safeText(`Custom headers: ${headersText(updated.headers) || 'none'}; rate limit: ${updated.rateLimitPerSecond ? `${updated.rateLimitPerSecond} a second` : 'none'}`));
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
    .description('issue a new signing secret; the old one keeps signing too during the grace period')
    .requiredOption('--org <id>', 'organization id')
    .requiredOption('--endpoint <id>', 'endpoint id')
    .option('--grace <hours>', 'hours the old secret keeps signing (default 24; 0 drops it now)')
    .action(act<{ org: string; endpoint: string; grace?: string }>(async ({ target, options, json }) => {
      const { endpoint, secret } = await rotateSecret(target.deps, options.org, options.endpoint, { graceHours: hours(options.grace) });
      printResult({ json }, { ...endpoint, secret }, () => {
        console.log(`New signing secret for ${endpoint.id} (${endpoint.secretCount} signing now):`);
        shownOnce(secret);
      });
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
}
