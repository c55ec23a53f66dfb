/**
 * The settings API's portal features (docs/settings.md), through HTTP against the local stack:
 * the event catalog with schemas and examples, typed test events received and verified by a real
 * receiver, the delivery log's filters and search, "Recover" (counted, then queued), attempts
 * numbered over a delivery's life, a re-delivery's endpoint state, keys told apart, refused calls
 * in the request log, no CORS on the settings API, and compressed page assets.
 */
import { describe, it, expect, beforeAll } from '@jest/globals';
import { eventually, itemsOf, newTenant, testStack, type Tenant } from '../support/stack.js';
import { MAX_REFUSED_LOGGED_PER_MINUTE } from '../../../functions/core/tenancy/request-log.js';
import { receiverForFile } from '../support/receiver.js';
import { settingsClient, settingsCall } from './support.js';

type Client = Awaited<ReturnType<typeof settingsClient>>;
interface Delivery {
  id: string; eventId: string; eventType: string; status: string; attemptCount: number;
  attempts: { number: number; attempt: number; manual: boolean; statusCode: number | null; requestHeaders: Record<string, string> | null; responseHeaders: Record<string, string> | null }[];
}

const receiver = receiverForFile();
let tenant: Tenant;
let admin: Client;
beforeAll(async () => {
  tenant = await newTenant({ name: 'Portal Plumbing' });
  admin = await settingsClient(tenant.organizationId);
});

async function addEndpoint(path: string, events: string[]): Promise<{ id: string; secret: string }> {
  const call = await admin.post('/api/settings/webhooks', { url: `${receiver.url}${path}`, events });
  expect(call.status).toBe(201);
  const { endpoint, secret } = call.json<{ endpoint: { id: string }; secret: string }>();
  return { id: endpoint.id, secret };
}

const detail = async (id: string) => (await admin.get(`/api/settings/deliveries/${id}`)).json<{ delivery: Delivery }>().delivery;

describe('the event catalog', () => {
  it('lists each event with its JSON Schema and an example that names it', async () => {
    const { events } = (await admin.get('/api/settings/events')).json<{ events: { name: string; schema: { properties: Record<string, { const?: string }> }; example: { type: string; data: { object: object } } }[] }>();
    expect(events.length).toBeGreaterThan(5);
    for (const event of events) {
      expect({ name: event.name, type: event.schema.properties.type.const, example: event.example.type }).toEqual({ name: event.name, type: event.name, example: event.name });
      expect(event.schema.properties.data).toBeDefined();
    }
  });
});

describe('typed test events', () => {
  it('sends any subscribed event type as its example, marked as a test, signed; refuses an unsubscribed or unknown one', async () => {
    const { id, secret } = await addEndpoint('/portal-typed', ['client.created']);
    receiver.script('/portal-typed', secret, { status: 204, headers: { 'X-Receiver': 'portal-typed' } });
    const call = await admin.post(`/api/settings/webhooks/${id}/test`, { event_type: 'client_created' });
    expect(call.status).toBe(200);
    const { delivery } = call.json<{ delivery: Delivery }>();
    expect(delivery).toMatchObject({ eventType: 'client.created', status: 'delivered' });
    // The attempt shows the headers sent (the signature shortened) and those received.
    const [attempt] = delivery.attempts;
    expect(attempt.requestHeaders).toMatchObject({ 'webhook-id': delivery.eventId, 'content-type': 'application/json', 'webhook-signature': expect.stringMatching(/^v1,.{1,13}…$/) });
    expect(attempt.responseHeaders).toMatchObject({ 'x-receiver': 'portal-typed' });
    const [received] = receiver.on('/portal-typed');
    expect(received.verifyError).toBeUndefined();
    expect(JSON.parse(received.body)).toMatchObject({ type: 'client.created', test: true, organization_id: tenant.organizationId, data: { object: { organization_id: tenant.organizationId, email: 'ada@example.com' } } });

    for (const body of [{ event_type: 'invoice.paid' }, { event_type: 'no.such' }, { event_type: 3 }, { type: 'client.created' }]) {
      const refused = await admin.post(`/api/settings/webhooks/${id}/test`, body);
      expect({ body, status: refused.status }).toEqual({ body, status: 422 });
    }
    expect(receiver.on('/portal-typed')).toHaveLength(1);
  });
});

