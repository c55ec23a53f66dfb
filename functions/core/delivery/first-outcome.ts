/**
 * What happened to a delivery's first attempt, waited for by polling its record: `crm webhooks
 * test` and the settings API's "Send test event" (POST /api/settings/webhooks/{id}/test) both wait
 * here, so the two report a test the same way. The wait is bounded: a receiver that is slow or a
 * queue that is backed up leaves the delivery "pending", and the caller says so.
 */
import type { Deps } from '../platform/deps.js';
import type { DeliveryRecord } from '../platform/model.js';
import { findDelivery, findEventDeliveries } from './find-delivery.js';

const POLL_MS = 250;

/** The delivery if it belongs to `organizationId` (read in that organization's partition only). */
export const findOrganizationDelivery = (deps: Deps, organizationId: string, deliveryId: string): Promise<DeliveryRecord | undefined> =>
  findDelivery(deps, deliveryId, organizationId);

/**
 * Polls a delivery until its first attempt is recorded (or it was skipped/failed without one), at
 * most `timeoutMs`. Still without a record then (its first outcome writes it: queue.ts), it is
 * answered pending from its event item.
 */
export async function waitForFirstOutcome(deps: Deps, organizationId: string, sent: { deliveryId: string; eventId: string }, timeoutMs = 30_000): Promise<DeliveryRecord | undefined> {
  const { deliveryId } = sent;
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const item = await findDelivery(deps, deliveryId, organizationId);
    if (item && (item.attempts?.length || item.status !== 'pending')) return item;
    await new Promise((r) => setTimeout(r, Math.min(POLL_MS, Math.max(0, deadline - Date.now()))));
  }
  return await findDelivery(deps, deliveryId, organizationId)
    ?? (await findEventDeliveries(deps, sent.eventId, organizationId)).find((d) => d.id === deliveryId);
}
