/**
 * The local API Gateway answers what the deployed stage answers: every answer the gateway makes
 * without a function (catch-all 404/405, preflight, throttle, WAF block, 413, a failing function) is
 * compared with the one the synthesized CloudFormation template renders for the same case: same
 * status, same headers, same body (with the same request id).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, it, expect, beforeAll, afterAll, jest } from '@jest/globals';
import { Template } from 'aws-cdk-lib/assertions';
import type { APIGatewayProxyResult } from 'aws-lambda';
import { buildApp } from '../../../lib/stacks/app.js';
import { startHttpServer, wafRulesFor, type HttpHandler } from '../../../lib/local/http-server.js';
import { apiMethodFor, catchAllThrottle, routeThrottle } from '../../../functions/front-door/routes.js';
import { wafKeyLimitPerMinute, wafRules } from '../../../functions/front-door/waf.js';
import { lambdaFailure } from '../../../functions/front-door/gateway-answers.js';
import { newTenant, runCli, testStack } from '../support/stack.js';
import { generateApiKey } from '../../../functions/core/tenancy/api-keys.js';

interface Answer { status: number; headers: Record<string, string>; body: string }
type Resources = Record<string, { Type: string; Properties: Record<string, any> }>; // eslint-disable-line @typescript-eslint/no-explicit-any

let resources: Resources;
const outdir = mkdtempSync(path.join(tmpdir(), 'crm-gateway-'));
beforeAll(() => {
  const { stack } = buildApp({ outdir, context: { 'aws:cdk:bundling-stacks': [], stage: 'dev' } });
  resources = Template.fromStack(stack).toJSON().Resources as Resources;
});
afterAll(() => rmSync(outdir, { recursive: true, force: true }));

// --- What the deployed stage answers, read from the template ------------------------------------

const unquote = (v: string, requestId: string) => (v === 'context.requestId' ? requestId : v.replace(/^'(.*)'$/, '$1'));
const headersOf = (params: Record<string, string>, prefix: string, requestId: string) =>
  Object.fromEntries(Object.entries(params).map(([k, v]) => [k.slice(prefix.length).toLowerCase(), unquote(v, requestId)]));

function pathOf(resourceId: { Ref?: string }): string {
  if (!resourceId.Ref) return '/';
  const { ParentId, PathPart } = resources[resourceId.Ref].Properties;
  return `${pathOf(ParentId).replace(/\/$/, '')}/${PathPart}`;
}

function deployedMethod(resourcePath: string, httpMethod: string) {
  const method = Object.values(resources).find((r) => r.Type === 'AWS::ApiGateway::Method'
    && r.Properties.HttpMethod === httpMethod && pathOf(r.Properties.ResourceId) === resourcePath);
  if (!method) throw new Error(`The template has no ${httpMethod} on ${resourcePath}: API Gateway would answer 403 "Missing Authentication Token".`);
  return method.Properties.Integration.IntegrationResponses[0] as { StatusCode: string; ResponseParameters: Record<string, string>; ResponseTemplates?: Record<string, string> };
}

/** The MOCK answer of `httpMethod` on the resource matching `resourcePath`. */
function deployedMock(resourcePath: string, requestId: string, httpMethod = 'ANY'): Answer {
  const response = deployedMethod(resourcePath, httpMethod);
  return {
    status: Number(response.StatusCode),
    headers: headersOf(response.ResponseParameters, 'method.response.header.', requestId),
    body: (response.ResponseTemplates?.['application/json'] ?? '').replaceAll('$context.requestId', requestId),
  };
}

/** The gateway response of `type`; `status`/`message` are what API Gateway supplies for the DEFAULT_* ones. */
function deployedGatewayResponse(type: string, requestId: string, supplied: { status?: number; message?: string } = {}): Answer {
  const response = Object.values(resources).find((r) => r.Type === 'AWS::ApiGateway::GatewayResponse' && r.Properties.ResponseType === type);
  if (!response) throw new Error(`The template has no ${type} gateway response: API Gateway would answer its own {"message": ...}.`);
  const p = response.Properties;
  return {
    status: p.StatusCode ? Number(p.StatusCode) : supplied.status!,
    headers: headersOf(p.ResponseParameters, 'gatewayresponse.header.', requestId),
    body: (p.ResponseTemplates['application/json'] as string)
      .replaceAll('$context.requestId', requestId)
      .replaceAll('$context.error.messageString', JSON.stringify(supplied.message ?? '')),
  };
}

