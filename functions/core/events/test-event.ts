/**
 * Test events: `crm webhooks test` sends a `webhook.test` event to one endpoint (or all); the
 * settings page may also send any event type an endpoint subscribes to, as its catalog example
 * (events/catalog.ts) with a fresh id, the organization's id and `"test": true` (docs/events.md).
 */
import type { Deps } from '../platform/deps.js';
import { validationFailed } from '../platform/errors.js';
import type { EventPayload } from '../platform/model.js';
import { newId } from '../platform/ids.js';
import { currentEndpoints, requireEndpoint } from '../delivery/endpoints.js';
import { isSubscribed, normalizeEventName } from '../delivery/subscriptions.js';
import { requireOrganization } from '../tenancy/organizations.js';
import { catalog, webhookTestEvent } from './catalog.js';
import { fanOutEvent } from './fanout.js';
import { deliveryIdFor } from '../delivery/queue.js';

/** The catalog example of `type` as a test event of `organizationId`: a fresh id, sent now, marked as a test. */
export function exampleTestEvent(type: string, organizationId: string, now: Date): EventPayload {
  const entry = catalog.find((e) => e.type === type);
  if (!entry) throw validationFailed([{ field: 'event_type', message: `unknown event ${type}` }]);
  const { example } = entry;
  const object = 'organization_id' in example.data.object ? { ...example.data.object, organization_id: organizationId } : example.data.object;
  return { ...example, id: newId('evt', 22), timestamp: now.toISOString(), organization_id: organizationId, data: { ...example.data, object }, test: true };
}

export async function sendTestEvent(deps: Deps, organizationId: string, endpointId?: string, options: { eventType?: string } = {}): Promise<{ eventId: string; deliveryIds: string[] }> {
  await requireOrganization(deps, organizationId);
  const endpoints = endpointId ? [await requireEndpoint(deps, organizationId, endpointId)] : await currentEndpoints(deps, organizationId);
  const type = options.eventType === undefined ? 'webhook.test' : normalizeEventName(options.eventType);
  if (!type) throw validationFailed([{ field: 'event_type', message: `unknown event ${options.eventType}` }]);
  const unsubscribed = endpoints.filter((e) => !isSubscribed(e.events, type));
  if (unsubscribed.length) throw validationFailed([{ field: 'event_type', message: `the endpoint does not subscribe to ${type}` }]);
  const event = type === 'webhook.test' ? webhookTestEvent(organizationId, new Date(deps.now())) : exampleTestEvent(type, organizationId, new Date(deps.now()));
  await fanOutEvent(deps, event, endpoints);
  return { eventId: event.id, deliveryIds: endpoints.map((e) => deliveryIdFor(event.id, e.id)) };
}
