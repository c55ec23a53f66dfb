/** The local API Gateway in front of the handlers: routing, preflight and gateway-level errors. */
import { describe, it, expect } from '@jest/globals';
import { newTenant, testStack } from '../support/stack.js';

describe('the local API Gateway', () => {
  it('answers an unknown path with a 404 problem', async () => {
    const { api } = await testStack();
    const res = await api('/nope');
    expect(res.status).toBe(404);
    expect(res.headers.get('content-type')).toBe('application/problem+json');
    expect(await res.json()).toMatchObject({ status: 404, title: 'Not found' });
  });

  it('answers a wrong method with a 405 problem naming the allowed ones', async () => {
    const { api } = await testStack();
    const res = await api('/api/webhook/leads', { method: 'DELETE' });
    expect(res.status).toBe(405);
    expect(res.headers.get('allow')).toBe('GET, POST');
    expect(((await res.json()) as { status: number }).status).toBe(405);
  });

  it('answers the CORS preflight without a key', async () => {
    const { api } = await testStack();
    const res = await api('/api/webhook/leads', { method: 'OPTIONS', headers: { Origin: 'https://plumber.example', 'Access-Control-Request-Method': 'POST' } });
    expect(res.status).toBe(204);
    expect(res.headers.get('access-control-allow-origin')).toBe('*');
    expect(res.headers.get('access-control-allow-headers')).toBe('Content-Type,X-API-Key,Authorization,Idempotency-Key');
    expect(res.headers.get('access-control-allow-methods')).toContain('POST');
  });

  it('passes a request on a route to the handler (no key: 401 problem)', async () => {
    const { api } = await testStack();
    const res = await api('/api/webhook/leads');
    expect(res.status).toBe(401);
    expect(res.headers.get('content-type')).toContain('application/problem+json');
  });
});

describe('the local API reference', () => {
  it('serves the OpenAPI document with this stack as its server', async () => {
    const { api, info } = await testStack();
    const res = await api('/openapi.json');
    expect(res.status).toBe(200);
    const doc = (await res.json()) as { openapi: string; servers: { url: string }[]; paths: Record<string, unknown> };
    expect(doc.openapi).toBe('3.1.0');
    expect(doc.servers[0].url).toBe(info.apiUrl);
    expect(Object.keys(doc.paths)).toEqual(['/api/webhook/leads']);
  });
});

describe('CORS on every answer of the lead endpoint', () => {
  it.each([
    ['401 (no key)', {}, undefined],
    ['422 (invalid body)', { 'X-API-Key': 'KEY', 'Content-Type': 'application/json' }, '{}'],
    ['201 (created)', { 'X-API-Key': 'KEY', 'Content-Type': 'application/json' }, '{"name":"Cors Lead"}'],
  ])('a browser can read a %s answer and its rate-limit headers', async (_what, headers: Record<string, string>, body) => {
    const { api } = await testStack();
    const t = await newTenant();
    const withKey = Object.fromEntries(Object.entries(headers).map(([k, v]) => [k, v === 'KEY' ? t.key : v]));
    const res = await api('/api/webhook/leads', { method: 'POST', headers: { Origin: 'https://plumber.example', ...withKey }, body });
    expect(res.headers.get('access-control-allow-origin')).toBe('*');
    expect(res.headers.get('access-control-expose-headers')?.split(',')).toEqual(expect.arrayContaining(['Retry-After', 'RateLimit', 'X-RateLimit-Remaining']));
  });
});
