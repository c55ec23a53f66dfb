/**
 * How deliveries are stored (docs/capacity.md counts every write): an event's payload once, in an
 * `EVENT#` item beside its deliveries, and per (event, endpoint) a small delivery record with the
 * status and the attempts (written only by delivery-record.ts, through the port: delivery-port.ts).
 * Records written before the payload moved out still carry it inline; readers take either.
 */
import type { Deps } from '../platform/deps.js';
import { keys, type DeliveryRecord, type EventPayload } from '../platform/model.js';
import { deliveryStore } from './delivery-port.js';
import type { StoredItem } from './delivery-state.js';

export { DUE_SHARDS, dueKeys, dueShards } from './delivery-state.js';

/**
 * The stored item holding an event's payload (one per event, whatever its number of endpoints),
 * and the endpoints it was recorded for: its deliveries' ids (queue.ts deliveryIdFor), found from
 * the event id alone (find-delivery.ts).
 */
export function eventItem(event: EventPayload, payload: EventPayload, expiresAt: number, endpointIds: string[]): StoredItem {
  return { ...keys.event(event.organization_id, event.id), entity: 'event', eventId: event.id, payload, endpointIds, expiresAt };
}

/** A stored delivery without its storage attributes (keys, index keys, entity, its write `version`). */
export function toDeliveryRecord(item: Record<string, unknown>): DeliveryRecord {
  const { pk: _pk, sk: _sk, gsi1pk: _g1, gsi1sk: _g2, entity: _e, duePk: _d1, dueAt: _d2, dueRound: _d3, duePriorAttempts: _d4, version: _v, ...record } = item;
  return record as unknown as DeliveryRecord;
}

/**
 * Delivery records with their event's payload joined back in (one BatchGetItem for the lot):
 * the shape every reader (CLI, settings API, redelivery) had when the payload lived in the record.
 */
export async function withPayloads(deps: Deps, records: DeliveryRecord[]): Promise<DeliveryRecord[]> {
  const missing = records.filter((r) => !r.payload);
  if (missing.length === 0) return records;
  const items = await deliveryStore(deps).get(missing.map((r) => keys.event(r.organizationId, r.eventId)));
  const byEvent = new Map(items.map((i) => [`${i.pk as string}|${i.eventId as string}`, i.payload as EventPayload]));
  return records.map((r) => (r.payload ? r : { ...r, payload: byEvent.get(`${keys.event(r.organizationId, r.eventId).pk}|${r.eventId}`) as EventPayload }));
}
