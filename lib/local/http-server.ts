/**
 * The local API Gateway (and the WAF in front of it), answering what the deployed stage answers:
 * the topology's routes become REST API (v1) proxy events for the real handlers; CORS preflights,
 * unknown paths (404) and wrong methods (405) are answered without a function, as the stage's MOCK
 * integrations do; the WAF rate rules, the per-method throttle, the payload limit and a failing function
 * give the stage's gateway responses. Every one of those answers comes from functions/front-door/, which
 * the CDK stack renders too (docs/local-stack.md). `/openapi.json` is a local extra.
 */
import { createServer, type IncomingMessage, type ServerResponse, type Server } from 'node:http';
import { deflateSync, gzipSync } from 'node:zlib';
import { randomUUID } from 'node:crypto';
import type { APIGatewayProxyEvent, APIGatewayProxyResult } from 'aws-lambda';
import { catchAllAnswers, compressionMinBytes, gatewayMaxBodyBytes, gatewayProblemBody, gatewayResponses, lambdaFailure, mockAcceptsContentType, isBinaryMediaType, malformedPath, type GatewayAnswerSpec } from '../../functions/front-door/gateway-answers.js';
import { corsPreflightHeaders, crossOrigin, methodsOn, routes, apiMethodFor, resourceFor, catchAllThrottle, type RouteSpec, type ThrottleSpec } from '../../functions/front-door/routes.js';
import { corsResponseHeaders } from '../../functions/core/intake/cors.js';
import { wafRules as defaultWafRules, applyWafTransforms, wellFormedKeys, type WafRuleSpec } from '../../functions/front-door/waf.js';
import { lambdaContext } from './lambda-context.js';
import { isLoopbackHost, foreignHostProblem, listenOnLoopback } from './loopback-host.js';
import { openApiDocument } from '../../functions/core/settings/openapi.js';

export type HttpHandler = (event: APIGatewayProxyEvent, context: ReturnType<typeof lambdaContext>) => Promise<APIGatewayProxyResult>;

function send(res: ServerResponse, status: number, headers: Record<string, string>, body: string): void {
  res.writeHead(status, { ...headers, 'Content-Length': Buffer.byteLength(body) });
  res.end(body);
}

/**
 * The function's answer as API Gateway sends it with minimumCompressionSize set: gzip (or deflate)
 * when the client accepts it and the body is at least compressionMinBytes, else as is.
 */
function compressed(req: IncomingMessage, headers: Record<string, string | string[]>, payload: Buffer): { headers: Record<string, string | string[]>; payload: Buffer } {
  const accepts = String(req.headers['accept-encoding'] ?? '').toLowerCase();
  const already = Object.keys(headers).some((h) => h.toLowerCase() === 'content-encoding');
  if (already || payload.length < compressionMinBytes) return { headers, payload };
  const encoding = /\bgzip\b/.test(accepts) ? 'gzip' : /\bdeflate\b/.test(accepts) ? 'deflate' : undefined;
  if (!encoding) return { headers, payload };
  return { headers: { ...headers, 'Content-Encoding': encoding, Vary: 'Accept-Encoding' }, payload: encoding === 'gzip' ? gzipSync(payload) : deflateSync(payload) };
}

/**
 * A problem+json answer of the gateway. `fromMock`: a catch-all route's MOCK integration, which also
 * maps X-Request-Id (gateway responses cannot map context variables to headers).
 */
function sendAnswer(res: ServerResponse, spec: GatewayAnswerSpec, requestId: string, opts: { status?: number; message?: string; fromMock?: boolean } = {}): void {
  send(res, opts.status ?? spec.status!, {
    'Content-Type': 'application/problem+json',
    ...(opts.fromMock ? { 'X-Request-Id': requestId } : {}),
    ...corsResponseHeaders,
    ...spec.headers,
  }, gatewayProblemBody(spec, requestId, opts.message));
}

/** Whether every percent-escape of the path decodes (else API Gateway answers 400 before any route). */
function wellEscaped(pathname: string): boolean {
  try {
    decodeURIComponent(pathname);
    return true;
  } catch {
    return false;
  }
}