/** Headers any HTTP server adds, and API Gateway's own request id header. */
const transport = new Set(['content-length', 'date', 'connection', 'keep-alive', 'x-amzn-requestid']);

/** The local answer equals the deployed one for the same request (its request id included). */
async function expectDeployedAnswer(res: Response, deployed: (requestId: string) => Answer): Promise<void> {
  const requestId = res.headers.get('x-amzn-requestid');
  expect(requestId).toMatch(/^[0-9a-f-]{36}$/);
  const want = deployed(requestId!);
  const got = { status: res.status, headers: Object.fromEntries([...res.headers].filter(([k]) => !transport.has(k))), body: await res.text() };
  expect(got).toEqual(want);
}

// --- The suite's local stack ----------------------------------------------------------------

describe('the local API Gateway answers what the deployed stage answers', () => {
  it.each([
    ['an unknown path', '/nope', '/{proxy+}', {}],
    ['the root', '/', '/', {}],
    ['a path above the route', '/api', '/api', {}],
    ['a path under the route', '/api/webhook/leads/extra', '/api/webhook/leads/{proxy+}', {}],
    ['an unknown path, posted as text (no 415)', '/nope', '/{proxy+}', { method: 'POST', headers: { 'Content-Type': 'text/plain' }, body: 'hello' }],
    ['an unknown path, a form post (not a 500)', '/nope', '/{proxy+}', { method: 'POST', headers: { 'Content-Type': 'application/x-www-form-urlencoded' }, body: 'a=b' }],
    ['an unknown path, JSON with a charset', '/nope', '/{proxy+}', { method: 'POST', headers: { 'Content-Type': 'application/json; charset=utf-8' }, body: '{}' }],
    ['an unknown path, multipart', '/nope', '/{proxy+}', { method: 'POST', body: (() => { const f = new FormData(); f.set('a', 'b'); return f; })() }],
    ['a preflight on an unknown path', '/nope', '/{proxy+}', { method: 'OPTIONS', headers: { Origin: 'https://plumber.example', 'Access-Control-Request-Method': 'POST' } }],
  ])('%s: 404 problem+json', async (_what, pathname, resource, init: RequestInit) => {
    const { api } = await testStack();
    const res = await api(pathname, init);
    expect(res.status).toBe(404);
    expect(res.headers.get('content-type')).toBe('application/problem+json');
    await expectDeployedAnswer(res, (id) => deployedMock(resource, id));
  });

  it.each(['DELETE', 'PUT', 'PATCH'])('%s on the lead endpoint: 405 problem+json naming the allowed methods', async (method) => {
    const { api } = await testStack();
    const res = await api('/api/webhook/leads', { method });
    expect(res.status).toBe(405);
    expect(res.headers.get('allow')).toBe('GET, POST');
    await expectDeployedAnswer(res, (id) => deployedMock('/api/webhook/leads', id));
  });

  it('answers PUT text/plain on the lead endpoint 405 (the mock has a template for it)', async () => {
    const { api } = await testStack();
    const res = await api('/api/webhook/leads', { method: 'PUT', headers: { 'Content-Type': 'text/plain' }, body: 'hello' });
    expect(res.status).toBe(405);
    await expectDeployedAnswer(res, (id) => deployedMock('/api/webhook/leads', id));
  });

  it.each([
    ['an unknown path', '/nope', 'POST'],
    ['a wrong method on the lead endpoint', '/api/webhook/leads', 'PUT'],
  ])('answers %s with a content type the mocks have no template for 415, as the deployed UNSUPPORTED_MEDIA_TYPE', async (_what, pathname, method) => {
    const { api } = await testStack();
    const res = await api(pathname, { method, headers: { 'Content-Type': 'image/png' }, body: 'x' });
    expect(res.status).toBe(415);
    await expectDeployedAnswer(res, (id) => deployedGatewayResponse('UNSUPPORTED_MEDIA_TYPE', id));
  });

  it('answers the CORS preflight without a key, with the headers of the deployed OPTIONS mock', async () => {
    const { api } = await testStack();
    const res = await api('/api/webhook/leads', { method: 'OPTIONS', headers: { Origin: 'https://plumber.example', 'Access-Control-Request-Method': 'POST' } });
    expect(res.status).toBe(204);
    expect(res.headers.get('access-control-allow-headers')).toBe('Content-Type,X-API-Key,Authorization,Idempotency-Key');
    await expectDeployedAnswer(res, (id) => deployedMock('/api/webhook/leads', id, 'OPTIONS'));
  });

  it('answers a body over 10 MB 413 before any function runs', async () => {
    const { api } = await testStack();
    const res = await api('/api/webhook/leads', { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: 'x'.repeat(10 * 1024 * 1024 + 1) });
    await expectDeployedAnswer(res, (id) => deployedGatewayResponse('REQUEST_TOO_LARGE', id));
  });

  it.each([
    ['two spaces', (k: string) => `Bearer  ${k}`],
    ['a tab', (k: string) => `Bearer\t${k}`],
    ['a trailing word', (k: string) => `Bearer ${k} x`],
  ])('refuses a Bearer key written with %s (the WAF would count it as a key of its own): 401 problem', async (_what, spell) => {
    const { api } = await testStack();
    const t = await newTenant();
    expect((await api('/api/webhook/leads', { headers: { Authorization: `bearer ${t.key}` } })).status).toBe(200);
    const res = await api('/api/webhook/leads', { headers: { Authorization: spell(t.key) } });
    expect(res.status).toBe(401);
    expect(res.headers.get('content-type')).toBe('application/problem+json');
  });

  it('passes a request on a route to the handler (no key: 401 problem)', async () => {
    const { api } = await testStack();
    const res = await api('/api/webhook/leads');
    expect(res.status).toBe(401);
    expect(res.headers.get('content-type')).toContain('application/problem+json');
  });
});

