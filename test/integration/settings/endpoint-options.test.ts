/**
 * An endpoint's custom headers and rate limit through the settings API (docs/settings.md,
 * docs/webhooks.md "Custom headers", "Rate limit"): set, shown masked, sent on a test event to a
 * real receiver (verified with standardwebhooks) and kept out of the attempt log; each bad input a
 * 422 naming it with nothing written; concurrent edits keep each other's headers and the bound;
 * another organization's endpoint is a 404.
 */
import { describe, it, expect, beforeAll, afterAll } from '@jest/globals';
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { newTenant, testStack } from '../support/stack.js';
import { Receiver } from '../support/receiver.js';
import { keys } from '../../../functions/core/platform/model.js';
import { listAudit } from '../../../functions/core/settings/audit-log.js';
import { settingsClient } from './support.js';

let receiver: Receiver;
beforeAll(async () => {
  receiver = await new Receiver().start();
});
afterAll(async () => {
  await receiver.stop();
});

interface Endpoint { id: string; url: string; headers: Record<string, string>; rateLimitPerSecond: number | null }
interface Problem { status: number; errors?: { field: string; message: string }[] }

const TOKEN = 'Bearer rk_live_4f7a9c2e1b8d6f3a';

async function endpointOf(path: string) {
  const { organizationId } = await newTenant({ name: `Options ${path}` });
  const admin = await settingsClient(organizationId, 'dana');
  const added = (await admin.post('/api/settings/webhooks', { url: `${receiver.url}${path}`, events: ['client.created'] })).json<{ endpoint: Endpoint; secret: string }>();
  receiver.script(path, added.secret, { status: 204 });
  return { organizationId, admin, endpoint: added.endpoint, secret: added.secret };
}

/** The endpoint item as stored (the values the API never returns). */
async function stored(organizationId: string, endpointId: string) {
  const { deps } = await testStack();
  const { Item } = await deps.doc.send(new GetCommand({ TableName: deps.tables.endpoints, Key: keys.endpoint(organizationId, endpointId), ConsistentRead: true }));
  return Item!;
}