describe('the delivery log', () => {
  let endpoint: { id: string; secret: string };
  let typed: Delivery;
  let plain: Delivery;
  beforeAll(async () => {
    endpoint = await addEndpoint('/portal-log', ['client.created']);
    receiver.script('/portal-log', endpoint.secret, { status: 204 });
    typed = (await admin.post(`/api/settings/webhooks/${endpoint.id}/test`, { event_type: 'client.created' })).json<{ delivery: Delivery }>().delivery;
    plain = (await admin.post(`/api/settings/webhooks/${endpoint.id}/test`)).json<{ delivery: Delivery }>().delivery;
  });

  it('filters by event type and time, and finds a delivery by its id or its event id', async () => {
    const list = async (query: string) => (await admin.get(`/api/settings/deliveries?endpoint=${endpoint.id}&${query}`)).json<{ deliveries: Delivery[] }>().deliveries.map((d) => d.id);
    expect(await list('event_type=client.created')).toEqual([typed.id]);
    expect(await list('event_type=webhook.test')).toEqual([plain.id]);
    expect(await list(`search=${typed.id}`)).toEqual([typed.id]);
    expect(await list(`search=${plain.eventId}`)).toEqual([plain.id]);
    expect(await list(`since=${encodeURIComponent(new Date(Date.now() + 60_000).toISOString())}`)).toEqual([]);
    expect((await list('')).sort()).toEqual([typed.id, plain.id].sort());
    expect((await admin.get('/api/settings/deliveries?event_type=no.such')).status).toBe(422);
  });

  it('refuses an over-long search and a cursor it did not write (422), never a 500', async () => {
    const cursorOf = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');
    for (const query of [`search=${'x'.repeat(1_024)}`, `cursor=${cursorOf(['', ''])}`, `cursor=${cursorOf(['yesterday', 'dlv_1'])}`, `cursor=${cursorOf([new Date().toISOString(), 'DELIVERY#x'])}`, 'cursor=not-json', `cursor=${'a'.repeat(5_000)}`]) {
      const call = await admin.get(`/api/settings/deliveries?${query}`);
      expect({ query: query.slice(0, 40), status: call.status }).toEqual({ query: query.slice(0, 40), status: 422 });
    }
    const page = (await admin.get('/api/settings/deliveries?limit=1')).json<{ nextCursor: string }>();
    expect((await admin.get(`/api/settings/deliveries?cursor=${page.nextCursor}`)).status).toBe(200);
  });

  it('refuses a re-delivery or a test event to a disabled endpoint (409), leaving the delivery as it was and sending nothing', async () => {
    const heard = receiver.on('/portal-log').length;
    expect((await admin.patch(`/api/settings/webhooks/${endpoint.id}`, { enabled: false })).status).toBe(200);
    const call = await admin.post(`/api/settings/deliveries/${plain.id}/redeliver`);
    expect(call.status).toBe(409);
    expect(call.json<{ detail: string }>().detail).toMatch(/disabled/);
    expect((await admin.post(`/api/settings/webhooks/${endpoint.id}/test`)).status).toBe(409);
    await new Promise((r) => setTimeout(r, 1_500)); // what a queued one would take to be skipped
    expect((await detail(plain.id)).status).toBe('delivered');
    expect(receiver.on('/portal-log')).toHaveLength(heard);
    expect((await admin.patch(`/api/settings/webhooks/${endpoint.id}`, { enabled: true })).status).toBe(200);
    expect((await admin.post(`/api/settings/deliveries/${plain.id}/redeliver`)).status).toBe(202);
  });
});

describe('Retry now', () => {
  it('re-sends a retrying delivery once: the retry that was waiting is dropped, so no second chain runs and it does not fail early', async () => {
    const { id, secret } = await addEndpoint('/portal-retry-now', ['client.created']);
    // The first answer asks for a retry in 2 s (a delayed message: the test stack's queueDelayMaxSeconds);
    // every later one in 60 s (parked, past this test).
    receiver.script('/portal-retry-now', secret, { status: 503, headers: { 'Retry-After': '2' } }, { status: 503, headers: { 'Retry-After': '60' } });
    const { delivery } = (await admin.post(`/api/settings/webhooks/${id}/test`)).json<{ delivery: Delivery }>();
    const firstAt = receiver.on('/portal-retry-now')[0].at;
    expect((await detail(delivery.id)).status).toBe('retrying');

    const retried = await admin.post(`/api/settings/deliveries/${delivery.id}/redeliver`);
    expect(retried.status).toBe(202);
    await eventually(async () => (await detail(delivery.id)).attempts.length === 2, { what: 'the Retry now attempt', intervalMs: 100 });
    // Past the first chain's retry (2 s after its attempt), with room for a loaded machine.
    await new Promise((r) => setTimeout(r, Math.max(0, firstAt + 7_000 - Date.now())));
    expect(receiver.on('/portal-retry-now')).toHaveLength(2);
    const after = await detail(delivery.id);
    expect({ status: after.status, attempts: after.attempts.map((a) => [a.number, a.manual]) }).toEqual({ status: 'retrying', attempts: [[1, false], [2, true]] });
  });
});

