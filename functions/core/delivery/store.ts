/**
 * How deliveries are stored (docs/capacity.md counts every write): an event's payload once, in an
 * `EVENT#` item beside its deliveries, and per (event, endpoint) a small delivery record with the
 * status and the attempts. The id index (gsi1) and the due-time index (`due`) are keys-only, so
 * the record's updates (an attempt, a status) never write an index; only parking a retry, or
 * clearing it, writes the sparse due index. Records written before the payload moved out still
 * carry it inline; readers take either.
 */
import { createHash } from 'node:crypto';
import { BatchGetCommand, BatchWriteCommand } from '@aws-sdk/lib-dynamodb';
import type { Deps } from '../platform/deps.js';
import { inBatches } from '../platform/batches.js';
import { keys, type DeliveryRecord, type EventPayload } from '../platform/model.js';

type Key = { pk: string; sk: string };
type StoredItem = Record<string, unknown>;

/** Partitions of the due index: a sweep reads them in parallel, and no single one takes every parked write. */
export const DUE_SHARDS = 8;
/** The due index's keys of a delivery parked until `dueAtMs` (sparse: only parked records carry them). */
export function dueKeys(deliveryId: string, dueAtMs: number): { duePk: string; dueAt: number } {
  const shard = createHash('sha256').update(deliveryId).digest().readUInt32BE(0) % DUE_SHARDS;
  return { duePk: `due#${shard}`, dueAt: Math.round(dueAtMs) };
}
export const dueShards = (): string[] => Array.from({ length: DUE_SHARDS }, (_, n) => `due#${n}`);

/** Backs off between rounds of unprocessed items (throttling); gives up after this many. */
const MAX_ROUNDS = 8;
const backoff = (round: number) => new Promise((r) => setTimeout(r, Math.min(1000, 25 * 2 ** round)));

/** Puts every item with BatchWriteItem (25 per call, in parallel), retrying what DynamoDB leaves unprocessed. */
export async function putAll(deps: Deps, table: string, items: StoredItem[]): Promise<void> {
  await Promise.all(inBatches(items, 25).map(async (batch) => {
    let requests = batch.map((Item) => ({ PutRequest: { Item } }));
    for (let round = 0; requests.length > 0; round++) {
      if (round >= MAX_ROUNDS) throw new Error(`BatchWriteItem left ${requests.length} item(s) unprocessed after ${MAX_ROUNDS} rounds`);
      if (round > 0) await backoff(round);
      const out = await deps.doc.send(new BatchWriteCommand({ RequestItems: { [table]: requests } }));
      requests = (out.UnprocessedItems?.[table] ?? []) as typeof requests;
    }
  }));
}

/** Reads items by key with BatchGetItem (100 per call, in parallel), retrying unprocessed keys; missing ones are absent. */
export async function getAll(deps: Deps, table: string, keyList: Key[], options: { consistent?: boolean; projection?: string[] } = {}): Promise<StoredItem[]> {
  const unique = [...new Map(keyList.map((k) => [`${k.pk}\u0000${k.sk}`, k])).values()];
  const names = options.projection && Object.fromEntries(options.projection.map((p, i) => [`#p${i}`, p]));
  const pages = await Promise.all(inBatches(unique, 100).map(async (batch) => {
    const found: StoredItem[] = [];
    let pending: Key[] = batch;
    for (let round = 0; pending.length > 0; round++) {
      if (round >= MAX_ROUNDS) throw new Error(`BatchGetItem left ${pending.length} key(s) unprocessed after ${MAX_ROUNDS} rounds`);
      if (round > 0) await backoff(round);
      const out = await deps.doc.send(new BatchGetCommand({
        RequestItems: { [table]: { Keys: pending, ConsistentRead: options.consistent ?? false, ...(names ? { ProjectionExpression: Object.keys(names).join(', '), ExpressionAttributeNames: names } : {}) } },
      }));
      found.push(...(out.Responses?.[table] ?? []));
      pending = (out.UnprocessedKeys?.[table]?.Keys ?? []) as Key[];
    }
    return found;
  }));
  return pages.flat();
}

/** The stored item holding an event's payload (one per event, whatever its number of endpoints). */
export function eventItem(event: EventPayload, payload: EventPayload, expiresAt: number): StoredItem {
  return { ...keys.event(event.organization_id, event.id), entity: 'event', eventId: event.id, payload, expiresAt };
}

/**
 * Delivery records with their event's payload joined back in (one BatchGetItem for the lot):
 * the shape every reader (CLI, settings API, redrive) had when the payload lived in the record.
 */
export async function withPayloads(deps: Deps, records: DeliveryRecord[]): Promise<DeliveryRecord[]> {
  const missing = records.filter((r) => !r.payload);
  if (missing.length === 0) return records;
  const items = await getAll(deps, deps.tables.deliveries, missing.map((r) => keys.event(r.organizationId, r.eventId)));
  const byEvent = new Map(items.map((i) => [`${i.pk as string}|${i.eventId as string}`, i.payload as EventPayload]));
  return records.map((r) => (r.payload ? r : { ...r, payload: byEvent.get(`${keys.event(r.organizationId, r.eventId).pk}|${r.eventId}`) as EventPayload }));
}
