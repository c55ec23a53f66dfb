/**
 * Every management route is scoped to the token's organization (docs/settings.md#security-model): with a valid
 * token of organization A, every id of organization B is simply not found (404) on every route that
 * takes one, in the path, the query or the body, and nothing of B changes.
 */
import { describe, it, expect, beforeAll, afterAll } from '@jest/globals';
import { newTenant, postLead, testStack, type Tenant } from '../support/stack.js';
import { Receiver } from '../support/receiver.js';
import { routes } from '../../../functions/front-door/routes.js';
import { settingsClient, settingsCall } from './support.js';

let receiver: Receiver;
let a: Tenant;
let b: { tenant: Tenant; keyId: string; key: string; endpointId: string; deliveryId: string; secret: string; clientId: string };
beforeAll(async () => {
  receiver = await new Receiver().start();
  a = await newTenant({ name: 'A Plumbing' });
  const tenant = await newTenant({ name: 'B Heating' });
  const adminB = await settingsClient(tenant.organizationId);
  const { endpoint, secret } = (await adminB.post('/api/settings/webhooks', { url: `${receiver.url}/isolation-b`, events: ['client.created'] })).json<{ endpoint: { id: string }; secret: string }>();
  receiver.script('/isolation-b', secret, { status: 204 });
  const { delivery } = (await adminB.post(`/api/settings/webhooks/${endpoint.id}/test`)).json<{ delivery: { id: string; status: string } }>();
  expect(delivery.status).toBe('delivered');
  const lead = await postLead(tenant.key, { first_name: 'Bea', email: 'bea@example.com' });
  const { id: clientId } = (await lead.json()) as { id: string };
  b = { tenant, keyId: tenant.keyId, key: tenant.key, endpointId: endpoint.id, deliveryId: delivery.id, secret, clientId };
});
afterAll(async () => {
  await receiver.stop();
});

/** Each route with an id, and what it is called with: B's id, in the place the route takes it. */
const withIds = (): [string, string, string, unknown][] => [
  ['DELETE', '/api/settings/keys/{id}', `/api/settings/keys/${b.keyId}`, undefined],
  ['POST', '/api/settings/keys/{id}/rotate', `/api/settings/keys/${b.keyId}/rotate`, { grace_hours: 0 }],
  ['PATCH', '/api/settings/webhooks/{id}', `/api/settings/webhooks/${b.endpointId}`, { url: `${receiver.url}/stolen`, enabled: false }],
  ['DELETE', '/api/settings/webhooks/{id}', `/api/settings/webhooks/${b.endpointId}`, undefined],
  ['POST', '/api/settings/webhooks/{id}/rotate-secret', `/api/settings/webhooks/${b.endpointId}/rotate-secret`, { grace_hours: 0 }],
  ['POST', '/api/settings/webhooks/{id}/test', `/api/settings/webhooks/${b.endpointId}/test`, {}],
  ['POST', '/api/settings/webhooks/{id}/check', `/api/settings/webhooks/${b.endpointId}/check`, {}],
  ['GET', '/api/settings/webhooks/{id}/stats', `/api/settings/webhooks/${b.endpointId}/stats`, undefined],
  ['GET', '/api/settings/deliveries/{id}', `/api/settings/deliveries/${b.deliveryId}`, undefined],
  ['POST', '/api/settings/deliveries/{id}/redeliver', `/api/settings/deliveries/${b.deliveryId}/redeliver`, {}],
  ['GET', '/api/settings/deliveries', `/api/settings/deliveries?endpoint=${b.endpointId}`, undefined],
  ['POST', '/api/settings/deliveries/redeliver', '/api/settings/deliveries/redeliver', { endpoint: b.endpointId }],
  ['POST', '/api/settings/deliveries/recover', '/api/settings/deliveries/recover', { since: new Date(Date.now() - 3_600_000).toISOString(), endpoint_id: b.endpointId, dry_run: true }],
  ['POST', '/api/settings/deliveries/recover', '/api/settings/deliveries/recover', { since: new Date(Date.now() - 3_600_000).toISOString(), endpoint_id: b.endpointId }],
  ['POST', '/api/settings/webhooks/{id}/test', `/api/settings/webhooks/${b.endpointId}/test`, { event_type: 'client.created' }],
  ['GET', '/api/settings/clients/{id}/trail', `/api/settings/clients/${b.clientId}/trail`, undefined],
];

describe('organization scoping of the settings API', () => {
  it('covers every route of the settings function that takes an id in its path', () => {
    const parameterized = routes.filter((r) => r.function === 'settingsApi' && r.path.startsWith('/api/') && r.path.includes('{')).map((r) => `${r.method} ${r.path}`);
    expect(withIds().map(([method, route]) => `${method} ${route}`)).toEqual(expect.arrayContaining(parameterized));
  });

  it("answers 404 for every one of another organization's ids, and changes nothing of it", async () => {
    const token = (await settingsClient(a.organizationId, 'intruder')).token;
    for (const [method, route, pathname, body] of withIds()) {
      const call = await settingsCall(token, method, pathname, body);
      expect({ route: `${method} ${route}`, status: call.status, type: call.headers.get('content-type') }).toEqual({ route: `${method} ${route}`, status: 404, type: 'application/problem+json' });
      expect(call.text).not.toContain(b.tenant.organizationId);
    }
    // B is as it was: its key works, its endpoint and secret are unchanged, its delivery was not re-sent.
    const { api } = await testStack();
    expect((await api('/api/webhook/leads', { headers: { 'X-API-Key': b.key } })).status).toBe(200);
    const adminB = await settingsClient(b.tenant.organizationId);
    expect((await adminB.get('/api/settings/webhooks')).json()).toMatchObject({ endpoints: [{ id: b.endpointId, url: `${receiver.url}/isolation-b`, enabled: true, secretCount: 1 }] });
    expect((await adminB.get(`/api/settings/deliveries/${b.deliveryId}`)).json()).toMatchObject({ delivery: { status: 'delivered', attemptCount: 1 } });
    // B's own lead is delivered to it on its own; nothing else is sent but the one test.
    expect(receiver.on('/isolation-b').filter((r) => r.event?.data.object.id !== b.clientId)).toHaveLength(1);
    expect(receiver.on('/stolen')).toHaveLength(0);
    // A's own lists do not show B's things.
    const adminA = await settingsClient(a.organizationId);
    expect(JSON.stringify((await adminA.get('/api/settings/keys')).json())).not.toContain(b.keyId);
    expect((await adminA.get('/api/settings/deliveries')).json()).toEqual({ deliveries: [], nextCursor: null });
    // Searching for B's delivery or event by id finds nothing.
    expect((await adminA.get(`/api/settings/deliveries?search=${b.deliveryId}`)).json()).toEqual({ deliveries: [], nextCursor: null });
  });
});
