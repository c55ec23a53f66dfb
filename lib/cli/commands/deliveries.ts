import type { Command } from 'commander';
import { listDeliveries, redeliverDeadLetters, redeliverDelivery, redeliverFailed, DEAD_LETTER_HOLD_SECONDS, DEAD_LETTER_PASS_MAX, type DeadLetterPass } from '../../../functions/core/delivery/redeliver.js';
import { listEndpoints } from '../../../functions/core/delivery/endpoints.js';
import { findDelivery, findEventDeliveries } from '../../../functions/core/delivery/find-delivery.js';
import type { DeliveryRecord } from '../../../functions/core/platform/model.js';
import { requeuePendingDeliveries } from '../../local/requeue-deliveries.js';
import { CliError, printResult, printTable } from '../output.js';
import { circuitText } from './webhooks.js';
import { act, positiveInt } from '../run.js';

const isoOption = (flag: string, value: string | undefined) => {
  if (value === undefined) return undefined;
  const t = Date.parse(value);
  if (Number.isNaN(t)) throw new CliError(`${flag} must be an ISO 8601 date-time, got "${value}"`, 2);
  return new Date(t).toISOString();
};
/** What a human needs to hear about a dead-letter pass that did not cover the whole queue. */
function deadLetterNotice(r: Partial<DeadLetterPass>): string | undefined {
  if (r.complete === false) {
    return `Looked at ${r.seen} of ~${r.total} dead-letter message(s) (the --max cap): those stay hidden for ${DEAD_LETTER_HOLD_SECONDS / 60} min, so running the same command again continues with the rest.`;
  }
  if (r.heldElsewhere) return `~${r.heldElsewhere} dead-letter message(s) are hidden by an earlier capped pass (up to ${DEAD_LETTER_HOLD_SECONDS / 60} min) and were not looked at: run the command again after that.`;
  return undefined;
}
/** The sweep, in JSON, only when it left something to do (the usual answer stays short). */
const deadLetterJson = (r?: DeadLetterPass) => (r && (!r.complete || r.heldElsewhere) ? { deadLetters: r } : {});

/**
 * An organization's failed deliveries, endpoint by endpoint, except those of endpoints still failing:
 * re-sending to a receiver that is still down only spends its attempts again (docs/deploy.md).
 */
async function redeliverHealthy(deps: Parameters<typeof redeliverFailed>[0], filter: Parameters<typeof redeliverFailed>[1], maxMessages?: number) {
  const endpoints = (await listEndpoints(deps, filter.organizationId)).filter((e) => !filter.endpointId || e.id === filter.endpointId);
  const failing = (e: (typeof endpoints)[number]) => (e.circuit.state !== 'closed' ? circuitText(e.circuit) : e.failingSince ? `failing since ${e.failingSince}` : undefined);
  const skipped = endpoints.flatMap((e) => { const why = failing(e); return why ? [{ id: e.id, why }] : []; });
  let redriven = 0;
  let hollow = 0;
  for (const endpoint of endpoints.filter((e) => !failing(e))) {
    const result = await redeliverFailed(deps, { ...filter, endpointId: endpoint.id }, undefined, { maxMessages });
    redriven += result.redriven;
    hollow += result.hollow;
  }
  return { redriven, hollow, skipped };
}

const progress = (json: boolean) => (done: number, total: number) => {
  if (!json && process.stderr.isTTY) process.stderr.write(`\r  ${done} / ${total}`);
};

/** One delivery as an on-call engineer reads it: what, where, its state, then each kept attempt. */
function printDelivery(d: DeliveryRecord): void {
  const older = d.olderAttempts ? ` (${d.olderAttempts} older not kept)` : '';
  console.log(`${d.id}  ${d.status}${d.reason ? ` (${d.reason})` : ''}`);
  for (const [label, value] of [
    ['organization', d.organizationId], ['endpoint', d.endpointId], ['event', `${d.eventId} (${d.eventType}; the webhook-id)`],
    ['created', d.createdAt], ['updated', d.updatedAt], ['next attempt', d.nextAttemptAt], ['deferred', d.deferredReason], ['attempts', `${d.attempts.length}${older}`],
  ] as const) if (value) console.log(`  ${label.padEnd(13)}${value}`);
  if (d.attempts.length) printTable(d.attempts.map((a) => ({ attempt: a.attempt, at: a.at, status: a.statusCode ?? '', error: a.error ?? '', latencyMs: a.latencyMs })), ['attempt', 'at', 'status', 'error', 'latencyMs']);
}

