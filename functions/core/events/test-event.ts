/** `crm webhooks test`: a `webhook.test` event queued to one endpoint (or all); the CLI waits for the outcome. */
import type { Deps } from '../platform/deps.js';
import { currentEndpoints, requireEndpoint } from '../delivery/endpoints.js';
import { requireOrganization } from '../tenancy/organizations.js';
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
