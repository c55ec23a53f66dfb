/**
 * Publishable keys (docs/leads.md#lead-forms-in-public-pages-publishable-keys) over HTTP against the local stack: a key pasted into a public page
 * creates leads only from the origins listed on it, answers CORS with that origin, never reads
 * anything, holds each client address to its own window (the local gateway takes the address from
 * the socket, as API Gateway's sourceIp: these tests send from 127.0.0.2, .3 ... via localAddress),
 * stops at its daily cap, and takes plain no-script form posts.
 */
import { describe, it, expect } from '@jest/globals';
import { createOrganization, dailyUsage, getOrganization } from '../../../functions/core/tenancy/organizations.js';
import { createApiKey } from '../../../functions/core/tenancy/api-keys.js';
import { listRequests } from '../../../functions/core/settings/request-log-read.js';
import { eventually, itemsOf, postLead, runCli, testStack } from '../support/stack.js';
import { givenPublishableKey, postFromPage, send, type PublicTenant } from '../support/public-forms.js';

const SHOP = 'https://shop.example';

/** Nothing written (no client) and nothing billed (wallet and usage unchanged) for the organization. */
async function expectNothingWrittenOrBilled(t: PublicTenant, walletMicros: number): Promise<void> {
  const { deps } = await testStack();
  expect(await itemsOf('clients', t.organizationId)).toEqual([]);
  expect((await getOrganization(deps, t.organizationId))?.walletMicros).toBe(walletMicros);
  expect(await dailyUsage(deps, t.organizationId, new Date().toISOString().slice(0, 10))).toEqual({ calls: 0, billedMicros: 0 });
}

/** Distinct client addresses for each test, so no two tests share a per-address window. */
let nextAddress = 10;
const freshAddress = () => `127.0.0.${nextAddress++}`;

describe('a publishable key from a page of an allowed origin', () => {
  it('creates the lead, bills it, and answers CORS with that origin (not *)', async () => {
    const { deps } = await testStack();
    const t = await givenPublishableKey({}, { billing: 'prepaid', walletMicros: 1_000_000 });
    const res = await postFromPage(t.key, { name: 'Ada Lovelace', email: 'ada@example.com' }, { origin: SHOP, from: freshAddress() });
    expect(res.status).toBe(201);
    expect(res.headers['access-control-allow-origin']).toBe(SHOP);
    expect(res.headers.vary).toBe('Origin');
    expect(res.headers['access-control-expose-headers']).toContain('Retry-After');

    const [client] = await itemsOf('clients', t.organizationId);
    expect(client).toMatchObject({ id: res.json().id, status: 'lead', first_name: 'Ada', last_name: 'Lovelace', email: 'ada@example.com' });
    expect((await getOrganization(deps, t.organizationId))?.walletMicros).toBe(1_000_000 - deps.config.pricePerCallMicros);
  });

  it('a secret key keeps working from a server: no Origin needed, CORS stays *', async () => {
    const { deps } = await testStack();
    const org = await createOrganization(deps, { name: 'Server Side Co' });
    const { key } = await createApiKey(deps, org.id, 'zapier');
    const res = await postLead(key, { name: 'Server Lead' });
    expect(res.status).toBe(201);
    expect(res.headers.get('access-control-allow-origin')).toBe('*');
  });
});