export function register(program: Command): void {
  const deliveries = program.command('deliveries').description('webhook deliveries: inspect and redeliver');
  deliveries
    .command('list')
    .description('an organization’s deliveries, newest first')
    .requiredOption('--org <id>', 'organization id')
    .option('--status <status>', 'pending | delivered | failed | skipped')
    .option('--endpoint <id>', 'only this endpoint')
    .option('--since <iso>', 'created at or after')
    .option('--until <iso>', 'created at or before')
    .option('--limit <n>', 'at most this many', positiveInt('--limit'), 50)
    .action(act<{ org: string; status?: string; endpoint?: string; since?: string; until?: string; limit: number }>(async ({ target, options, json }) => {
      if (options.status && !['pending', 'delivered', 'failed', 'skipped'].includes(options.status)) throw new CliError(`--status must be pending, delivered, failed or skipped, got "${options.status}"`, 2);
      const list = await listDeliveries(target.deps, options.org, {
        status: options.status, endpointId: options.endpoint, since: isoOption('--since', options.since), until: isoOption('--until', options.until), limit: options.limit,
      });
      // The endpoints' circuits: a pending delivery of an open circuit is re-scheduled, not attempted, until it half-opens.
      const circuits = new Map((await listEndpoints(target.deps, options.org)).map((e) => [e.id, e.circuit]));
      printResult({ json }, list.map((d) => ({ ...d, circuit: circuits.get(d.endpointId) })), () =>
        printTable(list.map((d) => {
          const attempts = d.attempts ?? [];
          const last = attempts.at(-1);
          const circuit = circuits.get(d.endpointId);
          return { id: d.id, event: d.eventType, endpoint: d.endpointId, status: d.status, attempts: attempts.length + (d.olderAttempts ?? 0), last: last ? (last.statusCode ?? last.error) : '', circuit: circuit ? circuitText(circuit) : 'removed', reason: d.reason, created: d.createdAt };
        }), ['id', 'event', 'endpoint', 'status', 'attempts', 'last', 'circuit', 'reason', 'created']));
    }));
  deliveries
    .command('show <id>')
    .description('one delivery by its id (dlv_…), or every delivery of an event by the event id (evt_…, the webhook-id a receiver logs), with its attempts; without --org it is looked for in every organization')
    .option('--org <id>', 'organization id (optional: one read instead of one per 100 organizations)')
    .action(act<{ org?: string }>(async ({ target, options, json, args }) => {
      const [id] = args;
      if (!/^(dlv|evt)_[A-Za-z0-9_-]+$/.test(id)) throw new CliError(`Give a delivery id (dlv_…) or an event id (evt_…, the webhook-id header), got "${id}"`, 2);
      const found = id.startsWith('dlv_')
        ? [await findDelivery(target.deps, id, options.org)].flatMap((d) => (d ? [d] : []))
        : await findEventDeliveries(target.deps, id, options.org);
      if (found.length === 0) throw new CliError(`No delivery ${id.startsWith('dlv_') ? id : `of event ${id}`}${options.org ? ` in organization ${options.org}` : ''}.`, 1);
      printResult({ json }, id.startsWith('dlv_') ? found[0] : found, () => found.forEach(printDelivery));
    }));
  deliveries
    .command('requeue-pending')
    .description('after a restore (the old queue lost): queue every pending delivery that is not parked again, with the rest of its wait; parked ones are the sweeper\'s. Receivers dedupe by webhook-id, which is kept')
    .action(act<Record<string, never>>(async ({ target, json }) => {
      const queued = await requeuePendingDeliveries(target.deps);
      printResult({ json }, { queued }, () => console.log(`Queued ${queued} pending delivery(ies) again.`));
    }));
  deliveries
    .command('redeliver')
    // `redrive`: the verb before docs/architecture.md#glossary named this one; operators' runbooks still type it.
    .alias('redrive')
    .description('send deliveries again, each in a fresh round of attempts: one (--delivery), an organization’s failed ones (--org, --endpoint, --since, --until), or the dead-letter queue (--all)')
    .option('--delivery <id>', 'one delivery, whatever its status')
    .option('--org <id>', 'failed deliveries of this organization')
    .option('--endpoint <id>', 'only this endpoint')
    .option('--since <iso>', 'created at or after')
    .option('--until <iso>', 'created at or before')
    .option('--all', 'move the whole dead-letter queue back (with --org/--endpoint/--since: only matching messages)')
    .option('--skip-failing', 'with --org: leave the deliveries of endpoints still failing (circuit open or half-open, or failing since their last attempt) failed')
    .option('--max <n>', `dead-letter messages to look at in one pass (default ${DEAD_LETTER_PASS_MAX})`, positiveInt('--max'))
    .action(act<{ delivery?: string; org?: string; endpoint?: string; since?: string; until?: string; all?: boolean; max?: number; skipFailing?: boolean }>(async ({ target, options, json }) => {
      if (options.skipFailing && (!options.org || options.all || options.delivery)) throw new CliError('--skip-failing goes with --org (without --all or --delivery).', 2);
      const filter = { organizationId: options.org, endpointId: options.endpoint, since: isoOption('--since', options.since), until: isoOption('--until', options.until) };
      if (options.delivery) {
        const message = await redeliverDelivery(target.deps, options.delivery);
        printResult({ json }, { redriven: 1, deliveryId: message.deliveryId, ...deadLetterJson(message.deadLetters) }, () => {
          console.log(`Queued ${message.deliveryId} (${message.payload.type}, webhook-id ${message.payload.id}) again.`);
          const notice = message.deadLetters && deadLetterNotice(message.deadLetters);
          if (notice) console.log(notice);
        });
      } else if (options.all) {
        const result = await redeliverDeadLetters(target.deps, filter, progress(json), { maxMessages: options.max });
        if (!json && process.stderr.isTTY) process.stderr.write('\n');
        printResult({ json }, result, () => {
          console.log(result.task ? `Started SQS message move task ${result.task}: the dead-letter queue drains into the delivery queue.` : `Moved ${result.moved} message(s) from the dead-letter queue back to the delivery queue${result.alreadyDelivered ? ` (${result.alreadyDelivered} of them already delivered since, so only removed)` : ''}.`);
          const notice = deadLetterNotice(result);
          if (notice) console.log(notice);
        });
      } else if (options.org && options.skipFailing) {
        const { redriven, hollow, skipped } = await redeliverHealthy(target.deps, { ...filter, organizationId: options.org }, options.max);
        printResult({ json }, { redriven, ...(hollow ? { notRedriven: hollow } : {}), skippedEndpoints: skipped }, () => {
          console.log(`Queued ${redriven} failed deliveries of healthy endpoints again; their dead-letter copies were removed.`);
          if (skipped.length) console.log(`Skipped endpoints still failing (redeliver them once their receiver answers): ${skipped.map((e) => `${e.id} (${e.why})`).join(', ')}.`);
          if (hollow) console.log(`Left ${hollow} failed: their events were too large to queue and were not kept, so they are never sent.`);
        });
      } else if (options.org) {
        const { redriven, hollow, deadLetters } = await redeliverFailed(target.deps, { ...filter, organizationId: options.org }, progress(json), { maxMessages: options.max });
        if (!json && process.stderr.isTTY) process.stderr.write('\n');
        printResult({ json }, { redriven, ...(hollow ? { notRedriven: hollow } : {}), ...deadLetterJson(deadLetters) }, () => {
          const notice = deadLetters && deadLetterNotice(deadLetters);
          console.log(`Queued ${redriven} failed deliveries again; ${notice ? 'not every dead-letter copy was reached:' : 'their dead-letter copies were removed.'}`);
          if (notice) console.log(notice);
          if (hollow) console.log(`Left ${hollow} failed: their events were too large to queue and were not kept, so they are never sent.`);
        });
      } else {
        throw new CliError('Say what to redeliver: --delivery <id>, --org <id> [--endpoint --since --until] [--skip-failing], or --all.', 2);
      }
    }));
}