// --- The throttle, the WAF and a failing function, on a server of their own (small limits) -------

describe('the local front door under load and failure', () => {
  const ok: HttpHandler = async () => ({ statusCode: 200, headers: { 'Content-Type': 'application/json' }, body: '{}' } satisfies APIGatewayProxyResult);
  async function withServer(options: Partial<Parameters<typeof startHttpServer>[0]>, run: (url: string) => Promise<void>): Promise<void> {
    const server = await startHttpServer({ port: 0, handlers: { leadIntake: ok }, ...options });
    try {
      await run(server.url);
    } finally {
      await server.close();
    }
  }
  const get = (url: string, headers: Record<string, string> = {}) => fetch(`${url}/api/webhook/leads`, { headers });

  it('answers over a method\'s throttle 429 with Retry-After, problem+json; every method has a bucket of its own', async () => {
    await withServer({ throttles: { route: { rateLimit: 0.001, burstLimit: 2 }, catchAll: { rateLimit: 0.001, burstLimit: 1 } } }, async (url) => {
      expect((await get(url)).status).toBe(200);
      expect((await get(url)).status).toBe(200);
      const res = await get(url);
      expect(res.status).toBe(429);
      expect(res.headers.get('retry-after')).toBe('1');
      await expectDeployedAnswer(res, (id) => deployedGatewayResponse('THROTTLED', id));
      // POST has its own bucket, and so does its preflight.
      expect((await fetch(`${url}/api/webhook/leads`, { method: 'POST' })).status).toBe(200);
      expect((await fetch(`${url}/api/webhook/leads`, { method: 'OPTIONS' })).status).toBe(204);
      // Scanners spend the catch-all's small bucket, per resource, never a lead method's.
      expect((await fetch(`${url}/nope`)).status).toBe(404);
      expect((await fetch(`${url}/other`)).status).toBe(429); // the same {proxy+} method
      expect((await fetch(`${url}/api`)).status).toBe(404); // the ANY on /api
      expect((await fetch(`${url}/api/webhook/leads`, { method: 'PUT' })).status).toBe(405);
      expect((await fetch(`${url}/api/webhook/leads`, { method: 'DELETE' })).status).toBe(429); // the same ANY
      expect((await fetch(`${url}/api/webhook/leads`, { method: 'POST' })).status).toBe(200);
    });
  });

  it('tells the stack of each 429 it answers itself, once per reason every few seconds', async () => {
    const reasons: string[] = [];
    await withServer({ throttles: { route: { rateLimit: 0.001, burstLimit: 1 } }, wafRules: rulesWith({ PerAddressWithoutKey: 2 }), onRefused: (r) => reasons.push(r) }, async (url) => {
      const key = newKey();
      expect((await get(url, { 'X-API-Key': key })).status).toBe(200);
      for (let i = 0; i < 3; i++) expect((await get(url, { 'X-API-Key': key })).status).toBe(429);
      for (let i = 0; i < 2; i++) await get(url, { Authorization: 'Bearer a-session-token' });
      for (let i = 0; i < 2; i++) expect((await get(url, { Authorization: 'Bearer a-session-token' })).status).toBe(429);
    });
    expect(reasons).toEqual([
      '429: the throttle of GET /api/webhook/leads is spent',
      '429: the WAF rule PerAddressWithoutKey blocks 127.0.0.1',
    ]);
  });

  it('keeps its buckets and windows on a clock that never steps: a wall clock set back drains nothing', async () => {
    await withServer({ throttles: { route: { rateLimit: 1, burstLimit: 2 } } }, async (url) => {
      expect((await get(url)).status).toBe(200);
      const wall = Date.now();
      const setBack = jest.spyOn(Date, 'now').mockImplementation(() => wall - 600_000); // NTP steps the clock back 10 minutes
      try {
        expect((await get(url)).status).toBe(200);
      } finally {
        setBack.mockRestore();
      }
    });
  });

  it('counts the clients behind one address (--clients-per-address) in the per-address rules only', () => {
    const scaled = Object.fromEntries(wafRulesFor(20).map((r) => [r.name, r.limit]));
    const deployed = Object.fromEntries(wafRules.map((r) => [r.name, r.limit]));
    expect(scaled).toEqual({ ...deployed, PerAddress: deployed.PerAddress * 20, PerAddressWithoutKey: deployed.PerAddressWithoutKey * 20 });
    expect(wafRulesFor(1)).toEqual(wafRules);
  });

  it('throttles each method by the deployed numbers: lead methods by the sized bucket, catch-alls by the low one', () => {
    expect(apiMethodFor('/api/webhook/leads', 'POST')).toEqual({ resource: '/api/webhook/leads', method: 'POST', throttle: routeThrottle });
    expect(apiMethodFor('/api/webhook/leads', 'OPTIONS')).toEqual({ resource: '/api/webhook/leads', method: 'OPTIONS', throttle: routeThrottle });
    expect(apiMethodFor('/api/webhook/leads', 'PATCH')).toEqual({ resource: '/api/webhook/leads', method: 'ANY', throttle: catchAllThrottle });
    expect(apiMethodFor('/api/webhook/leads/x/y', 'POST')).toEqual({ resource: '/api/webhook/leads/{proxy+}', method: 'ANY', throttle: catchAllThrottle });
    expect(apiMethodFor('/api/other', 'GET')).toEqual({ resource: '/api/{proxy+}', method: 'ANY', throttle: catchAllThrottle });
    expect(apiMethodFor('/', 'GET')).toEqual({ resource: '/', method: 'ANY', throttle: catchAllThrottle });
    expect(apiMethodFor('/x', 'GET').resource).toBe('/{proxy+}');
  });

  /** The deployed rules, some limits shrunk so a few requests reach them. */
  const rulesWith = (limits: Record<string, number>) => wafRules.map((r) => ({ ...r, limit: limits[r.name] ?? r.limit }));
  const newKey = () => generateApiKey().key;

  it('blocks a flooding key at the WAF while another key is served (one key never refuses another)', async () => {
    await withServer({ wafRules: rulesWith({ PerApiKey: 3, PerBearerKey: 3, PerAddressWithoutKey: 3 }) }, async (url) => {
      const [flood, calm] = [newKey(), newKey()];
      for (let i = 0; i < 3; i++) expect((await get(url, { 'X-API-Key': flood })).status).toBe(200);
      const blocked = await get(url, { 'X-API-Key': flood });
      expect(blocked.status).toBe(429);
      expect(blocked.headers.get('retry-after')).toBe('60');
      await expectDeployedAnswer(blocked, (id) => deployedGatewayResponse('WAF_FILTERED', id));
      // Another key, a Bearer key, and a keyless caller each still get through.
      expect((await get(url, { 'X-API-Key': calm })).status).toBe(200);
      expect((await get(url, { Authorization: `Bearer ${calm}` })).status).toBe(200);
      expect((await get(url)).status).toBe(200);
      // Bearer keys are counted the same way.
      for (let i = 0; i < 2; i++) expect((await get(url, { Authorization: `Bearer ${calm}` })).status).toBe(200);
      expect((await get(url, { Authorization: `Bearer ${calm}` })).status).toBe(429);
      // Keyless requests are counted per address.
      for (let i = 0; i < 2; i++) expect((await get(url)).status).toBe(200);
      expect((await get(url)).status).toBe(429);
      expect((await get(url, { 'X-API-Key': calm })).status).toBe(200);
    });
  });

  it('counts case and whitespace variants of one key as one key', async () => {
    await withServer({ wafRules: rulesWith({ PerApiKey: 3, PerBearerKey: 3 }) }, async (url) => {
      const key = newKey();
      for (const value of [`Bearer ${key}`, `bearer ${key}`, `BEARER ${key.toUpperCase()}`]) expect((await get(url, { Authorization: value })).status).toBe(200);
      expect((await get(url, { Authorization: `bEaReR ${key.toLowerCase()}` })).status).toBe(429);
      const other = newKey();
      for (const value of [other, other.toLowerCase(), other.toUpperCase()]) expect((await get(url, { 'X-API-Key': value })).status).toBe(200);
      expect((await get(url, { 'X-API-Key': other })).status).toBe(429);
    });
  });

  it('limits random well-formed keys from one address by the per-address rule', async () => {
    await withServer({ wafRules: rulesWith({ PerAddress: 5 }) }, async (url) => {
      for (let i = 0; i < 5; i++) expect((await get(url, { 'X-API-Key': newKey() })).status).toBe(200);
      const res = await get(url, { Authorization: `Bearer ${newKey()}` });
      expect(res.status).toBe(429);
      await expectDeployedAnswer(res, (id) => deployedGatewayResponse('WAF_FILTERED', id));
    });
  });

  it('counts malformed keys as no key (their variants are never keys of their own), and never counts preflights', async () => {
    await withServer({ wafRules: rulesWith({ PerAddressWithoutKey: 3 }) }, async (url) => {
      const key = newKey();
      // A browser's preflights (no key by design) from one NATed address are never refused.
      for (let i = 0; i < 10; i++) expect((await fetch(`${url}/api/webhook/leads`, { method: 'OPTIONS' })).status).toBe(204);
      for (const value of [`Bearer  ${key}`, `Bearer\t${key}`, `Bearer ${key} x`]) expect((await get(url, { Authorization: value })).status).toBe(200);
      expect((await get(url, { 'X-API-Key': 'not-a-key' })).status).toBe(429);
      expect((await get(url, { 'X-API-Key': key })).status).toBe(200);
    });
  });
  it('answers a function that throws 502, as API Gateway does for a failed Lambda proxy integration', async () => {
    const failing: HttpHandler = async () => {
      throw new Error('boom');
    };
    const errors: unknown[] = [];
    await withServer({ handlers: { leadIntake: failing }, onError: (e) => errors.push(e) }, async (url) => {
      const res = await get(url);
      expect(res.status).toBe(502);
      const body = (await res.clone().json()) as { detail: string };
      await expectDeployedAnswer(res, (id) => deployedGatewayResponse(lambdaFailure.type, id, lambdaFailure));
      // A Lambda time-out is this 502 (never the 504): the retry advice must be here.
      expect(body.detail).toContain('retry with the same Idempotency-Key');
      expect(errors).toHaveLength(1);
    });
  });
});