describe('a publishable key is refused (403, nothing written or billed, the request logged)', () => {
  it.each([
    ['another origin', 'https://evil.example', 'origin-not-allowed', /evil\.example is not allowed/],
    ['a look-alike origin', 'https://shop.example.evil.example', 'origin-not-allowed', /not allowed/],
    ['http instead of https', 'http://shop.example', 'origin-not-allowed', /not allowed/],
    ['no Origin at all (not a browser page)', undefined, 'origin-required', /no Origin header/],
  ])('from %s', async (_what, origin, slug, detail) => {
    const { deps } = await testStack();
    const t = await givenPublishableKey({}, { billing: 'prepaid', walletMicros: 500_000 });
    const res = await postFromPage(t.key, { name: 'Spam Bot' }, { origin, from: freshAddress() });
    expect(res.status).toBe(403);
    expect(res.headers['content-type']).toBe('application/problem+json');
    expect(res.json()).toMatchObject({ status: 403, type: expect.stringContaining(slug), detail: expect.stringMatching(detail) });
    expect(res.headers['access-control-allow-origin']).toBe('*'); // the page's developer can read why
    await expectNothingWrittenOrBilled(t, 500_000);
    const logged = await eventually(async () => (await listRequests(deps, t.organizationId)).find((r) => r.status === 403), { what: 'the refused request in the log' });
    expect(logged).toMatchObject({ keyId: t.keyId, method: 'POST' });
  });

  it('on GET, even from an allowed origin: a page key reads nothing (not even the organization name)', async () => {
    const t = await givenPublishableKey();
    const res = await send('GET', { 'X-API-Key': t.key, Origin: SHOP }, undefined, freshAddress());
    expect(res.status).toBe(403);
    expect(res.json()).toMatchObject({ type: expect.stringContaining('publishable-key-post-only') });
    expect(res.text).not.toContain('Shop Plumbing');
  });

  it('after revocation, like any key (401)', async () => {
    const t = await givenPublishableKey();
    const revoke = await runCli(['keys', 'revoke', '--org', t.organizationId, '--key', t.keyId]);
    expect(revoke.code).toBe(0);
    await eventually(async () => (await postFromPage(t.key, { name: 'Late' }, { origin: SHOP, from: freshAddress() })).status === 401, { what: 'the revoked key refused' });
  });
});

describe('the per-client-address window (default 5 leads a minute per address per key)', () => {
  it('admits 5 from one address, refuses the 6th with 429 and Retry-After, and another address is unaffected', async () => {
    const t = await givenPublishableKey();
    const [one, other] = [freshAddress(), freshAddress()];
    const statuses = [];
    for (let i = 0; i < 5; i++) statuses.push((await postFromPage(t.key, { name: `Visitor ${i}` }, { origin: SHOP, from: one })).status);
    expect(statuses).toEqual([201, 201, 201, 201, 201]);

    const refused = await postFromPage(t.key, { name: 'Visitor 6' }, { origin: SHOP, from: one });
    expect(refused.status).toBe(429);
    expect(refused.json()).toMatchObject({ type: expect.stringContaining('rate-limited-address'), detail: expect.stringContaining('5 a minute per address') });
    const retryAfter = Number(refused.headers['retry-after']);
    expect(Number.isInteger(retryAfter) && retryAfter >= 1 && retryAfter <= 120).toBe(true);
    expect(refused.headers['ratelimit-policy']).toBe('5;w=60');
    expect(refused.headers['access-control-allow-origin']).toBe(SHOP); // the page can read Retry-After

    expect((await postFromPage(t.key, { name: 'Neighbour' }, { origin: SHOP, from: other })).status).toBe(201);
    expect(await itemsOf('clients', t.organizationId)).toHaveLength(6);
  });

  it('a key’s own per-address limit applies, and the key’s per-minute limit still counts every address', async () => {
    const t = await givenPublishableKey({ perIpLimit: 2 }, { rateLimitPerMinute: 3 });
    const from = freshAddress();
    const seen = [];
    for (let i = 0; i < 3; i++) seen.push((await postFromPage(t.key, { name: `V${i}` }, { origin: SHOP, from })).status);
    expect(seen).toEqual([201, 201, 429]);
    const second = freshAddress();
    expect((await postFromPage(t.key, { name: 'B1' }, { origin: SHOP, from: second })).status).toBe(201);
    const perKey = await postFromPage(t.key, { name: 'B2' }, { origin: SHOP, from: second });
    expect(perKey.status).toBe(429);
    expect(perKey.json()).toMatchObject({ type: expect.stringMatching(/\/rate-limited$/) });
  });
});