describe('custom headers and a rate limit in the settings API', () => {
  it('sets them; answers and lists the values masked; a test event carries the header, the attempt log does not keep its value', async () => {
    const { organizationId, admin, endpoint } = await endpointOf('/options-ok');
    expect(endpoint).toMatchObject({ headers: {}, rateLimitPerSecond: null });
    const patched = await admin.patch(`/api/settings/webhooks/${endpoint.id}`, { headers: { Authorization: TOKEN, 'X-Tenant': 'acme' }, rate_limit_per_second: 5 });
    expect(patched.status).toBe(200);
    expect(patched.json<{ endpoint: Endpoint }>().endpoint).toMatchObject({ headers: { authorization: '••••6f3a', 'x-tenant': '••••' }, rateLimitPerSecond: 5 });
    expect(patched.text).not.toContain('rk_live');
    const listed = await admin.get('/api/settings/webhooks');
    expect(listed.json<{ endpoints: Endpoint[] }>().endpoints[0]).toMatchObject({ headers: { authorization: '••••6f3a', 'x-tenant': '••••' }, rateLimitPerSecond: 5 });
    expect(listed.text).not.toContain('rk_live');
    expect(listed.text).not.toContain('acme');
    expect(await stored(organizationId, endpoint.id)).toMatchObject({ headers: { authorization: TOKEN, 'x-tenant': 'acme' }, rateLimitPerSecond: 5 });

    const tested = (await admin.post(`/api/settings/webhooks/${endpoint.id}/test`)).json<{ delivery: { id: string; status: string; attempts: { requestHeaders: Record<string, string> }[] } }>().delivery;
    expect(tested.status).toBe('delivered');
    const [received] = receiver.on('/options-ok');
    expect(received.verifyError).toBeUndefined();
    expect(received.event).toMatchObject({ type: 'webhook.test' });
    expect(received.headers).toMatchObject({ authorization: TOKEN, 'x-tenant': 'acme', 'content-type': 'application/json' });
    const detail = await admin.get(`/api/settings/deliveries/${tested.id}`);
    expect(detail.json<{ delivery: { attempts: { requestHeaders: Record<string, string> }[] } }>().delivery.attempts[0].requestHeaders).toMatchObject({ authorization: '(not kept)', 'x-tenant': '(not kept)' });
    expect(detail.text).not.toContain('rk_live');

    // The audit log names the headers, never their values.
    const audit = await listAudit((await testStack()).deps, organizationId);
    const updated = audit.find((e) => e.action === 'endpoint.updated')!;
    expect(updated.detail).toMatchObject({ headers: ['authorization', 'x-tenant'], rateLimitPerSecond: 5 });
    expect(JSON.stringify(audit)).not.toContain('rk_live');
  });

  it('null removes one header and keeps the others; null lifts the rate limit', async () => {
    const { organizationId, admin, endpoint } = await endpointOf('/options-remove');
    await admin.patch(`/api/settings/webhooks/${endpoint.id}`, { headers: { 'X-One': '1', 'X-Two': '2' }, rate_limit_per_second: 3 });
    const patched = await admin.patch(`/api/settings/webhooks/${endpoint.id}`, { headers: { 'x-one': null }, rate_limit_per_second: null });
    expect(patched.json<{ endpoint: Endpoint }>().endpoint).toMatchObject({ headers: { 'x-two': '••••' }, rateLimitPerSecond: null });
    const item = await stored(organizationId, endpoint.id);
    expect(item.headers).toEqual({ 'x-two': '2' });
    expect(item.rateLimitPerSecond).toBeUndefined();
    // Removing one that is not there (another admin removed it first) changes nothing else.
    const again = await admin.patch(`/api/settings/webhooks/${endpoint.id}`, { headers: { 'x-one': null }, description: 'kept' });
    expect(again.status).toBe(200);
    expect(await stored(organizationId, endpoint.id)).toMatchObject({ headers: { 'x-two': '2' }, description: 'kept' });
  });

  it.each([
    ['a name that is not a token', { headers: { 'X Foo': 'bar' } }, 'headers.X Foo', /not a header name/],
    ['a name with a colon', { headers: { 'X-Foo:': 'bar' } }, 'headers.X-Foo:', /not a header name/],
    ['a value with a line break', { headers: { 'X-Foo': 'bar\r\nX-Injected: 1' } }, 'headers.X-Foo', /printable/],
    ['a value with a control character', { headers: { 'X-Foo': 'a\u0000b' } }, 'headers.X-Foo', /printable/],
    ['a value that is not text', { headers: { 'X-Foo': 5 } }, 'headers.X-Foo', /must be text/],
    ['an empty value', { headers: { 'X-Foo': '' } }, 'headers.X-Foo', /printable/],
    ['a value too long', { headers: { 'X-Foo': 'a'.repeat(1001) } }, 'headers.X-Foo', /1 to 1000/],
    ['a name given twice', { headers: { 'X-Foo': 'a', 'x-foo': 'b' } }, 'headers.x-foo', /twice/],
    ['headers that are not an object', { headers: ['X-Foo: bar'] }, 'headers', /object/],
    ['more than 10 headers', { headers: Object.fromEntries(Array.from({ length: 11 }, (_, i) => [`X-H${i}`, 'v'])) }, 'headers', /at most 10/],
    ['a rate of 0', { rate_limit_per_second: 0 }, 'rate_limit_per_second', /whole number/],
    ['a negative rate', { rate_limit_per_second: -2 }, 'rate_limit_per_second', /whole number/],
    ['a fractional rate', { rate_limit_per_second: 2.5 }, 'rate_limit_per_second', /whole number/],
    ['a rate as text', { rate_limit_per_second: '5' }, 'rate_limit_per_second', /whole number/],
    ['a rate over 100', { rate_limit_per_second: 101 }, 'rate_limit_per_second', /1 to 100/],
  ])('refuses %s with a 422 naming it, and writes nothing', async (_what, body, field, message) => {
    const { organizationId, admin, endpoint } = await endpointOf('/options-bad');
    const before = await stored(organizationId, endpoint.id);
    const answer = await admin.patch(`/api/settings/webhooks/${endpoint.id}`, { ...body, description: 'changed' });
    expect(answer.status).toBe(422);
    expect(answer.json<Problem>().errors).toEqual(expect.arrayContaining([{ field, message: expect.stringMatching(message) }]));
    expect(await stored(organizationId, endpoint.id)).toEqual(before);
  });

  it.each(['webhook-id', 'Webhook-Signature', 'webhook-timestamp', 'Content-Type', 'content-length', 'Host', 'User-Agent', 'Connection', 'Transfer-Encoding', 'Keep-Alive', 'Upgrade', 'TE', 'Proxy-Authorization'])(
    'refuses the reserved header %s, naming it', async (name) => {
      const { organizationId, admin, endpoint } = await endpointOf('/options-reserved');
      const answer = await admin.patch(`/api/settings/webhooks/${endpoint.id}`, { headers: { [name]: 'x', 'X-Fine': 'ok' } });
      expect(answer.status).toBe(422);
      expect(answer.json<Problem>().errors).toEqual([{ field: `headers.${name}`, message: expect.stringContaining(`"${name.toLowerCase()}" is reserved`) }]);
      expect((await stored(organizationId, endpoint.id)).headers).toEqual({});
    });

  it('a new endpoint takes them too, validated alike', async () => {
    const { organizationId } = await newTenant({ name: 'Options add' });
    const admin = await settingsClient(organizationId);
    const refused = await admin.post('/api/settings/webhooks', { url: `${receiver.url}/options-add`, events: ['client.created'], headers: { host: 'evil.example' }, rate_limit_per_second: 0 });
    expect(refused.status).toBe(422);
    expect(refused.json<Problem>().errors!.map((e) => e.field).sort()).toEqual(['headers.host', 'rate_limit_per_second']);
    expect((await admin.get('/api/settings/webhooks')).json<{ endpoints: Endpoint[] }>().endpoints).toEqual([]);
    const added = await admin.post('/api/settings/webhooks', { url: `${receiver.url}/options-add`, events: ['client.created'], headers: { 'X-Key': 'k' }, rate_limit_per_second: 2 });
    expect(added.status).toBe(201);
    expect(added.json<{ endpoint: Endpoint }>().endpoint).toMatchObject({ headers: { 'x-key': '••••' }, rateLimitPerSecond: 2 });
    // Audited as an update is: the header names and the limit, never a value.
    const audit = await listAudit((await testStack()).deps, organizationId);
    expect(audit.find((e) => e.action === 'endpoint.created')!.detail).toMatchObject({ headers: ['x-key'], rateLimitPerSecond: 2 });
    expect(JSON.stringify(audit.map((e) => e.detail))).not.toMatch(/"k"/);
  });

  it('a new URL on another host needs the header values again: a settings link cannot send them elsewhere, nor read an echo of them back', async () => {
    const { organizationId, admin, endpoint } = await endpointOf('/options-move');
    expect((await admin.patch(`/api/settings/webhooks/${endpoint.id}`, { headers: { Authorization: TOKEN, 'X-Tenant': 'acme' } })).status).toBe(200);
    const elsewhere = await new Receiver().start(); // another port: another origin
    try {
      // Only the URL: refused, nothing changed, the headers named.
      const moved = await admin.patch(`/api/settings/webhooks/${endpoint.id}`, { url: `${elsewhere.url}/stolen` });
      expect(moved.status).toBe(422);
      const [error] = moved.json<Problem>().errors!;
      expect(error.field).toBe('headers');
      expect(error.message).toMatch(/another host.*authorization, x-tenant/);
      expect(await stored(organizationId, endpoint.id)).toMatchObject({ url: `${receiver.url}/options-move`, headers: { authorization: TOKEN } });
      // Naming one header is not enough.
      expect((await admin.patch(`/api/settings/webhooks/${endpoint.id}`, { url: `${elsewhere.url}/stolen`, headers: { 'X-Tenant': null } })).status).toBe(422);
      // Keeping them is for the same origin only.
      expect((await admin.patch(`/api/settings/webhooks/${endpoint.id}`, { url: `${elsewhere.url}/stolen`, keep_headers: true })).status).toBe(422);
      // Another path on the same origin (a catch-hook service's) needs them again too, unless the request keeps them, audited.
      const samePath = await admin.patch(`/api/settings/webhooks/${endpoint.id}`, { url: `${receiver.url}/options-moved` });
      expect(samePath.status).toBe(422);
      expect(samePath.json<Problem>().errors![0]).toMatchObject({ field: 'headers', message: expect.stringMatching(/URL changes.*keep_headers: true: authorization, x-tenant/) });
      expect(await stored(organizationId, endpoint.id)).toMatchObject({ url: `${receiver.url}/options-move` });
      expect((await admin.patch(`/api/settings/webhooks/${endpoint.id}`, { url: `${receiver.url}/options-moved`, keep_headers: true })).status).toBe(200);
      expect(await stored(organizationId, endpoint.id)).toMatchObject({ url: `${receiver.url}/options-moved`, headers: { authorization: TOKEN, 'x-tenant': 'acme' } });
      const kept = (await listAudit((await testStack()).deps, organizationId)).find((e) => e.action === 'endpoint.updated' && (e.detail as { keptHeaders?: boolean }).keptHeaders);
      expect(kept?.detail).toMatchObject({ url: `${receiver.url}/options-moved`, keptHeaders: true });

      // Each header set again or removed: moved. The new host gets the new value only, and echoes it back in its answer.
      const fresh = 'Bearer rk_live_0a1b2c3d4e5f6a7b';
      const secret = (await stored(organizationId, endpoint.id)).secrets[0].secret as string;
      elsewhere.script('/echo', secret, { status: 200, headers: { 'x-echo': fresh, 'x-seen-secret': secret }, body: JSON.stringify({ headers: { authorization: fresh }, secret }) });
      const ok = await admin.patch(`/api/settings/webhooks/${endpoint.id}`, { url: `${elsewhere.url}/echo`, headers: { Authorization: fresh, 'X-Tenant': null } });
      expect(ok.status).toBe(200);
      const tested = await admin.post(`/api/settings/webhooks/${endpoint.id}/test`);
      expect(tested.status).toBe(200);
      const [received] = elsewhere.on('/echo');
      expect(received.headers.authorization).toBe(fresh);
      expect(received.headers['x-tenant']).toBeUndefined();
      const delivery = tested.json<{ delivery: { id: string; attempts: { responseExcerpt: string | null; responseHeaders: Record<string, string> | null }[] } }>().delivery;
      expect(delivery.attempts[0].responseExcerpt).toContain('(redacted)');
      expect(delivery.attempts[0].responseHeaders).toMatchObject({ 'x-echo': '(redacted)' });
      const detail = await admin.get(`/api/settings/deliveries/${delivery.id}`);
      for (const text of [tested.text, detail.text]) {
        expect(text).not.toContain('rk_live');
        expect(text).not.toContain(secret.replace(/^whsec_/, ''));
      }
    } finally {
      await elsewhere.stop();
    }
  });

  it('two admins adding headers at once keep both; past the bound the later one is refused, never 11 stored', async () => {
    const { organizationId, admin, endpoint } = await endpointOf('/options-race');
    const other = await settingsClient(organizationId, 'erin');
    const [one, two] = await Promise.all([
      admin.patch(`/api/settings/webhooks/${endpoint.id}`, { headers: { 'X-From-Dana': 'd' } }),
      other.patch(`/api/settings/webhooks/${endpoint.id}`, { headers: { 'X-From-Erin': 'e' }, description: 'erin was here' }),
    ]);
    expect([one.status, two.status]).toEqual([200, 200]);
    expect((await stored(organizationId, endpoint.id)).headers).toEqual({ 'x-from-dana': 'd', 'x-from-erin': 'e' });

    const six = (who: string) => Object.fromEntries(Array.from({ length: 6 }, (_, i) => [`X-${who}-${i}`, 'v']));
    const answers = await Promise.all([admin.patch(`/api/settings/webhooks/${endpoint.id}`, { headers: six('a') }), other.patch(`/api/settings/webhooks/${endpoint.id}`, { headers: six('b') })]);
    expect(answers.map((a) => a.status).sort()).toEqual([200, 422]);
    expect(Object.keys((await stored(organizationId, endpoint.id)).headers)).toHaveLength(8);
  });

  it('another organization\'s endpoint is a 404, and its headers stay as they were', async () => {
    const b = await endpointOf('/options-b');
    await b.admin.patch(`/api/settings/webhooks/${b.endpoint.id}`, { headers: { 'X-B': 'b-secret' } });
    const { organizationId: aOrg } = await newTenant({ name: 'Options A' });
    const adminA = await settingsClient(aOrg);
    const answer = await adminA.patch(`/api/settings/webhooks/${b.endpoint.id}`, { headers: { 'X-B': null, 'X-A': 'a' }, rate_limit_per_second: 1 });
    expect(answer.status).toBe(404);
    const item = await stored(b.organizationId, b.endpoint.id);
    expect(item.headers).toEqual({ 'x-b': 'b-secret' });
    expect(item.rateLimitPerSecond).toBeUndefined();
  });
});