/** The body, or 'too-large' (read to its end but not kept, so the client gets the 413, not a reset). */
async function readBody(req: IncomingMessage): Promise<Buffer | 'too-large'> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size <= gatewayMaxBodyBytes) chunks.push(chunk as Buffer);
  }
  return size > gatewayMaxBodyBytes ? 'too-large' : Buffer.concat(chunks);
}

/**
 * Milliseconds on a clock that never steps: a wall clock set back (NTP on a fresh machine) would
 * hold every request in a window, or drain every bucket, until it caught up.
 */
const monotonicMs = () => performance.now();

/**
 * The WAF's rate-based rules, in priority order: the first that blocks ends the evaluation, as in
 * WAF. Each counts per key in the trailing window (blocked requests count too, as in WAF).
 */
export class WafRateRules {
  private readonly seen = new Map<string, number[]>();
  constructor(private readonly rules: WafRuleSpec[]) {}

  /** Counts the request; the name of the rule that blocks it, if one does. */
  blocks(request: { headers: IncomingMessage['headers']; address: string; method: string }, now = monotonicMs()): string | undefined {
    if (this.seen.size > 10_000) this.sweep(now);
    const header = (name: string) => {
      const value = request.headers[name];
      return Array.isArray(value) ? value.join(',') : value;
    };
    const keys = wellFormedKeys(header);
    for (const rule of this.rules) {
      if (rule.exceptMethods?.includes(request.method) || (rule.withoutKey && keys.length > 0)) continue;
      // WAF skips a request that lacks the rule's key (a malformed key header is no key).
      if ('header' in rule.key && !keys.includes(rule.key.header)) continue;
      const key = 'header' in rule.key ? applyWafTransforms(header(rule.key.header.header)!, rule.key.transforms) : request.address;
      const id = `${rule.name}\u0000${key}`;
      const times = (this.seen.get(id) ?? []).filter((t) => t > now - rule.windowSeconds * 1000);
      times.push(now);
      this.seen.set(id, times);
      if (times.length > rule.limit) return rule.name;
    }
    return undefined;
  }

  private sweep(now: number): void {
    const longest = Math.max(...this.rules.map((r) => r.windowSeconds)) * 1000;
    for (const [id, times] of this.seen) if (times.at(-1)! <= now - longest) this.seen.delete(id);
  }
}

/** The deployed WAF rules, with each per-address limit counting `clients` callers behind one address. */
export const wafRulesFor = (clients: number): WafRuleSpec[] =>
  defaultWafRules.map((rule) => ('address' in rule.key ? { ...rule, limit: rule.limit * clients } : rule));

/** API Gateway's token bucket: one per method of the stage, shared by every caller of that method. */
export class TokenBucket {
  private tokens: number;
  private at = monotonicMs();
  constructor(private readonly limits: ThrottleSpec) {
    this.tokens = limits.burstLimit;
  }

  take(now = monotonicMs()): boolean {
    this.tokens = Math.min(this.limits.burstLimit, this.tokens + ((now - this.at) / 1000) * this.limits.rateLimit);
    this.at = now;
    if (this.tokens < 1) return false;
    this.tokens -= 1;
    return true;
  }
}

