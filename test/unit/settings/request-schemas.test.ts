/**
 * What the OpenAPI document says of each settings route's body and query is what the server
 * refuses (request-schemas.ts, read by request-fields.ts readRequest before any operation runs):
 * the smallest request the document calls valid is read; the same with one undocumented field or
 * query parameter is the documented 422 naming it; a value past a documented bound or outside a
 * documented enum is a 422 naming its field. Driven from the document: a new route is covered.
 */
import { describe, it, expect } from '@jest/globals';
import { readRequest } from '../../../functions/core/settings/request-fields.js';
import { requestSchemas } from '../../../functions/core/settings/request-schemas.js';
import { DomainError, toProblem } from '../../../functions/core/platform/errors.js';
import type { HttpRequest } from '../../../functions/core/platform/http-request.js';
import { routes } from '../../../functions/front-door/routes.js';
import { documentedRequests, exampleOf, exampleQuery, UNDOCUMENTED } from '../../support/documented-requests.js';

const requests = documentedRequests();
const requestTo = (route: string, body: unknown, query: Record<string, string> = {}): HttpRequest => ({
  method: route.split(' ')[0], resource: route.split(' ')[1], requestId: 'req-test',
  headers: { 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body), query,
});
/** The problem+json a request comes to, or `read` when it is valid. */
function answer(route: string, body: unknown, query?: Record<string, string>) {
  try {
    readRequest(route, requestTo(route, body, query));
    return 'read';
  } catch (error) {
    expect(error).toBeInstanceOf(DomainError);
    return toProblem(error, 'req-test').problem;
  }
}
/** The fields a problem names, each once (a value can break two rules of its field). */
const fieldsOf = (outcome: ReturnType<typeof answer>) => (outcome === 'read' ? 'read' : [...new Set(outcome.errors?.map((e) => e.field))]);

describe('the settings requests the document describes', () => {
  it('are every route with a schema, each a route of the front door', () => {
    const routed = routes.map((r) => `${r.method} ${r.path}`);
    expect(requests.map((r) => r.route).sort()).toEqual(Object.keys(requestSchemas).sort());
    for (const route of Object.keys(requestSchemas)) expect(routed).toContain(route);
    // The routes this issue named, and the query routes, among them.
    expect(requests.map((r) => r.route)).toEqual(expect.arrayContaining([
      'POST /api/settings/keys/{id}/rotate', 'POST /api/settings/deliveries/redeliver', 'GET /api/settings/deliveries', 'GET /api/settings/audit',
    ]));
  });

  it.each(requests.map((r) => [r.route, r] as const))('%s: the smallest documented request is read; one undocumented field more is the documented 422 naming it', (route, r) => {
    expect(r.operation.responses['422']?.content).toHaveProperty(['application/problem+json']);
    const body = r.body ? exampleOf(r.body) as Record<string, unknown> : undefined;
    const query = exampleQuery(r.query);
    expect(answer(route, body, query)).toBe('read');
    const refused = r.body ? answer(route, { ...body, [UNDOCUMENTED]: 1 }, query) : answer(route, undefined, { ...query, [UNDOCUMENTED]: '1' });
    expect(refused).toMatchObject({ status: 422, type: expect.stringContaining('validation-failed'), errors: [{ field: UNDOCUMENTED, message: 'is not a field of this request' }] });
  });

  it.each(requests.filter((r) => r.body).map((r) => [r.route, r] as const))('%s: a body that is not an object, or not JSON, is refused', (route) => {
    expect(answer(route, [])).toMatchObject({ status: 422, errors: [{ field: '(body)' }] });
    expect(() => readRequest(route, { ...requestTo(route, undefined), body: '{' })).toThrow(expect.objectContaining({ status: 400 }));
  });

  it.each(requests.map((r) => [r.route, r] as const))('%s: a value past a documented bound or outside a documented enum is a 422 naming its field', (route, r) => {
    const valid = r.body ? exampleOf(r.body) as Record<string, unknown> : exampleQuery(r.query);
    const fields = r.body ? Object.entries(r.body.properties ?? {}) : r.query.map((p) => [p.name, p.schema] as const);
    let checked = 0;
    for (const [name, declared] of fields) {
      const schema = declared.anyOf?.[0] ?? declared;
      const bad: unknown[] = [];
      if (schema.maximum !== undefined) bad.push(schema.maximum + 1);
      if (schema.minimum !== undefined) bad.push(schema.minimum - 1);
      if (schema.type === 'integer') bad.push(1.5);
      if (schema.maxLength !== undefined) bad.push('x'.repeat(schema.maxLength + 1));
      if (schema.enum) bad.push('not-one-of-them');
      if (schema.format === 'date-time') bad.push('yesterday');
      if (schema.format === 'uri') bad.push('not a url');
      if (schema.type === 'array' && schema.minItems) bad.push([]);
      if (schema.type === 'array' && schema.maxItems !== undefined && schema.items) bad.push(Array.from({ length: schema.maxItems + 1 }, () => exampleOf(schema.items!)));
      for (const value of bad) {
        const outcome = r.body ? answer(route, { ...valid, [name]: value }) : answer(route, undefined, { ...valid as Record<string, string>, [name]: String(value) });
        const shown = String(value).slice(0, 40);
        expect({ name, shown, fields: fieldsOf(outcome) }).toEqual({ name, shown, fields: [name] });
        checked += 1;
      }
    }
    // A route whose body documents fields documents at least one bound (a body without fields has none to break).
    if (fields.length > 0) expect(checked).toBeGreaterThan(0);
  });
});