describe('the daily cap of billed calls', () => {
  it('creates up to the cap, then 429 until the next UTC day; refused leads do not use it up', async () => {
    const t = await givenPublishableKey({ dailyCap: 2, perIpLimit: 100 }, { billing: 'prepaid', walletMicros: 1_000_000 });
    const from = freshAddress();
    expect((await postFromPage(t.key, { email: 'no-name@example.com' }, { origin: SHOP, from })).status).toBe(422);
    expect((await postFromPage(t.key, { name: 'First' }, { origin: SHOP, from })).status).toBe(201);
    expect((await postFromPage(t.key, { name: 'Second' }, { origin: SHOP, from })).status).toBe(201);
    const capped = await postFromPage(t.key, { name: 'Third' }, { origin: SHOP, from });
    expect(capped.status).toBe(429);
    expect(capped.json()).toMatchObject({ type: expect.stringContaining('daily-cap-reached'), detail: expect.stringContaining('daily cap of 2') });
    const untilMidnight = Math.ceil((Math.ceil(Date.now() / 86_400_000) * 86_400_000 - Date.now()) / 1000);
    expect(Math.abs(Number(capped.headers['retry-after']) - untilMidnight)).toBeLessThanOrEqual(5);
    expect(await itemsOf('clients', t.organizationId)).toHaveLength(2);
    const { deps } = await testStack();
    expect((await getOrganization(deps, t.organizationId))?.walletMicros).toBe(1_000_000 - 2 * deps.config.pricePerCallMicros);
  });
});