describe('the WAF key limit bounds per-organization overrides', () => {
  it('refuses a rate-limit override above the WAF\'s per-key limit, which would refuse the key at the WAF first', async () => {
    const over = await runCli(['org', 'create', '--name', 'Too Fast', '--rate-limit', String(wafKeyLimitPerMinute + 1)]);
    expect(over.code).not.toBe(0);
    expect(over.stderr).toContain(`at most ${wafKeyLimitPerMinute}`);
    const at = await runCli(['org', 'create', '--name', 'Fast Enough', '--rate-limit', String(wafKeyLimitPerMinute)]);
    expect(at.code).toBe(0);
    expect(at.json<{ rateLimitPerMinute: number }>().rateLimitPerMinute).toBe(wafKeyLimitPerMinute);
  });
});

describe('the local API reference', () => {
  it('serves the OpenAPI document with this stack as its server (a local extra: not deployed)', async () => {
    const { api, info } = await testStack();
    const res = await api('/openapi.json');
    expect(res.status).toBe(200);
    const doc = (await res.json()) as { openapi: string; servers: { url: string }[]; paths: Record<string, unknown> };
    expect(doc.openapi).toBe('3.1.0');
    expect(doc.servers[0].url).toBe(info.apiUrl);
    expect(Object.keys(doc.paths)).toEqual(expect.arrayContaining(['/api/webhook/leads', '/api/settings', '/api/settings/keys/{id}']));
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
