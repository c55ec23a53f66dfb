/**
 * The HTTP edge shared by API handlers (middy): request id, CORS and rate-limit headers on every
 * response, errors mapped to problem+json in one place, one request-log entry per request.
 */
import middy from '@middy/core';
import type { APIGatewayProxyEvent, APIGatewayProxyResult, Context } from 'aws-lambda';
import { cors } from '../../lib/topology.js';
import type { Deps } from '../core/platform/deps.js';
import { lambdaDeps } from '../core/platform/deps.js';
import { toProblem, payloadTooLarge, unsupportedMediaType, badRequest, DomainError } from '../core/platform/errors.js';
import { logger, flushMetrics } from '../core/platform/observability.js';
import { recordRequest } from '../core/tenancy/request-log.js';

export interface RequestScope {
  deps: Deps;
  requestId: string;
  /** Set by the route once it knows them: they go into headers and the request log. */
  organizationId?: string;
  keyId?: string;
  headers: Record<string, string>;
}

export type Route = (event: APIGatewayProxyEvent, scope: RequestScope, context?: Context) => Promise<{ status: number; body: unknown; headers?: Record<string, string> }>;

const corsHeaders = {
  'Access-Control-Allow-Origin': cors.allowOrigins.join(','),
  'Access-Control-Expose-Headers': cors.exposeHeaders.join(','),
};

/** Seconds a caller waits before retrying when the function cannot get its settings (SSM's pause between attempts). */
const DEPS_RETRY_AFTER_SECONDS = 10;
const depsUnavailable = () => new DomainError(503, 'service-unavailable', 'Service unavailable',
  `The service cannot serve requests right now; retry in ${DEPS_RETRY_AFTER_SECONDS} s.`, { headers: { 'Retry-After': String(DEPS_RETRY_AFTER_SECONDS) } });

/** The problem+json answer for anything thrown (errors.ts maps it), with the edge's headers. */
function problemResult(error: unknown, requestId: string, headers: Record<string, string> = {}): APIGatewayProxyResult {
  const { problem, headers: own } = toProblem(error, requestId);
  return {
    statusCode: problem.status,
    headers: { 'Content-Type': 'application/problem+json', ...corsHeaders, 'X-Request-Id': requestId, ...headers, ...own },
    body: JSON.stringify(problem),
  };
}

export function httpEndpoint(route: Route, options: { deps?: () => Promise<Deps> } = {}) {
  const getDeps = options.deps ?? lambdaDeps;
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
      return problemResult(depsUnavailable(), requestId);
    }
    const scope: RequestScope = { deps, requestId, headers: {} };
    let result: APIGatewayProxyResult;
    try {
      const out = await route(event, scope, context);
      result = {
        statusCode: out.status,
        headers: { 'Content-Type': 'application/json', ...corsHeaders, 'X-Request-Id': requestId, ...scope.headers, ...out.headers },
        body: JSON.stringify(out.body),
      };
    } catch (error) {
      result = problemResult(error, requestId, scope.headers);
      if (result.statusCode >= 500) logger.error('request failed', { requestId, error: error as Error });
    }
    await recordRequest(deps, {
      requestId,
      organizationId: scope.organizationId,
      keyId: scope.keyId,
      method: event.httpMethod,
      route: event.resource ?? event.path,
      status: result.statusCode,
      latencyMs: Date.now() - started,
    });
    return result;
  });
}

/** Case-insensitive header read. */
export function header(event: APIGatewayProxyEvent, name: string): string | undefined {
  const lower = name.toLowerCase();
  for (const [k, v] of Object.entries(event.headers ?? {})) if (k.toLowerCase() === lower) return v ?? undefined;
  return undefined;
}

/** The JSON body of a request, enforcing content type, size and syntax (415, 413, 400). */
export function jsonBody(event: APIGatewayProxyEvent, maxBytes: number): unknown {
  const type = header(event, 'content-type') ?? '';
  if (!/^application\/([a-z.+-]*\+)?json\s*(;|$)/i.test(type.trim())) {
    throw unsupportedMediaType(`Send the body as application/json${type ? `, not ${type.split(';')[0]}` : ''}.`);
  }
  const raw = event.isBase64Encoded ? Buffer.from(event.body ?? '', 'base64') : Buffer.from(event.body ?? '', 'utf8');
  if (raw.length > maxBytes) throw payloadTooLarge(maxBytes);
  try {
    return JSON.parse(raw.toString('utf8'));
  } catch (error) {
    throw badRequest(`The body is not valid JSON: ${(error as Error).message}.`);
  }
}
