/** Paths with parameters land on the resource API Gateway would pick (functions/front-door/routes.ts resourceFor), for the local server and the stack alike. */
import { describe, it, expect } from '@jest/globals';
import { apiMethodFor, catchAllThrottle, hasParameterChild, resourceFor, routeThrottle, settingsThrottle } from '../../../functions/front-door/routes.js';

describe('resourceFor', () => {
  it.each([
    ['/api/settings/keys/key_123', '/api/settings/keys/{id}', { id: 'key_123' }],
    ['/api/settings/keys/key_123/rotate', '/api/settings/keys/{id}/rotate', { id: 'key_123' }],
    // A static sibling wins over the parameter.
    ['/api/settings/deliveries/redeliver', '/api/settings/deliveries/redeliver', {}],
    ['/api/settings/deliveries/dlv_1/redeliver', '/api/settings/deliveries/{id}/redeliver', { id: 'dlv_1' }],
    ['/settings/settings.js', '/settings/{asset}', { asset: 'settings.js' }],
    ['/api/webhook/leads', '/api/webhook/leads', {}],
  ])('%s → %s', (pathname, resource, parameters) => {
    expect(resourceFor(pathname)).toEqual({ resource, parameters, proxy: false });
  });

  it('falls back to the {proxy+} under the deepest resource reached', () => {
    expect(resourceFor('/api/settings/keys/key_1/rotate/now')).toEqual({ resource: '/api/settings/keys/{id}/rotate/{proxy+}', parameters: {}, proxy: true });
    expect(resourceFor('/api/settings/nothing')).toMatchObject({ resource: '/api/settings/{proxy+}', proxy: true });
    expect(resourceFor('/api/webhook/leads/x/y')).toMatchObject({ resource: '/api/webhook/leads/{proxy+}', proxy: true });
  });

  it('gives routed settings methods (parameterized paths too) the settings throttle, lead methods the sized one, other methods the catch-all one', () => {
    expect(apiMethodFor('/api/settings/keys/key_1', 'DELETE')).toEqual({ resource: '/api/settings/keys/{id}', method: 'DELETE', throttle: settingsThrottle });
    // Same-origin: no preflight method; an OPTIONS meets the path's catch-all (405).
    expect(apiMethodFor('/api/settings/keys/key_1', 'OPTIONS')).toEqual({ resource: '/api/settings/keys/{id}', method: 'ANY', throttle: catchAllThrottle });
    expect(apiMethodFor('/settings', 'GET').throttle).toBe(settingsThrottle);
    expect(apiMethodFor('/api/webhook/leads', 'POST')).toEqual({ resource: '/api/webhook/leads', method: 'POST', throttle: routeThrottle });
    expect(apiMethodFor('/api/settings/keys/key_1', 'GET')).toEqual({ resource: '/api/settings/keys/{id}', method: 'ANY', throttle: catchAllThrottle });
  });

  it('knows which resources have a parameter child (no {proxy+} sibling there)', () => {
    expect(hasParameterChild('/api/settings/keys')).toBe(true);
    expect(hasParameterChild('/api/settings/keys/{id}')).toBe(false);
    expect(hasParameterChild('/api/webhook/leads')).toBe(false);
  });
});
