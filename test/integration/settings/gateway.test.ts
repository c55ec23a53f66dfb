/**
 * The local API Gateway routes parameterized paths as the stage does (functions/front-door/routes.ts resourceFor):
 * `{id}` paths reach the settings function, other methods there get the catch-all 405, deeper paths
 * the 404; no preflight is answered (the settings API is same-origin: a 405 like any other method).
 * The settings page is served without a token.
 */
import { describe, it, expect } from '@jest/globals';
import { newTenant, testStack } from '../support/stack.js';
import { settingsCall } from './support.js';
import { sessionToken } from '../support/settings-links.js';

describe('routing of the settings paths', () => {
  it('answers a wrong method on an {id} path 405 with Allow, without running the function', async () => {
    const call = await settingsCall(undefined, 'PUT', '/api/settings/webhooks/ep_1');
    expect(call.status).toBe(405);
    expect(call.headers.get('allow')).toBe('PATCH, DELETE');
    expect(call.headers.get('content-type')).toBe('application/problem+json');
  });

  it('answers a path below the routes 404, and a preflight on an {id} path 405 (same-origin only, no CORS)', async () => {
    const { organizationId } = await newTenant();
    const token = await sessionToken(organizationId);
    expect((await settingsCall(token, 'GET', '/api/settings/keys/key_1/rotate/now')).status).toBe(404);
    expect((await settingsCall(token, 'GET', '/api/settings/nothing')).status).toBe(404);
    const { api } = await testStack();
    const preflight = await api('/api/settings/keys/key_1/rotate', { method: 'OPTIONS', headers: { Origin: 'https://crm.example', 'Access-Control-Request-Method': 'POST' } });
    expect(preflight.status).toBe(405);
    expect(preflight.headers.get('allow')).toBe('POST');
    // Without Allow-Methods and Allow-Headers a browser's preflight fails: no other origin may send the Authorization header here.
    expect(preflight.headers.get('access-control-allow-methods')).toBeNull();
    expect(preflight.headers.get('access-control-allow-headers')).toBeNull();
  });

  it('serves the page and its assets without a token, with a strict CSP; an unknown asset is 404', async () => {
    const { api } = await testStack();
    const page = await api('/settings');
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toMatch(/^text\/html/);
    expect(page.headers.get('content-security-policy')).toMatch(/script-src 'self'/);
    expect((await api('/settings/settings.js')).headers.get('content-type')).toMatch(/javascript/);
    const missing = await api('/settings/nope.js');
    expect(missing.status).toBe(404);
    expect(missing.headers.get('content-type')).toBe('application/problem+json');
  });
});
