/**
 * An admin manages API keys in the settings API, and the lead endpoint honours each change:
 * generate → works; rotate → both work during the grace; revoke → 401. Every change is in the audit
 * log with the acting user.
 */
import { describe, it, expect } from '@jest/globals';
import { eventually, newTenant, testStack } from '../support/stack.js';
import { listAudit } from '../../../functions/core/settings/audit-log.js';
import { settingsClient } from './support.js';

const leadEndpointStatus = async (key: string) => (await (await testStack()).api('/api/webhook/leads', { headers: { 'X-API-Key': key } })).status;

interface KeyView { id: string; name: string; kind: string; prefix: string; last4: string | null; status: string; expiresAt: string | null; lastUsedAt: string | null }

describe('API keys in the settings API', () => {
  it('generate, rotate with grace, revoke: the lead endpoint follows each step', async () => {
    const { organizationId } = await newTenant();
    const admin = await settingsClient(organizationId, 'alice');

    const created = await admin.post('/api/settings/keys', { name: 'Website form' });
    expect(created.status).toBe(201);
    const { key, secret } = created.json<{ key: KeyView; secret: string }>();
    expect(secret).toMatch(/^crm_live_[0-9A-Za-z]{32}$/);
    expect(key).toMatchObject({ name: 'Website form', kind: 'secret', prefix: `crm_live_…${secret.slice(-4)}`, last4: secret.slice(-4), status: 'active', expiresAt: null });
    expect(await leadEndpointStatus(secret)).toBe(200);

    const rotated = await admin.post(`/api/settings/keys/${key.id}/rotate`, { grace_hours: 1 });
    expect(rotated.status).toBe(201);
    const next = rotated.json<{ key: KeyView; secret: string; previous: KeyView }>();
    expect(next.previous).toMatchObject({ id: key.id, status: 'expiring' });
    expect(Date.parse(next.previous.expiresAt!)).toBeGreaterThan(Date.now() + 3_500_000);
    expect(next.key).toMatchObject({ name: 'Website form', status: 'active' });
    // Both keys work during the grace.
    expect(await leadEndpointStatus(secret)).toBe(200);
    expect(await leadEndpointStatus(next.secret)).toBe(200);

    const listed = (await admin.get('/api/settings/keys')).json<{ keys: KeyView[] }>().keys;
    expect(listed.find((k) => k.id === key.id)).toMatchObject({ status: 'expiring' });
    expect(listed.find((k) => k.id === next.key.id)).toMatchObject({ status: 'active', lastUsedAt: expect.any(String) });

    const revoked = await admin.delete(`/api/settings/keys/${next.key.id}`);
    expect(revoked.status).toBe(200);
    expect(revoked.json()).toMatchObject({ key: { id: next.key.id, status: 'revoked' } });
    // Warm caches drop the key within keyCacheTtlSeconds (1 s in the test stack).
    await eventually(async () => (await leadEndpointStatus(next.secret)) === 401, { what: 'the revoked key to be refused' });
    expect(await leadEndpointStatus(secret)).toBe(200);

    const audit = await listAudit((await testStack()).deps, organizationId);
    expect(audit.map((e) => [e.action, e.userId, e.targetId])).toEqual([
      ['key.revoked', 'alice', next.key.id],
      ['key.rotated', 'alice', key.id],
      ['key.created', 'alice', key.id],
    ]);
    expect(JSON.stringify(audit)).not.toContain(secret);
    expect(JSON.stringify(audit)).not.toContain(next.secret);
    // The same entries through the API.
    const listedAudit = (await admin.get('/api/settings/audit')).json<{ entries: { action: string; userId: string }[] }>().entries;
    expect(listedAudit.map((e) => e.action)).toEqual(['key.revoked', 'key.rotated', 'key.created']);
  });

  it.each([
    ['no name', {}, 'name'],
    ['an empty name', { name: '  ' }, 'name'],
    ['an unknown kind', { name: 'x', kind: 'root' }, 'kind'],
  ])('refuses a key with %s (422, nothing written)', async (_what, body, field) => {
    const { organizationId } = await newTenant();
    const admin = await settingsClient(organizationId);
    const call = await admin.post('/api/settings/keys', body);
    expect(call.status).toBe(422);
    expect(call.headers.get('content-type')).toBe('application/problem+json');
    expect(call.json()).toMatchObject({ errors: [expect.objectContaining({ field })] });
    expect((await admin.get('/api/settings/keys')).json<{ keys: unknown[] }>().keys).toHaveLength(1); // the tenant's own
  });

  it('refuses a grace over 168 hours, and a body that is not JSON', async () => {
    const { organizationId, keyId } = await newTenant();
    const admin = await settingsClient(organizationId);
    expect((await admin.post(`/api/settings/keys/${keyId}/rotate`, { grace_hours: 169 })).status).toBe(422);
    const { api } = await testStack();
    const raw = await api(`/api/settings/keys/${keyId}/rotate`, { method: 'POST', headers: { Authorization: `Bearer ${admin.token}`, 'Content-Type': 'application/json' }, body: '{' });
    expect(raw.status).toBe(400);
    expect((await admin.get('/api/settings/keys')).json<{ keys: KeyView[] }>().keys).toEqual([expect.objectContaining({ id: keyId, status: 'active' })]);
  });

  it('creates a publishable key with its origins', async () => {
    const { organizationId } = await newTenant();
    const admin = await settingsClient(organizationId);
    const call = await admin.post('/api/settings/keys', { name: 'Landing page', kind: 'publishable', origins: ['https://shop.example'] });
    expect(call.status).toBe(201);
    expect(call.json()).toMatchObject({ key: { kind: 'publishable', prefix: expect.stringMatching(/^crm_pub_…[0-9A-Za-z]{4}$/), origins: ['https://shop.example'] }, secret: expect.stringMatching(/^crm_pub_/) });
    expect((await admin.post('/api/settings/keys', { name: 'No origins', kind: 'publishable' })).status).toBe(422);
  });

  it('creates a publishable key with its no-script thank-you page, daily cap, per-address limit and honeypot field', async () => {
    const { organizationId } = await newTenant();
    const admin = await settingsClient(organizationId);
    const policy = { thank_you_url: 'https://shop.example/thanks', daily_cap: 200, per_ip_limit: 3, honeypot_field: 'fax' };
    const call = await admin.post('/api/settings/keys', { name: 'Contact form', kind: 'publishable', origins: ['https://shop.example'], ...policy });
    expect(call.status).toBe(201);
    const shown = { thankYouUrl: 'https://shop.example/thanks', dailyCap: 200, perIpLimit: 3, honeypotField: 'fax' };
    expect(call.json()).toMatchObject({ key: shown });
    const listed = async () => (await admin.get('/api/settings/keys')).json<{ keys: KeyView[] }>().keys;
    const before = await listed();
    expect(before.filter((k) => k.kind === 'publishable')).toEqual([expect.objectContaining(shown)]);

    // Wrong types, and a policy on a secret key, are 422 with nothing written.
    expect((await admin.post('/api/settings/keys', { name: 'Bad cap', kind: 'publishable', origins: ['https://shop.example'], daily_cap: '200' })).status).toBe(422);
    expect((await admin.post('/api/settings/keys', { name: 'Server', thank_you_url: 'https://shop.example/thanks' })).status).toBe(422);
    expect(await listed()).toEqual(before);
  });
});
