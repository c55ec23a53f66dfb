/**
 * Every route of the settings function is in the OpenAPI document, with the session token and its
 * 401; every request body it documents refuses fields it does not list (additionalProperties: false).
 */
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

  it('says additionalProperties: false for each request body, and lists the 422 of each route that takes a body or a query', () => {
    const paths = openApiDocument().paths as unknown as Record<string, Record<string, {
      requestBody?: { content: Record<string, { schema: { type?: string; additionalProperties?: unknown } }> }; parameters?: { in: string }[]; responses: Record<string, unknown>;
    }>>;
    const bodies = Object.entries(paths).filter(([p]) => p.startsWith('/api/settings')).flatMap(([p, ops]) => Object.entries(ops).map(([m, operation]) => ({ route: `${m.toUpperCase()} ${p}`, operation })));
    const withBody = bodies.filter((b) => b.operation.requestBody);
    expect(withBody.map((b) => b.route)).toEqual(expect.arrayContaining(['POST /api/settings/keys/{id}/rotate', 'POST /api/settings/deliveries/redeliver', 'POST /api/settings/deliveries/recover']));
    for (const { route, operation } of withBody) {
      const { schema } = operation.requestBody!.content['application/json'];
      expect({ route, type: schema.type, additionalProperties: schema.additionalProperties }).toEqual({ route, type: 'object', additionalProperties: false });
    }
    for (const { route, operation } of bodies.filter((b) => b.operation.requestBody || b.operation.parameters?.some((p) => p.in === 'query'))) {
      expect({ route, responses: Object.keys(operation.responses) }).toEqual({ route, responses: expect.arrayContaining(['422']) });
    }
  });
});
