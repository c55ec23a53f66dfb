/**
 * API keys at the door of the lead endpoint (docs/api-keys.md): both header styles, every kind of bad key
 * refused with a 401 problem before any work, rotation with grace, revocation within the cache TTL
 * (1 s in the test stack), plan gating, and tenancy by construction.
 */
import { describe, it, expect } from '@jest/globals';
import { GetCommand, QueryCommand, type GetCommandInput } from '@aws-sdk/lib-dynamodb';
import { mockClient } from 'aws-sdk-client-mock';
import { keys } from '../../../functions/core/platform/model.js';
import { hashApiKey } from '../../../functions/core/tenancy/api-keys.js';
import { eventually, itemsOf, newTenant, ownDeps, postLead, testStack } from '../support/stack.js';
import { revokeApiKey, rotateApiKey } from '../../../functions/core/tenancy/api-keys.js';
import { authenticate, clearAuthCache } from '../../../functions/core/tenancy/authenticate.js';
import { DomainError } from '../../../functions/core/platform/errors.js';

const lead = { name: 'Grace Hopper', email: 'grace@example.com' };

async function getWith(headers: Record<string, string>): Promise<Response> {
  const { api } = await testStack();
  return api('/api/webhook/leads', { headers });
}

describe('authenticating with an API key', () => {
  it('accepts the key as X-API-Key and as a Bearer token, and GET describes the key', async () => {
    const t = await newTenant({ name: 'Hopper Heating' });
    const styles: Record<string, string>[] = [{ 'X-API-Key': t.key }, { Authorization: `Bearer ${t.key}` }];
    for (const headers of styles) {
      const res = await getWith(headers);
      expect(res.status).toBe(200);
      expect(await res.json()).toEqual({
        organization: { id: t.organizationId, name: 'Hopper Heating' },
        key: { id: t.keyId, name: 'test' },
        rate_limit: expect.objectContaining({ limit: 100, window_seconds: 60 }),
      });
    }
  });

  const badKeys: [string, Record<string, string>][] = [
    ['no key at all', {}],
    ['an empty X-API-Key', { 'X-API-Key': '' }],
    ['a malformed key', { 'X-API-Key': 'not-a-key' }],
    ['a Basic authorization header', { Authorization: 'Basic dXNlcjpwYXNz' }],
    ['a well-formed key nobody issued', { 'X-API-Key': 'crm_live_' + 'A'.repeat(32) }],
  ];
  it.each(badKeys)('refuses %s with a 401 problem and writes nothing', async (_what, headers) => {
    const { api } = await testStack();
    const t = await newTenant();
    const res = await api('/api/webhook/leads', { method: 'POST', headers: { 'Content-Type': 'application/json', ...headers }, body: JSON.stringify(lead) });
    expect(res.status).toBe(401);
    expect(res.headers.get('content-type')).toBe('application/problem+json');
    expect(res.headers.get('www-authenticate')).toContain('Bearer');
    expect(await res.json()).toMatchObject({ status: 401, title: 'Unauthorized', type: expect.stringContaining('unauthorized') });
    expect(await itemsOf('clients', t.organizationId)).toEqual([]);
  });

  it('keeps a rotated key working during the grace period and refuses it after', async () => {
    const { deps } = await testStack();
    const t = await newTenant();
    const rotated = await rotateApiKey(deps, t.organizationId, t.keyId, { graceHours: 3 / 3600 }); // 3 s
    expect((await postLead(t.key, lead)).status).toBe(201);
    expect((await postLead(rotated.key, lead)).status).toBe(201);
    await eventually(async () => (await postLead(t.key, lead)).status === 401, { what: 'the old key to expire', timeoutMs: 10_000, intervalMs: 500 });
    // Another body: the same one again within 10 minutes would be answered as a double-submit (200).
    expect((await postLead(rotated.key, { ...lead, notes: 'after the grace' })).status).toBe(201);
  });

  it('stops a revoked key within the cache TTL', async () => {
    const { deps } = await testStack();
    const t = await newTenant();
    expect((await postLead(t.key, lead)).status).toBe(201); // warms the cache
    await revokeApiKey(deps, t.organizationId, t.keyId);
    const started = Date.now();
    await eventually(async () => (await getWith({ 'X-API-Key': t.key })).status === 401, { what: 'the revoked key to be refused', timeoutMs: 5_000 });
    expect(Date.now() - started).toBeLessThan(deps.config.keyCacheTtlSeconds * 1000 + 2_000);
    const before = (await itemsOf('clients', t.organizationId)).length;
    expect((await postLead(t.key, lead)).status).toBe(401);
    expect(await itemsOf('clients', t.organizationId)).toHaveLength(before);
  });

  it('refuses a key revoked during its rotation grace, though its expiry is hours away', async () => {
    const { deps } = await testStack();
    const t = await newTenant();
    await rotateApiKey(deps, t.organizationId, t.keyId, { graceHours: 24 });
    expect((await getWith({ 'X-API-Key': t.key })).status).toBe(200);
    await revokeApiKey(deps, t.organizationId, t.keyId);
    const { Item } = await deps.doc.send(new GetCommand({ TableName: deps.tables.organizations, Key: keys.apiKeyByHash(hashApiKey(t.key)) }));
    expect(Date.parse(Item?.expiresAt)).toBeGreaterThan(Date.now() + 23 * 3_600_000); // only the revocation can refuse it
    await eventually(async () => (await getWith({ 'X-API-Key': t.key })).status === 401, { what: 'the revoked key to be refused', timeoutMs: 5_000 });
    expect(await (await getWith({ 'X-API-Key': t.key })).json()).toMatchObject({ detail: expect.stringContaining('revoked') });
  });

  it('stores no recoverable key material', async () => {
    const { deps } = await testStack();
    const t = await newTenant();
    const { Items = [] } = await deps.doc.send(new QueryCommand({
      TableName: deps.tables.organizations,
      IndexName: 'gsi1',
      KeyConditionExpression: 'gsi1pk = :p',
      ExpressionAttributeValues: { ':p': `ORG#${t.organizationId}#APIKEYS` },
    }));
    expect(Items).toHaveLength(1);
    const stored = JSON.stringify(Items);
    expect(stored).not.toContain(t.key);
    expect(stored).not.toContain(t.key.slice('crm_live_'.length, 20));
    expect(Items[0]).toMatchObject({ keyId: t.keyId, hash: expect.stringMatching(/^[0-9a-f]{64}$/) });
  });

  it('scopes a request to the key’s organization, whatever the body says', async () => {
    const a = await newTenant({ name: 'Org A' });
    const b = await newTenant({ name: 'Org B' });
    const res = await postLead(a.key, { ...lead, organization_id: b.organizationId, custom_fields: { organization_id: b.organizationId } });
    expect(res.status).toBe(201);
    const client = (await res.json()) as { id: string; organization_id: string };
    expect(client.organization_id).toBe(a.organizationId);
    expect((await itemsOf('clients', a.organizationId)).map((c) => c.id)).toEqual([client.id]);
    expect(await itemsOf('clients', b.organizationId)).toEqual([]);
  });

  it('refuses an organization whose plan is not allowed with 403', async () => {
    const { deps } = await testStack();
    const t = await newTenant({ plan: 'free' });
    const restricted = { ...deps, config: { ...deps.config, allowedPlans: ['pro', 'enterprise'] } };
    const error = await authenticate(restricted, { 'X-API-Key': t.key }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(DomainError);
    expect(error).toMatchObject({ status: 403, message: expect.stringContaining('pro, enterprise') });
    await expect(authenticate(deps, { 'X-API-Key': t.key })).resolves.toMatchObject({ organization: { id: t.organizationId } });
  });
});

describe('the key cache and the last-used write', () => {
  it('keeps a real key cached through a flood of unknown keys', async () => {
    clearAuthCache();
    const t = await newTenant();
    const base = await ownDeps();
    const deps = { ...base, config: { ...base.config, keyCacheTtlSeconds: 600, keyRevocationSeconds: 600 } }; // the flood must not outlast the TTL
    const realSend = deps.doc.send.bind(deps.doc) as (c: GetCommand) => Promise<unknown>;
    const realHash = hashApiKey(t.key);
    let realReads = 0;
    const mock = mockClient(deps.doc);
    mock.send.callThrough();
    // DynamoDB's answer for a key nobody issued (no item), without 11,000 round trips.
    mock.on(GetCommand).callsFake(async (input: GetCommandInput) => {
      const pk = String(input.Key?.pk);
      if (pk.startsWith('APIKEY#') && pk !== keys.apiKeyByHash(realHash).pk) return {};
      if (pk === keys.apiKeyByHash(realHash).pk) realReads += 1;
      return realSend(new GetCommand(input));
    });
    await authenticate(deps, { 'X-API-Key': t.key });
    let refused = 0;
    for (let i = 0; i < 11_000; i += 500) {
      const batch = Array.from({ length: 500 }, (_, j) => authenticate(deps, { 'X-API-Key': `crm_live_${String(i + j).padStart(32, '0')}` }));
      refused += (await Promise.allSettled(batch)).filter((r) => r.status === 'rejected' && (r.reason as DomainError).status === 401).length;
    }
    expect(refused).toBe(11_000);
    await authenticate(deps, { 'X-API-Key': t.key });
    expect(realReads).toBe(1);
    mock.restore();
  });

  it('re-reads a key it found every keyRevocationSeconds, however long keyCacheTtlSeconds is: a warm container refuses a revoked key within 5 s', async () => {
    clearAuthCache();
    const t = await newTenant();
    const base = await ownDeps();
    let now = Date.now();
    const deps = { ...base, now: () => now, config: { ...base.config, keyCacheTtlSeconds: 30, keyRevocationSeconds: 5 } };
    await authenticate(deps, { 'X-API-Key': t.key }); // the key is now in this container's cache
    await revokeApiKey(base, t.organizationId, t.keyId);
    now += 4_900;
    // Still the cached lookup: the container has not read the key again yet.
    await expect(authenticate(deps, { 'X-API-Key': t.key })).resolves.toMatchObject({ key: { keyId: t.keyId } });
    now += 200;
    await expect(authenticate(deps, { 'X-API-Key': t.key })).rejects.toMatchObject({ status: 401, message: 'The API key has been revoked.' });
  });

  it('records the key’s last use before the request is answered', async () => {
    clearAuthCache();
    const t = await newTenant();
    const deps = await ownDeps();
    // A slow write: a Lambda frozen after its response would never finish an unawaited one.
    deps.doc.middlewareStack.add((next, context) => async (args) => {
      if (context.commandName === 'UpdateItemCommand') await new Promise((r) => setTimeout(r, 300));
      return next(args);
    }, { step: 'initialize', name: 'slowUpdates' });
    await authenticate(deps, { 'X-API-Key': t.key });
    const { Item } = await deps.doc.send(new GetCommand({ TableName: deps.tables.organizations, Key: keys.apiKeyByHash(hashApiKey(t.key)), ConsistentRead: true }));
    expect(Item?.lastUsedAt).toEqual(expect.any(String));
  });
});