describe('Recover', () => {
  it('counts the failed deliveries since a time without queuing them, then queues them; the new attempt continues the numbering, marked manual', async () => {
    const { id, secret } = await addEndpoint('/portal-recover', ['client.created']);
    receiver.script('/portal-recover', secret, { status: 500, body: 'down' });
    const since = new Date(Date.now() - 60_000).toISOString();
    const { delivery } = (await admin.post(`/api/settings/webhooks/${id}/test`)).json<{ delivery: Delivery }>();
    const failed = await eventually(async () => {
      const d = await detail(delivery.id);
      return d.status === 'failed' && d;
    }, { what: 'the delivery failed', intervalMs: 250 });
    const attempts = failed.attempts.length;
    expect(failed.attempts.map((a) => [a.number, a.manual])).toEqual(failed.attempts.map((_, i) => [i + 1, false]));

    const heard = receiver.on('/portal-recover').length;
    const counted = await admin.post('/api/settings/deliveries/recover', { since, endpoint_id: id, dry_run: true });
    expect(counted.status).toBe(200);
    expect(counted.json()).toEqual({ count: 1, retrying: 0, dryRun: true });
    expect((await detail(delivery.id)).status).toBe('failed');

    receiver.script('/portal-recover', secret, { status: 200, body: 'back' });
    const queued = await admin.post('/api/settings/deliveries/recover', { since, endpoint_id: id });
    expect(queued.status).toBe(202);
    expect(queued.json()).toMatchObject({ count: 1 });
    const delivered = await eventually(async () => {
      const d = await detail(delivery.id);
      return d.status === 'delivered' && d;
    }, { what: 'the recovered delivery delivered' });
    expect(delivered.attempts.at(-1)).toMatchObject({ number: attempts + 1, attempt: 1, manual: true, statusCode: 200 });
    expect(receiver.on('/portal-recover').length).toBe(heard + 1);
    expect(receiver.on('/portal-recover').at(-1)!.verifyError).toBeUndefined();
  });

  it('leaves out the failed deliveries to a disabled endpoint and counts them, in the count and the run alike', async () => {
    const { id, secret } = await addEndpoint('/portal-recover-disabled', ['client.created']);
    receiver.script('/portal-recover-disabled', secret, { status: 500 });
    const since = new Date(Date.now() - 60_000).toISOString();
    const { delivery } = (await admin.post(`/api/settings/webhooks/${id}/test`)).json<{ delivery: Delivery }>();
    await eventually(async () => (await detail(delivery.id)).status === 'failed', { what: 'the delivery failed', intervalMs: 250 });
    expect((await admin.patch(`/api/settings/webhooks/${id}`, { enabled: false })).status).toBe(200);
    const heard = receiver.on('/portal-recover-disabled').length;
    const counted = await admin.post('/api/settings/deliveries/recover', { since, endpoint_id: id, dry_run: true });
    expect(counted.json()).toEqual({ count: 0, retrying: 0, endpointDisabled: 1, dryRun: true });
    const run = await admin.post('/api/settings/deliveries/redeliver', { endpoint: id });
    expect(run.json()).toEqual({ count: 0, retrying: 0, endpointDisabled: 1 });
    await new Promise((r) => setTimeout(r, 1_500));
    expect((await detail(delivery.id)).status).toBe('failed');
    expect(receiver.on('/portal-recover-disabled')).toHaveLength(heard);
  });

  it('refuses a missing or future time, an unknown field, and a bad dry_run, queuing nothing', async () => {
    const future = new Date(Date.now() + 3_600_000).toISOString();
    for (const body of [{}, { since: 'yesterday' }, { since: future }, { since: new Date().toISOString(), endpoint: 'ep_1' }, { since: new Date().toISOString(), dry_run: 'yes' }]) {
      const call = await admin.post('/api/settings/deliveries/recover', body);
      expect({ body, status: call.status }).toEqual({ body, status: 422 });
    }
  });
});

