/**
 * API keys at the door of the lead endpoint (docs/api-keys.md), over HTTP: both header styles, every
 * kind of bad key refused with a 401 problem before any work, a revoked key refused within the cache
 * TTL (1 s in the test stack), no key material stored, and tenancy by construction.
 * The key lifecycle without HTTP runs on the keys store's twin (test/unit/tenancy/key-lifecycle.test.ts),
 * moved from here: rotation with grace then expiry, revocation during a grace, plan gating (403), the
 * key cache through a flood of unknown keys, re-reading a found key every keyRevocationSeconds, and
 * the last-used write before the answer.
 */
import { describe, it, expect } from '@jest/globals';
import { QueryCommand } from '@aws-sdk/lib-dynamodb';
import { eventually, itemsOf, newTenant, postLead, testStack } from '../support/stack.js';
import { revokeApiKey } from '../../../functions/core/tenancy/api-keys.js';

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
});
