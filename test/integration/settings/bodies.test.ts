/**
 * A body field the settings API does not know is a 422 naming it, never ignored: `{"grace": 0}`,
 * meant to cut a leaked key off at once, must not rotate it with the default grace (the old key
 * working for another day). Nothing is written.
 */
import { describe, it, expect } from '@jest/globals';
import { newTenant, testStack } from '../support/stack.js';
import { settingsClient } from './support.js';

interface KeyView { id: string; status: string }
const leadEndpointStatus = async (key: string) => (await (await testStack()).api('/api/webhook/leads', { headers: { 'X-API-Key': key } })).status;

describe('settings API bodies', () => {
  it('refuses unknown fields with 422 on every body it reads, and writes nothing', async () => {
    const { organizationId, key, keyId } = await newTenant();
    const admin = await settingsClient(organizationId);
    const keys = async () => (await admin.get('/api/settings/keys')).json<{ keys: KeyView[] }>().keys;
    const keysBefore = await keys();
    const { endpoint } = (await admin.post('/api/settings/webhooks', { url: 'http://127.0.0.1:9/bodies', events: ['client.created'] })).json<{ endpoint: { id: string } }>();
    const endpoints = async () => (await admin.get('/api/settings/webhooks')).json<{ endpoints: { id: string; secretCount: number }[] }>().endpoints;
    const endpointsBefore = await endpoints();

    for (const [path, body, field] of [
      [`/api/settings/keys/${keyId}/rotate`, { grace: 0 }, 'grace'],
      ['/api/settings/keys', { name: 'Form', kinds: 'publishable' }, 'kinds'],
      ['/api/settings/webhooks', { url: 'http://127.0.0.1:9/other', events: ['client.created'], enabled: false }, 'enabled'],
      [`/api/settings/webhooks/${endpoint.id}/rotate-secret`, { grace_hour: 0 }, 'grace_hour'],
      ['/api/settings/deliveries/redeliver', { endpoints: endpoint.id }, 'endpoints'],
    ] as const) {
      const answer = await admin.post(path, body);
      expect([path, answer.status]).toEqual([path, 422]);
      expect(answer.json()).toMatchObject({ errors: [{ field, message: expect.any(String) }] });
    }
    expect(await keys()).toEqual(keysBefore);
    expect(await endpoints()).toEqual(endpointsBefore);
    expect(await leadEndpointStatus(key)).toBe(200);

    // Spelt right, it does what was meant: the old key stops at once.
    const rotated = await admin.post(`/api/settings/keys/${keyId}/rotate`, { grace_hours: 0 });
    expect(rotated.status).toBe(201);
    expect(rotated.json()).toMatchObject({ previous: { id: keyId, status: 'revoked' } });
  });
});