export function toProxyEvent(req: IncomingMessage, route: RouteSpec, body: Buffer, requestId: string, pathParameters: Record<string, string> = {}): APIGatewayProxyEvent {
  const url = new URL(req.url ?? '/', 'http://local');
  const headers: Record<string, string> = {};
  const multiValueHeaders: Record<string, string[]> = {};
  for (let i = 0; i < req.rawHeaders.length; i += 2) {
    const [name, value] = [req.rawHeaders[i], req.rawHeaders[i + 1]];
    headers[name] = headers[name] === undefined ? value : `${headers[name]},${value}`;
    (multiValueHeaders[name] ??= []).push(value);
  }
  const query: Record<string, string> = {};
  const multiQuery: Record<string, string[]> = {};
  for (const [k, v] of url.searchParams) {
    query[k] = v;
    (multiQuery[k] ??= []).push(v);
  }
  const hasQuery = Object.keys(query).length > 0;
  const sourceIp = (req.socket.remoteAddress ?? '127.0.0.1').replace(/^::ffff:/, '');
  return {
    resource: route.path,
    path: url.pathname,
    httpMethod: req.method ?? 'GET',
    headers,
    multiValueHeaders,
    queryStringParameters: hasQuery ? query : null,
    multiValueQueryStringParameters: hasQuery ? multiQuery : null,
    pathParameters: Object.keys(pathParameters).length > 0 ? pathParameters : null,
    stageVariables: null,
    // A binary media type's body goes as base64 (bytes kept); any other as text decoded leniently, as API Gateway does.
    body: body.length === 0 ? null : isBinaryMediaType(req.headers['content-type']) ? body.toString('base64') : body.toString('utf8'),
    isBase64Encoded: body.length > 0 && isBinaryMediaType(req.headers['content-type']),
    requestContext: {
      accountId: '000000000000',
      apiId: 'local',
      authorizer: undefined,
      protocol: `HTTP/${req.httpVersion}`,
      httpMethod: req.method ?? 'GET',
      path: `/local${url.pathname}`,
      stage: 'local',
      requestId,
      requestTimeEpoch: Date.now(),
      resourceId: 'local',
      resourcePath: route.path,
      identity: {
        sourceIp,
        userAgent: req.headers['user-agent'] ?? null,
        accessKey: null, accountId: null, apiKey: null, apiKeyId: null, caller: null, clientCert: null,
        cognitoAuthenticationProvider: null, cognitoAuthenticationType: null, cognitoIdentityId: null,
        cognitoIdentityPoolId: null, principalOrgId: null, user: null, userArn: null,
      },
    },
  };
}

export interface LocalApiOptions {
  port: number;
  /** Handlers by topology function name. */
  handlers: Record<string, HttpHandler>;
  onError?: (error: unknown) => void;
  /** Tests shrink these to reach them in a few requests; the defaults are the deployed ones. */
  throttles?: { route?: ThrottleSpec; catchAll?: ThrottleSpec };
  wafRules?: WafRuleSpec[];
  /** Told of each 429 the front door itself answers (a WAF rule or a method's throttle): at most once per reason every 10 s. */
  onRefused?: (reason: string) => void;
}

/** Reports a reason at most once per `periodMs`, with how many were left unsaid since. */
function everyFewSeconds(report: (reason: string) => void, periodMs = 10_000): (reason: string) => void {
  const last = new Map<string, { at: number; unsaid: number }>();
  return (reason) => {
    const now = monotonicMs();
    const seen = last.get(reason);
    if (seen && now - seen.at < periodMs) { seen.unsaid += 1; return; }
    if (last.size > 1000) last.clear();
    last.set(reason, { at: now, unsaid: 0 });
    report(seen?.unsaid ? `${reason} (and ${seen.unsaid} more since)` : reason);
  };
}

