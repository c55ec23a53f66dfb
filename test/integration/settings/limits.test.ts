/**
 * What one session may make through the settings API is bounded: live keys per organization and
 * signing secrets per endpoint (each rotation with a grace keeps the older ones signing). Over a
 * bound: 422 and nothing written; the way out (revoke, rotate without grace) still works.
 */
import { describe, it, expect } from '@jest/globals';
import { newTenant } from '../support/stack.js';
import { MAX_LIVE_KEYS, MAX_SIGNING_SECRETS } from '../../../functions/core/settings/handle-settings-request.js';
import { settingsClient } from './support.js';

interface KeyView { id: string; status: string }

describe('settings API bounds', () => {
  it(`refuses a key beyond ${MAX_LIVE_KEYS} live ones (create, and rotate with a grace) with 422, and writes nothing`, async () => {
    const { organizationId } = await newTenant();
    const admin = await settingsClient(organizationId);
    // The tenant starts with its own key.
    const ids = (await admin.get('/api/settings/keys')).json<{ keys: KeyView[] }>().keys.map((k) => k.id);
    while (ids.length < MAX_LIVE_KEYS) {
      const i = ids.length;
      const created = await admin.post('/api/settings/keys', { name: `Key ${i}` });
      expect(created.status).toBe(201);
      ids.push(created.json<{ key: KeyView }>().key.id);
    }
    const listed = async () => (await admin.get('/api/settings/keys')).json<{ keys: KeyView[] }>().keys;
    const before = await listed();

    const refused = await admin.post('/api/settings/keys', { name: 'One too many' });
    expect(refused.status).toBe(422);
    expect(refused.headers.get('content-type')).toContain('application/problem+json');
    expect(refused.text).not.toMatch(/crm_live_[0-9A-Za-z]/);
    const rotated = await admin.post(`/api/settings/keys/${ids[0]}/rotate`, { grace_hours: 1 });
    expect(rotated.status).toBe(422);
    expect(await listed()).toEqual(before);

    // Rotating without a grace replaces the key (live count unchanged); revoking one makes room.
    expect((await admin.post(`/api/settings/keys/${ids[0]}/rotate`, { grace_hours: 0 })).status).toBe(201);
    expect((await admin.delete(`/api/settings/keys/${ids[1]}`)).status).toBe(200);
    expect((await admin.post('/api/settings/keys', { name: 'After a revocation' })).status).toBe(201);
  });

  it(`refuses a signing-secret rotation with a grace beyond ${MAX_SIGNING_SECRETS} secrets with 422; without a grace it works`, async () => {
    const { organizationId } = await newTenant();
    const admin = await settingsClient(organizationId);
    const added = await admin.post('/api/settings/webhooks', { url: 'http://127.0.0.1:9/limits', events: ['client.created'] });
    expect(added.status).toBe(201);
    const { id } = added.json<{ endpoint: { id: string } }>().endpoint;
    for (let i = 1; i < MAX_SIGNING_SECRETS; i++) expect((await admin.post(`/api/settings/webhooks/${id}/rotate-secret`, { grace_hours: 24 })).status).toBe(200);
    const secretCount = async () => (await admin.get('/api/settings/webhooks')).json<{ endpoints: { id: string; secretCount: number }[] }>().endpoints.find((e) => e.id === id)!.secretCount;
    expect(await secretCount()).toBe(MAX_SIGNING_SECRETS);

    for (const body of [{ grace_hours: 24 }, {}]) {
      const refused = await admin.post(`/api/settings/webhooks/${id}/rotate-secret`, body);
      expect(refused.status).toBe(422);
      expect(refused.text).not.toContain('whsec_');
    }
    expect(await secretCount()).toBe(MAX_SIGNING_SECRETS);

    const replaced = await admin.post(`/api/settings/webhooks/${id}/rotate-secret`, { grace_hours: 0 });
    expect(replaced.status).toBe(200);
    expect(await secretCount()).toBe(1);
  });
});
