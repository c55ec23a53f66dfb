/**
 * Keys and signing secrets appear in the response that creates them and in no other (docs/settings.md):
 * after an admin has created, rotated and tested everything, no read and no other change answers
 * with any of them. And the per-organization limit answers 429 with Retry-After.
 */
import { describe, it, expect } from '@jest/globals';
import { PutCommand } from '@aws-sdk/lib-dynamodb';
import { newTenant, testStack } from '../support/stack.js';
import { receiverForFile } from '../support/receiver.js';
import { SETTINGS_RATE_LIMIT_PER_MINUTE } from '../../../functions/core/settings/handle-settings-request.js';
import { settingsClient } from './support.js';
import { tokenSecret } from '../support/settings-links.js';

const receiver = receiverForFile();

describe('secrets in settings API responses', () => {
  it('shows each key and signing secret once: no other response ever contains one', async () => {
    const { organizationId, key: tenantKey } = await newTenant();
    const admin = await settingsClient(organizationId);
    const shown: string[] = [tenantKey, await tokenSecret()];
    const created = (await admin.post('/api/settings/keys', { name: 'Zapier' })).json<{ key: { id: string }; secret: string }>();
    shown.push(created.secret);
    const rotated = (await admin.post(`/api/settings/keys/${created.key.id}/rotate`, {})).json<{ key: { id: string }; secret: string }>();
    shown.push(rotated.secret);
    const { endpoint, secret } = (await admin.post('/api/settings/webhooks', { url: `${receiver.url}/shown-once`, events: ['client.created'] })).json<{ endpoint: { id: string }; secret: string }>();
    shown.push(secret);
    const newSecret = (await admin.post(`/api/settings/webhooks/${endpoint.id}/rotate-secret`, {})).json<{ secret: string }>().secret;
    shown.push(newSecret);
    receiver.script('/shown-once', newSecret, { status: 204 });
    expect(shown.every((s) => s.length >= 32)).toBe(true);
    // Secrets are base64 (whsec_…): a JSON body would escape '/' as is, so a plain substring search finds them.

    const others = [
      await admin.post(`/api/settings/webhooks/${endpoint.id}/test`),
      await admin.patch(`/api/settings/webhooks/${endpoint.id}`, { description: 'Zaps' }),
    ];
    const { delivery } = others[0].json<{ delivery: { id: string } }>();
    others.push(await admin.post(`/api/settings/deliveries/${delivery.id}/redeliver`));
    for (const pathname of ['/api/settings', '/api/settings/keys', '/api/settings/webhooks', '/api/settings/events', '/api/settings/deliveries',
      `/api/settings/deliveries/${delivery.id}`, '/api/settings/requests', '/api/settings/audit']) {
      const call = await admin.get(pathname);
      expect({ pathname, status: call.status }).toEqual({ pathname, status: 200 });
      others.push(call);
    }
    others.push(await admin.delete(`/api/settings/keys/${rotated.key.id}`));
    others.push(await admin.delete(`/api/settings/webhooks/${endpoint.id}`));
    for (const call of others) {
      for (const value of shown) expect(call.text.includes(value)).toBe(false);
      expect(call.text).not.toMatch(/whsec_|crm_live_[0-9A-Za-z]{32}/);
    }
  });
});

describe('the per-organization limit', () => {
  it(`answers 429 problem+json with Retry-After once an organization has made ${SETTINGS_RATE_LIMIT_PER_MINUTE} calls in a minute; another organization is not affected`, async () => {
    const { deps } = await testStack();
    const busy = await newTenant();
    const calm = await newTenant();
    // Given this 10 s sub-window's (and the next's) count already at the limit: rate-limit.ts keeps one item per key per sub-window.
    const sub = Math.floor(Date.now() / 10_000);
    for (const w of [sub, sub + 1]) {
      await deps.doc.send(new PutCommand({ TableName: deps.tables.rateWindows, Item: { pk: `RLS#settings#${busy.organizationId}#${w}`, count: SETTINGS_RATE_LIMIT_PER_MINUTE, s9: SETTINGS_RATE_LIMIT_PER_MINUTE, expiresAt: Math.floor(Date.now() / 1000) + 600 } }));
    }
    const call = await (await settingsClient(busy.organizationId)).get('/api/settings/keys');
    expect(call.status).toBe(429);
    expect(call.headers.get('content-type')).toBe('application/problem+json');
    expect(Number(call.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(call.json()).toMatchObject({ status: 429, title: 'Too many requests' });
    expect((await (await settingsClient(calm.organizationId)).get('/api/settings/keys')).status).toBe(200);
  });
});