export async function startHttpServer(options: LocalApiOptions): Promise<{ server: Server; url: string; close(): Promise<void> }> {
  const waf = new WafRateRules(options.wafRules ?? defaultWafRules);
  const refused = options.onRefused ? everyFewSeconds(options.onRefused) : () => undefined;
  // One bucket per (resource, method), as API Gateway applies stage throttling per method.
  const buckets = new Map<string, TokenBucket>();
  const takeToken = (pathname: string, httpMethod: string) => {
    const method = apiMethodFor(pathname, httpMethod);
    const limits = method.throttle === catchAllThrottle ? options.throttles?.catchAll : options.throttles?.route;
    const id = `${method.resource} ${method.method}`;
    if (!buckets.has(id)) buckets.set(id, new TokenBucket(limits ?? method.throttle));
    return buckets.get(id)!.take();
  };
  const server = createServer(async (req, res) => {
    const requestId = randomUUID();
    // API Gateway names every answer's request, the function's ones included.
    res.setHeader('x-amzn-RequestId', requestId);
    if (!isLoopbackHost(req.headers.host, (server.address() as { port: number }).port)) return send(res, 403, { 'Content-Type': 'application/problem+json' }, foreignHostProblem(requestId)); // DNS rebinding
    try {
      const pathname = new URL(req.url ?? '/', 'http://local').pathname;
      if (pathname === '/openapi.json' && req.method === 'GET') {
        // Local only: the API reference, generated from the same zod schemas the handler validates with.
        return send(res, 200, { 'Content-Type': 'application/json', ...corsResponseHeaders }, JSON.stringify(openApiDocument(`http://${req.headers.host ?? '127.0.0.1'}`), null, 2));
      }
      // In the order AWS applies them: the WAF, the method's throttle, the payload limit, then the integration.
      const address = (req.socket.remoteAddress ?? '127.0.0.1').replace(/^::ffff:/, '');
      const blockedBy = waf.blocks({ headers: req.headers, address, method: req.method ?? 'GET' });
      if (blockedBy) {
        refused(`429: the WAF rule ${blockedBy} blocks ${address}`);
        return sendAnswer(res, gatewayResponses.WAF_FILTERED, requestId);
      }
      if (!wellEscaped(pathname)) return sendAnswer(res, gatewayResponses[malformedPath.type], requestId, { status: malformedPath.status, message: malformedPath.message });
      if (!takeToken(pathname, req.method ?? 'GET')) {
        refused(`429: the throttle of ${req.method} ${resourceFor(pathname).resource} is spent`);
        return sendAnswer(res, gatewayResponses.THROTTLED, requestId);
      }
      const body = await readBody(req);
      if (body === 'too-large') return sendAnswer(res, gatewayResponses.REQUEST_TOO_LARGE, requestId);

      // The resource the path lands on (`/api/settings/keys/{id}` for `/api/settings/keys/key_1`), as on API Gateway.
      const resource = resourceFor(pathname);
      const allowed = resource.proxy ? [] : methodsOn(resource.resource);
      // A catch-all mock refuses a content type it has no request template for (passthrough NEVER).
      const mock = (spec: GatewayAnswerSpec) => mockAcceptsContentType(req.headers['content-type'])
        ? sendAnswer(res, spec, requestId, { fromMock: true })
        : sendAnswer(res, gatewayResponses.UNSUPPORTED_MEDIA_TYPE, requestId);
      if (allowed.length === 0) return mock(catchAllAnswers.notFound);
      if (req.method === 'OPTIONS' && crossOrigin(resource.resource)) {
        // The CORS preflight needs no key (docs/leads.md#browsers): the headers of the stage's OPTIONS mock.
        return send(res, 204, corsPreflightHeaders(allowed), '');
      }
      const route = routes.find((r) => r.path === resource.resource && r.method === req.method);
      if (!route) return mock(catchAllAnswers.methodNotAllowed(allowed));
      const handler = options.handlers[route.function];
      let result: APIGatewayProxyResult;
      try {
        result = await handler(toProxyEvent(req, route, body, requestId, resource.parameters), lambdaContext(route.function));
      } catch (error) {
        // A function that throws (or answers nothing usable) is a 502 from API Gateway, not a problem of ours.
        options.onError?.(error);
        return sendAnswer(res, gatewayResponses[lambdaFailure.type], requestId, { status: lambdaFailure.status, message: lambdaFailure.message });
      }
      const headers: Record<string, string | string[]> = { ...(result.headers as Record<string, string>) };
      for (const [k, v] of Object.entries(result.multiValueHeaders ?? {})) headers[k] = v.map(String);
      const answer = compressed(req, headers, result.isBase64Encoded ? Buffer.from(result.body, 'base64') : Buffer.from(result.body ?? ''));
      res.writeHead(result.statusCode, { ...answer.headers, 'Content-Length': answer.payload.length });
      res.end(answer.payload);
    } catch (error) {
      options.onError?.(error);
      if (!res.headersSent) sendAnswer(res, gatewayResponses[lambdaFailure.type], requestId, { status: lambdaFailure.status, message: lambdaFailure.message });
      else res.destroy();
    }
  });
  // Longer than any client's idle time-out (undici: 4 s), so the client always drops an idle socket
  // first: at 5 s, a client whose event loop was blocked reused a socket the server was closing.
  server.keepAliveTimeout = 65_000;
  const port = await listenOnLoopback(server, options.port, 'set PORT or --port to another');
  return {
    server,
    url: `http://127.0.0.1:${port}`,
    close: () => new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections();
    }),
  };
}