describe('keys and the request log', () => {
  it('shows a key by its last 4 characters, and logs a revoked key\'s refused call under its name, unbilled', async () => {
    const created = (await admin.post('/api/settings/keys', { name: 'Zapier' })).json<{ key: { id: string; last4: string; prefix: string }; secret: string }>();
    expect(created.key.last4).toBe(created.secret.slice(-4));
    expect(created.key.prefix).toBe(`crm_live_…${created.secret.slice(-4)}`);
    const { api } = await testStack();
    const usage = async () => (await admin.get('/api/settings')).json<{ usage: { today: { calls: number } }; revocationSeconds: number }>();
    const before = await usage();
    expect(before.revocationSeconds).toBe(1); // the test stack's keyCacheTtlSeconds

    expect((await admin.delete(`/api/settings/keys/${created.key.id}`)).status).toBe(200);
    await eventually(async () => (await api('/api/webhook/leads', { method: 'POST', headers: { 'X-API-Key': created.secret, 'Content-Type': 'application/json' }, body: '{"name":"x","email":"x@example.com"}' })).status === 401,
      { what: 'the revoked key refused' });
    const { requests } = (await admin.get('/api/settings/requests')).json<{ requests: { status: number; keyId: string; keyName: string; keyLast4: string; detail: string }[] }>();
    expect(requests.find((r) => r.status === 401)).toMatchObject({ keyId: created.key.id, keyName: 'Zapier', keyLast4: created.secret.slice(-4), detail: 'refused: the key is revoked' });
    expect((await usage()).usage.today.calls).toBe(before.usage.today.calls);
  });

  it(`logs at most ${MAX_REFUSED_LOGGED_PER_MINUTE} refused calls of one key a minute, and counts the rest`, async () => {
    const { organizationId, key } = await newTenant({ name: 'Refused Flood' });
    const owner = await settingsClient(organizationId);
    const { keys } = (await owner.get('/api/settings/keys')).json<{ keys: { id: string }[] }>();
    expect((await owner.delete(`/api/settings/keys/${keys[0].id}`)).status).toBe(200);
    const { api } = await testStack();
    const refuse = async () => (await api('/api/webhook/leads', { method: 'GET', headers: { 'X-API-Key': key } })).status;
    await eventually(async () => (await refuse()) === 401, { what: 'the revoked key refused' });
    const sent = 40;
    for (let i = 0; i < sent / 10; i++) expect(await Promise.all(Array.from({ length: 10 }, refuse))).toEqual(Array(10).fill(401));

    const counters = await itemsOf('requestLog', organizationId, 'REFUSED#');
    const counted = counters.reduce((n, c) => n + Number(c.count), 0);
    expect(counted).toBeGreaterThanOrEqual(sent); // plus the calls that waited for the cache to drop the key
    const logged = (await itemsOf('requestLog', organizationId, 'REQUEST#')).filter((r) => r.status === 401);
    // One minute's bound, or two if the calls straddled a minute.
    expect(logged.length).toBe(counters.reduce((n, c) => n + Math.min(Number(c.count), MAX_REFUSED_LOGGED_PER_MINUTE), 0));
    expect(logged.length).toBeLessThanOrEqual(counters.length * MAX_REFUSED_LOGGED_PER_MINUTE);
    expect(logged.length).toBeLessThan(counted);
  });
});

describe('the settings API and page at the front door', () => {
  it('answers without CORS headers and takes no preflight; the lead endpoint keeps both', async () => {
    const call = await admin.get('/api/settings/keys');
    expect(call.status).toBe(200);
    expect(call.headers.get('access-control-allow-origin')).toBeNull();
    expect((await settingsCall(undefined, 'GET', '/api/settings/keys')).headers.get('access-control-allow-origin')).toBeNull();
    const { api } = await testStack();
    const preflight = await api('/api/settings/keys', { method: 'OPTIONS', headers: { Origin: 'https://evil.example', 'Access-Control-Request-Method': 'POST' } });
    expect(preflight.status).toBe(405);
    expect(preflight.headers.get('access-control-allow-methods')).toBeNull();
    const lead = await api('/api/webhook/leads', { method: 'OPTIONS', headers: { Origin: 'https://shop.example', 'Access-Control-Request-Method': 'POST' } });
    expect(lead.status).toBe(204);
    expect(lead.headers.get('access-control-allow-origin')).toBe('*');
  });

  it('sends the page\'s modules and styles gzip-compressed to a client that accepts it, and as they are to one that does not', async () => {
    const { api } = await testStack();
    for (const asset of ['/settings/settings.css', '/settings/deliveries.js']) {
      const zipped = await api(asset, { headers: { 'Accept-Encoding': 'gzip, br' } });
      expect({ asset, encoding: zipped.headers.get('content-encoding'), vary: zipped.headers.get('vary') }).toEqual({ asset, encoding: 'gzip', vary: 'Accept-Encoding' });
      const text = await zipped.text(); // fetch inflates it
      const plain = await api(asset, { headers: { 'Accept-Encoding': 'identity' } });
      expect(plain.headers.get('content-encoding')).toBeNull();
      expect(await plain.text()).toBe(text);
    }
  });
});
