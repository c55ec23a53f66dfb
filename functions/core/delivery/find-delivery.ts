/**
 * Finding a delivery by its id, or an event's deliveries by the event id (the `webhook-id` a
 * receiver logs), with or without the organization (docs/data-model.md "Finding a delivery").
 * A record is keyed by its organization; records no longer carry an id-index entry (a write per
 * delivery saved, docs/capacity.md). So without the organization, the record's key is tried in
 * every organization: one BatchGetItem per 100 organizations, reads only, for an operator's
 * look-up (`crm deliveries show`). Records written before that change are still found through
 * the id index (gsi1) until they expire.
 */
import type { Deps } from '../platform/deps.js';
import { keys, type DeliveryRecord, type EventPayload } from '../platform/model.js';
import { listOrganizations } from '../tenancy/organizations.js';
import { endpointStore } from './endpoint-store.js';
import { deliveryIdFor } from './queue.js';
import { toDeliveryRecord, withPayloads } from './store.js';
import { deliveryStore } from './delivery-port.js';
import { firstRecord, type Key } from './delivery-state.js';

/** The organization whose partition holds `keyOf(organizationId)`, tried in every organization. */
async function organizationHolding(deps: Deps, keyOf: (organizationId: string) => Key): Promise<string | undefined> {
  const organizations = await listOrganizations(deps);
  const found = await deliveryStore(deps).get(organizations.map((o) => keyOf(o.id)), { projection: ['pk'] });
  return found[0] && String(found[0].pk).replace(/^ORG#/, '');
}

/** A delivery by id (its payload joined back in); `organizationId` given: one GetItem. */
export async function findDelivery(deps: Deps, deliveryId: string, organizationId?: string): Promise<DeliveryRecord | undefined> {
  const store = deliveryStore(deps);
  const organization = organizationId
    ?? (await store.keyOf(deliveryId))?.pk.replace(/^ORG#/, '') // written before records lost their id-index entry
    ?? await organizationHolding(deps, (org) => keys.delivery(org, deliveryId));
  const item = organization && await store.getOne(keys.delivery(organization, deliveryId), { consistent: true });
  return item ? (await withPayloads(deps, [toDeliveryRecord(item)]))[0] : undefined;
}

/**
 * An event's deliveries (the event item names its endpoints; one written before it did: the
 * organization's endpoints now), with their payload; one queued whose first outcome is not
 * written yet is shown pending, with its event's time. Empty: no such event in `organizationId`
 * (or in any organization).
 */
export async function findEventDeliveries(deps: Deps, eventId: string, organizationId?: string): Promise<DeliveryRecord[]> {
  const organization = organizationId ?? await organizationHolding(deps, (org) => keys.event(org, eventId));
  if (!organization) return [];
  const store = deliveryStore(deps);
  const event = await store.getOne(keys.event(organization, eventId));
  if (!event) return [];
  const named = Array.isArray(event.endpointIds);
  const endpointIds = named ? event.endpointIds as string[] : (await endpointStore(deps).listEndpoints(organization, { routingOnly: true })).map((e) => e.id);
  const items = await store.get(endpointIds.map((id) => keys.delivery(organization, deliveryIdFor(eventId, id))), { consistent: true });
  const recorded = await withPayloads(deps, items.map(toDeliveryRecord));
  if (!named) return recorded;
  // Named by the event but without a record: queued, its first outcome not written yet (queue.ts).
  const payload = event.payload as EventPayload;
  const queued = endpointIds.filter((id) => !recorded.some((d) => d.endpointId === id)).map((endpointId) => ({
    ...toDeliveryRecord(firstRecord({ organizationId: organization, deliveryId: deliveryIdFor(eventId, endpointId), endpointId, payload, round: Date.parse(payload.timestamp) }, deps.config.retentionDays)),
    payload, reason: 'queued; no attempt recorded yet (the first outcome writes the record)',
  }));
  return [...recorded, ...queued];
}
