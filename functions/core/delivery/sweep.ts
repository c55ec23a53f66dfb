/**
 * The due-index sweeper (DESIGN §16): retries that wait longer than a queue delay are parked in the
 * deliveries table's sparse `due` index (keys-only, sharded `due#<n>`, sorted by due time) instead
 * of in flight. Every schedule period this re-queues what falls due before the next period, as
 * messages delayed to their due time, carrying their attempt count and the same payload (so the
 * same webhook-id). At-least-once: the message is sent before the due entry is cleared, and the
 * clear is conditional on the due time it saw (a re-park in between is kept). A sweep that dies
 * half-way leaves its entries in the index: the next one sends them again (a duplicate, which the
 * delivery function skips once delivered; receivers dedupe by webhook-id).
 */
import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { MetricUnit } from '@aws-lambda-powertools/metrics';
import type { Deps } from '../platform/deps.js';
import type { DeliveryMessage, DeliveryRecord } from '../platform/model.js';
import { logger, metrics } from '../platform/observability.js';
import { queryPages } from '../platform/query.js';
import { sendDeliveryMessages } from './queue.js';
import { dueShards, getAll, withPayloads } from './store.js';

/** Entries one sweep re-queues at most (a Lambda run of 60 s; the rest waits one period, and the lag metric shows it). */
export const SWEEP_MAX_ITEMS = 20_000;

export interface SweepOutcome {
  requeued: number;
  /** How late the most overdue entry found was, in seconds (0: none overdue). */
  lagSeconds: number;
  /** False when the sweep stopped at its cap with entries left. */
  complete: boolean;
}

type Parked = DeliveryRecord & { pk: string; sk: string; dueAt?: number; duePriorAttempts?: number };

async function dueKeysIn(deps: Deps, shard: string, horizon: number, cap: number): Promise<{ keys: { pk: string; sk: string }[]; complete: boolean }> {
  const keys: { pk: string; sk: string }[] = [];
  for await (const page of queryPages(deps, {
    TableName: deps.tables.deliveries, IndexName: 'due',
    KeyConditionExpression: 'duePk = :s AND dueAt <= :h', ExpressionAttributeValues: { ':s': shard, ':h': horizon },
  })) {
    keys.push(...page.map((i) => ({ pk: i.pk as string, sk: i.sk as string })));
    if (keys.length >= cap) return { keys: keys.slice(0, cap), complete: false };
  }
  return { keys, complete: true };
}

/** One sweep: everything due within `dueSweepLookaheadSeconds` goes back to the delivery queue. */
export async function sweepDueDeliveries(deps: Deps, { maxItems = SWEEP_MAX_ITEMS }: { maxItems?: number } = {}): Promise<SweepOutcome> {
  const now = deps.now();
  const horizon = now + deps.settings.dueSweepLookaheadSeconds * 1000;
  const shards = dueShards();
  const found = await Promise.all(shards.map((s) => dueKeysIn(deps, s, horizon, Math.ceil(maxItems / shards.length))));
  const keyList = found.flatMap((f) => f.keys);
  // The index is keys-only and eventually consistent: read the records themselves, consistently.
  const items = (await getAll(deps, deps.tables.deliveries, keyList, { consistent: true })) as unknown as Parked[];
  const due = items.filter((r) => typeof r.dueAt === 'number' && r.dueAt <= horizon);
  const records = await withPayloads(deps, due);
  const sendable = records.filter((r) => r.payload && !r.payloadOmitted);
  const dueAtById = new Map(sendable.map((r) => [r.id, (r as Parked).dueAt!]));
  const messages: DeliveryMessage[] = sendable.map((r) => ({
    deliveryId: r.id, organizationId: r.organizationId, endpointId: r.endpointId, payload: r.payload, priorAttempts: (r as Parked).duePriorAttempts ?? 0,
  }));
  await sendDeliveryMessages(deps, messages, { delaySeconds: (m) => (dueAtById.get(m.deliveryId)! - now) / 1000 });
  // Only now (sent) is the entry cleared; one a writer re-parked since (another due time) stays.
  await Promise.all((sendable as Parked[]).map((r) => deps.doc.send(new UpdateCommand({
    TableName: deps.tables.deliveries, Key: { pk: r.pk, sk: r.sk },
    UpdateExpression: 'REMOVE duePk, dueAt, duePriorAttempts',
    ConditionExpression: 'dueAt = :seen', ExpressionAttributeValues: { ':seen': r.dueAt },
  })).catch((error: Error) => { if (error.name !== 'ConditionalCheckFailedException') throw error; })));
  // Left in the index (and counted in the lag): nothing is dropped silently.
  if (sendable.length < due.length) logger.error('parked deliveries without a payload to send: left in the due index', { deliveryIds: records.filter((r) => !sendable.includes(r)).map((r) => r.id) });
  const oldest = Math.min(...due.map((r) => (r as Parked).dueAt!));
  const lagSeconds = due.length > 0 ? Math.max(0, Math.round((now - oldest) / 1000)) : 0;
  metrics.addMetric('DueSweepRequeued', MetricUnit.Count, messages.length);
  metrics.addMetric('DueSweepLagSeconds', MetricUnit.Seconds, lagSeconds);
  const complete = found.every((f) => f.complete);
  if (messages.length > 0 || !complete) logger.info('due deliveries re-queued', { requeued: messages.length, lagSeconds, complete });
  return { requeued: messages.length, lagSeconds, complete };
}