describe('no-script forms: application/x-www-form-urlencoded', () => {
  const form = (fields: Record<string, string>) => new URLSearchParams(fields).toString();
  const postForm = (fields: Record<string, string>, headers: Record<string, string> = { Origin: SHOP }, from = freshAddress()) =>
    send('POST', { 'Content-Type': 'application/x-www-form-urlencoded', ...headers }, form(fields), from);

  it('creates the lead from the form’s fields (the key in api_key) and answers 303 to the thank-you URL', async () => {
    const t = await givenPublishableKey({ thankYouUrl: `${SHOP}/thanks` });
    const res = await postForm({ api_key: t.key, name: 'Grace Hopper', email: 'Grace@Example.com', phone: '+1 415 555 0100', sms_consent: 'true', sms_consent_source: 'Form at shop.example', website: '' });
    expect(res.status).toBe(303);
    expect(res.headers.location).toBe(`${SHOP}/thanks`);
    const [client] = await itemsOf('clients', t.organizationId);
    expect(client).toMatchObject({ first_name: 'Grace', last_name: 'Hopper', email: 'grace@example.com', phone: '+14155550100', sms_consent: true });
    // The key, the honeypot and the token fields are never stored with the lead.
    expect(JSON.stringify(client)).not.toContain(t.key);
    expect(client.custom_fields).toBeUndefined();
    // The client is its request's row and records the 303 it was answered: no REQUEST# row (docs/settings.md "Request log").
    expect(client).toMatchObject({ request_id: expect.any(String), key_id: t.keyId, request_status: 303 });
    const { deps } = await testStack();
    expect((await listRequests(deps, t.organizationId)).map((r) => [r.status, r.clientId, r.requestId])).toEqual([[303, client.id, client.request_id]]);
    expect(await itemsOf('requestLog', t.organizationId, 'REQUEST#')).toEqual([]);
  });

  it('without a thank-you URL, answers a small HTML “Thank you” page', async () => {
    const t = await givenPublishableKey();
    const res = await postForm({ api_key: t.key, name: 'No Redirect' });
    expect(res.status).toBe(201);
    expect(res.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(res.headers['content-security-policy']).toContain("default-src 'none'");
    expect(res.text).toContain('Thank you');
    // A 201: the client it created is its request's row.
    const [client] = await itemsOf('clients', t.organizationId);
    const { deps } = await testStack();
    expect((await listRequests(deps, t.organizationId)).map((r) => [r.status, r.clientId, r.requestId])).toEqual([[201, client.id, client.request_id]]);
    expect(await itemsOf('requestLog', t.organizationId, 'REQUEST#')).toEqual([]);
  });

  it('errors come back as an HTML page with the problem’s status, and as problem+json when JSON is asked for', async () => {
    const t = await givenPublishableKey();
    const page = await postForm({ api_key: t.key, email: 'not-an-email', name: '<script>alert(1)</script>' });
    expect(page.status).toBe(422);
    expect(page.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(page.text).toContain('email: must be a valid e-mail address');
    expect(page.text).not.toContain('<script>alert(1)');

    const foreign = await postForm({ api_key: t.key, name: 'X' }, { Origin: 'https://evil.example', Accept: 'application/problem+json' });
    expect(foreign.status).toBe(403);
    expect(foreign.json()).toMatchObject({ type: expect.stringContaining('origin-not-allowed') });
    expect(await itemsOf('clients', t.organizationId)).toEqual([]);
  });

  it('is refused from secret keys: 415 with a header key, 403 when the secret key sits in the form', async () => {
    const { deps } = await testStack();
    const org = await createOrganization(deps, { name: 'Secret Only' });
    const { key, record } = await createApiKey(deps, org.id, 'server');
    // A key header means a program, not a plain form: problem+json, not a page.
    const withHeader = await postForm({ name: 'X' }, { 'X-API-Key': key });
    expect(withHeader.status).toBe(415);
    expect(withHeader.headers['content-type']).toBe('application/problem+json');
    const inForm = await postForm({ api_key: key, name: 'X' }, { Accept: 'application/json' });
    expect(inForm.status).toBe(403);
    expect(inForm.json()).toMatchObject({ detail: expect.stringContaining('revoke it') });
    expect(await itemsOf('clients', org.id)).toEqual([]);
    // Its owner sees it: the refusal is recorded under the organization, naming the exposed key.
    const logged = await eventually(async () => (await listRequests(deps, org.id)).find((r) => r.status === 403), { what: 'the refusal in the request log' });
    expect(logged).toMatchObject({ keyId: record.keyId, outcome: 'secret-key-exposed' });
    expect(JSON.stringify(inForm.json())).not.toContain(record.keyId);
  });
});

describe('the CLI', () => {
  it('creates a publishable key with its origins and lists its kind and origins', async () => {
    const { deps } = await testStack();
    const org = await createOrganization(deps, { name: 'CLI Shop' });
    const created = await runCli(['keys', 'create', '--org', org.id, '--name', 'site', '--publishable', '--origin', 'https://a.example', '--origin', 'https://b.example/', '--thank-you-url', 'https://a.example/thanks', '--daily-cap', '50']);
    expect(created.code).toBe(0);
    expect(created.json()).toMatchObject({ key: expect.stringMatching(/^crm_pub_/), kind: 'publishable', origins: ['https://a.example', 'https://b.example'], thankYouUrl: 'https://a.example/thanks', dailyCap: 50 });
    const listed = await runCli(['keys', 'list', '--org', org.id], { json: false });
    expect(listed.stdout).toMatch(/KIND\s+ORIGINS/);
    expect(listed.stdout).toContain('publishable  https://a.example https://b.example');

    // Rotation issues a drop-in replacement: the same kind and policy.
    const keyId = created.json<{ keyId: string }>().keyId;
    const rotated = await runCli(['keys', 'rotate', '--org', org.id, '--key', keyId, '--grace', '0']);
    expect(rotated.code).toBe(0);
    expect(rotated.json()).toMatchObject({ key: expect.stringMatching(/^crm_pub_/), kind: 'publishable', origins: ['https://a.example', 'https://b.example'], dailyCap: 50 });

    const bad = await runCli(['keys', 'create', '--org', org.id, '--publishable', '--origin', 'http://shop.example']);
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toContain('must use https');
    // Without a daily cap, the human output says what bounds a day's cost and how to set one.
    const uncapped = await runCli(['keys', 'create', '--org', org.id, '--name', 'site2', '--publishable', '--origin', 'https://a.example'], { json: false });
    expect(uncapped.code).toBe(0);
    expect(uncapped.stdout).toContain('the stage\'s default');
    expect(uncapped.stdout).toContain('--daily-cap <n>');
    const noOrigin = await runCli(['keys', 'create', '--org', org.id, '--publishable']);
    expect(noOrigin.code).toBe(2);
    expect(noOrigin.stderr).toContain('--origin');
  }, 120_000); // six CLI processes
});