describe('bounds and rules the document states', () => {
  it('a header (or any field) named `__proto__` is a 422 that says why, not silently dropped', () => {
    const outcome = answer('PATCH /api/settings/webhooks/{id}', JSON.parse('{"headers":{"__proto__":"x","X-A":"a"}}'));
    expect(outcome).not.toBe('read');
    expect((outcome as { errors: { field: string; message: string }[] }).errors).toContainEqual({ field: 'headers.__proto__', message: expect.stringMatching(/cannot be a name here/) });
  });

  it('reads a grace of 0 to 168 hours, and a limit of 1 to 200 (as text in the query), an empty parameter as absent', () => {
    for (const grace of [0, 168]) expect(answer('POST /api/settings/keys/{id}/rotate', { grace_hours: grace })).toBe('read');
    expect(answer('POST /api/settings/keys/{id}/rotate', undefined)).toBe('read');
    expect(readRequest('GET /api/settings/audit', requestTo('GET /api/settings/audit', undefined, { limit: '200' })).query).toEqual({ limit: 200 });
    expect(readRequest('GET /api/settings/deliveries', requestTo('GET /api/settings/deliveries', undefined, { status: '', limit: '' })).query).toEqual({});
  });

  it('names every bad field of a body in one answer, the domain\'s header rules with the others', () => {
    const outcome = answer('POST /api/settings/webhooks', { url: 'https://hooks.example/x', events: ['client.created'], headers: { host: 'evil.example' }, rate_limit_per_second: 0, grace: 1 });
    expect(fieldsOf(outcome)).toEqual(expect.arrayContaining(['headers.host', 'rate_limit_per_second', 'grace']));
  });

  it('says each problem of a field once, and a name of only spaces is one', () => {
    expect(answer('POST /api/settings/keys', { name: '   ' })).toMatchObject({ errors: [{ field: 'name', message: 'is required: 1 to 100 characters' }] });
    expect((answer('POST /api/settings/keys', { name: '   ' }) as { errors: unknown[] }).errors).toHaveLength(1);
  });

  it('a route that takes no body reads none', () => {
    expect(readRequest('DELETE /api/settings/keys/{id}', requestTo('DELETE /api/settings/keys/{id}', { anything: 1 }))).toEqual({ body: {}, query: {} });
  });
});
