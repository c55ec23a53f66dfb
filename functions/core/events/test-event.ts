/** `crm webhooks test`: a `webhook.test` event queued to one endpoint (or all), and its first outcome. */
import type { Deps } from '../platform/deps.js';
import { currentEndpoints, requireEndpoint } from '../delivery/endpoints.js';
import { requireOrganization } from '../tenancy/organizations.js';
import { findDelivery } from '../delivery/redrive.js';
import { webhookTestEvent } from './catalog.js';
import { fanOutEvent } from './fanout.js';
import { deliveryIdFor } from '../delivery/queue.js';

export async function sendTestEvent(deps: Deps, organizationId: string, endpointId?: string): Promise<{ eventId: string; deliveryIds: string[] }> {
  await requireOrganization(deps, organizationId);
  const endpoints = endpointId ? [await requireEndpoint(deps, organizationId, endpointId)] : await currentEndpoints(deps, organizationId);
  const event = webhookTestEvent(organizationId, new Date(deps.now()));
  await fanOutEvent(deps, event, endpoints);
  return { eventId: event.id, deliveryIds: endpoints.map((e) => deliveryIdFor(event.id, e.id)) };
}

/** Polls a delivery until its first attempt is recorded (or it was skipped/failed without one). */
export async function waitForFirstOutcome(deps: Deps, deliveryId: string, timeoutMs = 30_000): Promise<Record<string, unknown> | undefined> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const item = await findDelivery(deps, deliveryId);
    if (item && ((item.attempts as unknown[])?.length > 0 || item.status !== 'pending')) return item;
    await new Promise((r) => setTimeout(r, 250));
  }
  return findDelivery(deps, deliveryId);
}
