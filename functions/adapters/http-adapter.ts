/**
 * The HTTP adapter shared by API handlers (middy): parses API Gateway's event into the domain's plain
 * request, and from the route's outcome builds the response (request id, CORS unless same-origin, and the route's
 * headers on every answer, errors mapped to problem+json in one place) and one request-log entry.
 */
import middy from '@middy/core';
import type { APIGatewayProxyEvent, APIGatewayProxyResult, Context } from 'aws-lambda';
import { corsResponseHeaders } from '../core/intake/cors.js';
import type { Deps } from '../core/platform/deps.js';
import { lambdaDeps } from '../core/platform/deps.js';
import { toProblem, DomainError } from '../core/platform/errors.js';
import type { HttpOutcome, HttpRequest } from '../core/platform/http-request.js';
import { logger, flushMetrics } from '../core/platform/observability.js';
import { recordRequest } from '../core/tenancy/request-log.js';

/** A route of the domain: a plain request in, a plain outcome out (e.g. core/intake/handle-lead-request.ts). */
export type HttpRoute = (deps: Deps, request: HttpRequest) => Promise<HttpOutcome>;

/** Seconds a caller waits before retrying when the function cannot get its settings (SSM's pause between attempts). */
const DEPS_RETRY_AFTER_SECONDS = 10;
const depsUnavailable = () => new DomainError(503, 'service-unavailable', 'Service unavailable',
  `The service cannot serve requests right now; retry in ${DEPS_RETRY_AFTER_SECONDS} s.`, { headers: { 'Retry-After': String(DEPS_RETRY_AFTER_SECONDS) } });

/** The problem+json answer for anything thrown (errors.ts maps it), with the adapter.s headers. */
function problemResult(error: unknown, requestId: string, headers: Record<string, string> = {}, cors = corsResponseHeaders): APIGatewayProxyResult {
  const { problem, headers: own } = toProblem(error, requestId);
  return {
    statusCode: problem.status,
    headers: { 'Content-Type': 'application/problem+json', ...cors, 'X-Request-Id': requestId, ...headers, ...own },
    body: JSON.stringify(problem),
  };
}

/** The plain request the domain takes, from API Gateway's event and the Lambda context. */
function toHttpRequest(event: APIGatewayProxyEvent, requestId: string, context?: Pick<Context, 'getRemainingTimeInMillis'>): HttpRequest {
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(event.headers ?? {})) if (typeof value === 'string') headers[name.toLowerCase()] = value;
  return {
    method: event.httpMethod,
    headers,
    repeatedHeaders: repeatedHeaders(event),
    body: event.isBase64Encoded ? Buffer.from(event.body ?? '', 'base64') : (event.body ?? undefined),
    sourceIp: event.requestContext?.identity?.sourceIp ?? undefined,
    requestId,
    // Taken now, in the adapter: the time left shrinks while the domain authenticates and rate-limits.
    deadline: context ? Date.now() + context.getRemainingTimeInMillis() : undefined,
    resource: event.resource,
    pathParameters: Object.fromEntries(Object.entries(event.pathParameters ?? {}).filter((e): e is [string, string] => typeof e[1] === 'string')),
    query: Object.fromEntries(Object.entries(event.queryStringParameters ?? {}).filter((e): e is [string, string] => typeof e[1] === 'string')),
    baseUrl: baseUrlOf(event, headers),
  };
}

/** Header names (lower-cased) sent more than once, as repeats or in two cases: API Gateway keeps one value in `headers`, all in `multiValueHeaders`. */
function repeatedHeaders(event: APIGatewayProxyEvent): string[] {
  const counts = new Map<string, number>();
  const multi = event.multiValueHeaders ?? {};
  const names = Object.keys(multi).length > 0 ? Object.entries(multi).map(([n, v]) => [n, v?.length ?? 0] as const) : Object.keys(event.headers ?? {}).map((n) => [n, 1] as const);
  for (const [name, n] of names) counts.set(name.toLowerCase(), (counts.get(name.toLowerCase()) ?? 0) + n);
  return [...counts].filter(([, n]) => n > 1).map(([name]) => name);
}

/** The API's base URL as the caller reached it: the stage prefixes paths on an execute-api host only. */
function baseUrlOf(event: APIGatewayProxyEvent, headers: Record<string, string>): string | undefined {
  if (!headers.host) return undefined;
  const proto = headers['x-forwarded-proto'] ?? 'http';
  const domain = event.requestContext?.domainName ?? '';
  return `${proto}://${headers.host}${domain.includes('.execute-api.') ? `/${event.requestContext.stage}` : ''}`;
}

/** API Gateway's result for an outcome: the answer as JSON, or the error as problem+json. */
function toResult(outcome: HttpOutcome, requestId: string, cors: Record<string, string>): APIGatewayProxyResult {
  if (!('status' in outcome)) {
    const result = problemResult(outcome.error, requestId, outcome.headers, cors);
    if (result.statusCode >= 500) logger.error('request failed', { requestId, error: outcome.error as Error });
    return result;
  }
  // A text answer (an HTML page, a redirect's empty body) goes as is; anything else as JSON.
  const text = outcome.contentType !== undefined && typeof outcome.body === 'string';
  return {
    statusCode: outcome.status,
    headers: { 'Content-Type': text ? outcome.contentType! : 'application/json', ...cors, 'X-Request-Id': requestId, ...outcome.headers },
    body: text ? (outcome.body as string) : JSON.stringify(outcome.body),
  };
}

/** `sameOrigin`: answers for pages of this origin only (the settings API): no CORS headers. */
export function httpAdapter(route: HttpRoute, options: { deps?: () => Promise<Deps>; sameOrigin?: boolean } = {}) {
  const getDeps = options.deps ?? lambdaDeps;
  const cors = options.sameOrigin ? {} : corsResponseHeaders;
  return middy<APIGatewayProxyEvent, APIGatewayProxyResult, Error, Context>()
    // Every request's metrics (e.g. RateLimitFailOpen) are published, whether it answered or threw.
    .use({ after: flushMetrics, onError: flushMetrics })
    .handler(async (event, context) => {
    const started = Date.now();
    const requestId = event.requestContext?.requestId ?? context.awsRequestId;
    let deps: Deps;
    try {
      deps = await getDeps();
    } catch (error) {
      // Settings unreadable (SSM throttled or down at a cold start, no snapshot): a problem+json 503
      // the client can retry, not the gateway's bare 502 for a function that threw.
      logger.error('request failed: dependencies unavailable', { requestId, error: error as Error });
      return problemResult(depsUnavailable(), requestId, {}, cors);
    }
    // A route reports its errors in the outcome; one that throws anyway is answered the same way.
    const outcome = await route(deps, toHttpRequest(event, requestId, context)).catch((error: unknown): HttpOutcome => ({ error, headers: {} }));
    const result = toResult(outcome, requestId, cors);
    await recordRequest(deps, {
      requestId,
      organizationId: outcome.organizationId,
      keyId: outcome.keyId,
      method: event.httpMethod,
      route: event.resource ?? event.path,
      status: result.statusCode,
      ...(outcome.outcome ? { outcome: outcome.outcome } : {}),
      ...(outcome.clientId ? { clientId: outcome.clientId } : {}),
      latencyMs: Date.now() - started,
      ...(outcome.recordedOnClient !== undefined ? { recordedOnClient: outcome.recordedOnClient } : {}),
    });
    return result;
  });
}
