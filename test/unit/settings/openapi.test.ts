/** Every route of the settings function is in the OpenAPI document, with the session token and its 401. */
import { describe, it, expect } from '@jest/globals';
import { openApiDocument } from '../../../functions/core/settings/openapi.js';
import { routes } from '../../../functions/front-door/routes.js';

describe('the settings API in the OpenAPI document', () => {
  it('documents each /api/settings route of the front door, and no other', () => {
    const paths = openApiDocument().paths as unknown as Record<string, Record<string, { security: unknown; responses: Record<string, unknown> }>>;
    const documented = Object.entries(paths).filter(([p]) => p.startsWith('/api/settings')).flatMap(([p, ops]) => Object.keys(ops).map((m) => `${m.toUpperCase()} ${p}`));
    const routed = routes.filter((r) => r.path.startsWith('/api/settings')).map((r) => `${r.method} ${r.path}`);
    expect(documented.sort()).toEqual(routed.sort());
    for (const [p, ops] of Object.entries(paths).filter(([k]) => k.startsWith('/api/settings'))) {
      for (const operation of Object.values(ops)) {
        expect({ p, security: operation.security }).toEqual({ p, security: [{ sessionToken: [] }] });
        expect(Object.keys(operation.responses)).toEqual(expect.arrayContaining(['401', '429', '503']));
        if (p.includes('{id}')) expect(Object.keys(operation.responses)).toContain('404');
      }
    }
  });
});
