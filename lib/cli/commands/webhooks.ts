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
/** `--header 'Name: value'` (repeatable) sets one, `--remove-header Name` removes one; the domain validates both (a 422 names the header). */
const collect = (value: string, previous: string[] = []) => [...previous, value];
function headerChanges(set: string[] = [], removed: string[] = []): Record<string, string | null> | undefined {
  if (!set.length && !removed.length) return undefined;
  const changes: Record<string, string | null> = {};
  for (const pair of set) {
    const colon = pair.indexOf(':');
    if (colon <= 0) throw new CliError(`--header must be "Name: value", got "${pair}"`, 2);
    changes[pair.slice(0, colon).trim()] = pair.slice(colon + 1).trim();
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
const optionsOf = (o: { header?: string[]; removeHeader?: string[]; rateLimit?: string }) => {
  const headers = headerChanges(o.header, o.removeHeader);
  const rate = rateLimit(o.rateLimit);
  return { ...(headers ? { headers } : {}), ...(rate !== undefined ? { rateLimitPerSecond: rate } : {}) };
};
/** Custom headers as listed: names and masked values. */
const headersText = (headers: Record<string, string>) => Object.entries(headers).map(([n, v]) => `${n}: ${v}`).join(', ');
type OptionFlags = { header?: string[]; removeHeader?: string[]; rateLimit?: string };

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
    .option('--header <name: value>', 'a custom header sent with every delivery (repeatable)', collect)
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
    .option('--header <name: value>', 'set a custom header sent with every delivery (repeatable; the others stay)', collect)
    .option('--remove-header <name>', 'remove a custom header (repeatable)', collect)
    .option('--rate-limit <n>', 'at most n deliveries a second, or none')
    .action(act<{ org: string; endpoint: string; url?: string; events?: string; description?: string; enabled?: string } & OptionFlags>(async ({ target, options, json }) => {
      const updated = await updateEndpoint(target.deps, options.org, options.endpoint, {
        url: options.url, events: options.events, description: options.description, enabled: bool('--enabled', options.enabled), ...optionsOf(options),
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
      const outcomes = await Promise.all(deliveryIds.map((id) => waitForFirstOutcome(target.deps, id)));
      const rows = outcomes.map((d, i) => {
        const attempt = (d?.attempts as { statusCode?: number; latencyMs?: number; error?: string }[] | undefined)?.[0];
        return { deliveryId: deliveryIds[i], endpointId: d?.endpointId, status: d?.status ?? 'unknown', httpStatus: attempt?.statusCode, latencyMs: attempt?.latencyMs, error: attempt?.error ?? d?.reason };
      });
      printResult({ json }, { eventId, deliveries: rows }, () => printTable(rows, ['endpointId', 'status', 'httpStatus', 'latencyMs', 'error', 'deliveryId']));
      if (rows.some((r) => r.status !== 'delivered')) process.exitCode = 1;
    }));
}
