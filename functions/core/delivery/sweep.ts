/**
 * The due-index sweeper (docs/architecture.md#retries-and-dead-letters): retries that wait longer than a queue delay are parked in the
 * deliveries table's sparse `due` index (keys-only, sharded `due#<n>`, sorted by due time) instead
 * of in flight. Every schedule period this re-queues what falls due before the next period, as
 * messages delayed to their due time, carrying their attempt count and the same payload (so the
 * same webhook-id). At-least-once: the message is sent before the due entry is cleared, and the
 * clear is conditional on the due time it saw (a re-park in between is kept). A sweep that dies
 * half-way leaves its entries in the index: the next one sends them again (a duplicate, which the
 * delivery function skips once delivered; receivers dedupe by webhook-id).
 *
 * The entries are handled in chunks, oldest due first (read, send, clear, then the next chunk): a
 * sweep holds at most one chunk's payloads (up to 240 KiB each) in memory, and one that dies late
 * keeps what its earlier chunks re-queued.
 */
import { MetricUnit } from '@aws-lambda-powertools/metrics';
import type { Deps } from '../platform/deps.js';
import type { DeliveryMessage, DeliveryRecord } from '../platform/model.js';
import { logger, metrics } from '../platform/observability.js';
import { inBatches } from '../platform/batches.js';
import { sendDeliveryMessages } from './queue.js';
import { dueShards, withPayloads } from './store.js';
import { deliveryStore, transition } from './delivery-port.js';
import type { DueKey } from './delivery-state.js';

/** Entries one sweep re-queues at most (a Lambda run of 60 s; the rest waits one period, and the lag metric shows it). */
export const SWEEP_MAX_ITEMS = 20_000;
/** Entries read, re-queued and cleared together: at most ~50 MB of payloads in memory (the function has 256 MB). */
export const SWEEP_CHUNK_ITEMS = 200;

export interface SweepOutcome {
  requeued: number;
  /** How late the most overdue entry found was, in seconds (0: none overdue). */
  lagSeconds: number;
  /** False when the sweep stopped at its cap with entries left. */
  complete: boolean;
}

type Parked = DeliveryRecord & { pk: string; sk: string; dueAt?: number; dueRound?: number };
/** One chunk: read the records (the index is keys-only and eventually consistent), send the due ones, then clear their entries. */
async function sweepChunk(deps: Deps, chunk: DueKey[], now: number, horizon: number): Promise<{ requeued: number; oldest: number; unsendable: string[] }> {
  const items = (await deliveryStore(deps).get(chunk.map(({ pk, sk }) => ({ pk, sk })), { consistent: true })) as unknown as Parked[];
  const due = items.filter((r) => typeof r.dueAt === 'number' && r.dueAt <= horizon);
  const records = await withPayloads(deps, due);
  const sendable = records.filter((r) => r.payload && !r.payloadOmitted);
  const dueAtById = new Map(sendable.map((r) => [r.id, (r as Parked).dueAt!]));
  const messages: DeliveryMessage[] = sendable.map((r) => ({
    deliveryId: r.id, organizationId: r.organizationId, endpointId: r.endpointId, payload: r.payload, ...((r as Parked).dueRound === undefined ? {} : { round: (r as Parked).dueRound }),
  }));
  await sendDeliveryMessages(deps, messages, { delaySeconds: (m) => (dueAtById.get(m.deliveryId)! - now) / 1000 });
  // Only now (sent) is the entry cleared; one a writer re-parked since (another due time) stays.
  await Promise.all((sendable as Parked[]).map((r) => transition(deps, { organizationId: r.organizationId, deliveryId: r.id }, { to: 'unparked', seenDueAt: r.dueAt!, key: { pk: r.pk, sk: r.sk } })));
  return {
    requeued: messages.length,
    oldest: Math.min(...due.map((r) => (r as Parked).dueAt!)),
    unsendable: records.filter((r) => !sendable.includes(r)).map((r) => r.id),
  };
}

/** One sweep: everything due within `dueSweepLookaheadSeconds` goes back to the delivery queue. */
export async function sweepDueDeliveries(deps: Deps, { maxItems = SWEEP_MAX_ITEMS, chunkItems = SWEEP_CHUNK_ITEMS }: { maxItems?: number; chunkItems?: number } = {}): Promise<SweepOutcome> {
  const now = deps.now();
  const horizon = now + deps.config.dueSweepLookaheadSeconds * 1000;
  const shards = dueShards();
  const found = await Promise.all(shards.map((s) => deliveryStore(deps).dueIn(s, horizon, Math.ceil(maxItems / shards.length))));
  // Oldest due first, across the shards.
  const keyList = found.flatMap((f) => f.keys).sort((a, b) => a.dueAt - b.dueAt);
  let requeued = 0;
  let oldest = Infinity;
  const unsendable: string[] = [];
  for (const chunk of inBatches(keyList, chunkItems)) {
    const done = await sweepChunk(deps, chunk, now, horizon);
    requeued += done.requeued;
    oldest = Math.min(oldest, done.oldest);
    unsendable.push(...done.unsendable);
  }
  // Left in the index (and counted in the lag): nothing is dropped silently.
  if (unsendable.length > 0) logger.error('parked deliveries without a payload to send: left in the due index', { deliveryIds: unsendable });
  const lagSeconds = Number.isFinite(oldest) ? Math.max(0, Math.round((now - oldest) / 1000)) : 0;
  metrics.addMetric('DueSweepRequeued', MetricUnit.Count, requeued);
  metrics.addMetric('DueSweepLagSeconds', MetricUnit.Seconds, lagSeconds);
  const complete = found.every((f) => f.complete);
  if (requeued > 0 || !complete) logger.info('due deliveries re-queued', { requeued, lagSeconds, complete });
  return { requeued, lagSeconds, complete };
}
