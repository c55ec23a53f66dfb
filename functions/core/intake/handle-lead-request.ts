/**
 * The lead endpoint's two operations (DESIGN §6, §8, §9) over an authenticated, rate-limited
 * request: GET reports the key and its rate-limit state; POST validates the body and creates the
 * lead, once per Idempotency-Key. The HTTP edge (functions/edge/http-edge.ts) does the rest.
 */
import type { APIGatewayProxyEvent, Context } from 'aws-lambda';
import { authenticate } from '../tenancy/authenticate.js';
import { methodNotAllowed, tooManyRequests } from '../platform/errors.js';
import { header, jsonBody, type RequestScope } from '../../edge/http-edge.js';
import { checkRateLimit, rateLimitFor, rateLimitHeaders } from '../tenancy/rate-limit.js';
import { createLead } from './create-lead.js';
import { runIdempotent, validateIdempotencyKey } from './idempotency.js';
import { MAX_BODY_BYTES, parseLead } from './lead-schema.js';

const METHODS = ['GET', 'POST'];

export async function leadIntake(event: APIGatewayProxyEvent, scope: RequestScope, context?: Context) {
  if (!METHODS.includes(event.httpMethod)) throw methodNotAllowed(METHODS);
  const { deps } = scope;

  const auth = await authenticate(deps, event.headers ?? {});
  scope.organizationId = auth.organization.id;
  scope.keyId = auth.key.keyId;

  // Both methods count against the key's limit; the headers go on every response from here on.
  const limit = await checkRateLimit(deps, auth.key.keyId, rateLimitFor(deps, auth.organization));
  Object.assign(scope.headers, rateLimitHeaders(limit));
  if (!limit.allowed) throw tooManyRequests(limit.retryAfterSeconds ?? 1);

  if (event.httpMethod === 'GET') {
    return {
      status: 200,
      body: {
        organization: { id: auth.organization.id, name: auth.organization.name },
        key: { id: auth.key.keyId, name: auth.key.name },
        rate_limit: { limit: limit.limit, remaining: limit.remaining, reset_seconds: limit.resetSeconds, window_seconds: 60 },
      },
    };
  }

  const idempotencyKey = validateIdempotencyKey(header(event, 'idempotency-key'));
  const input = parseLead(jsonBody(event, MAX_BODY_BYTES));
  const meta = {
    requestId: scope.requestId,
    ip: event.requestContext?.identity?.sourceIp ?? undefined,
    userAgent: header(event, 'user-agent'),
  };
  const create = () => createLead(deps, auth, input, meta);
  if (!idempotencyKey) return { status: 201, body: await create() };

  const { result, replayed } = await runIdempotent(deps, context, {
    organizationId: auth.organization.id,
    idempotencyKey,
    payload: input,
    run: create,
  });
  const headers: Record<string, string> = replayed ? { 'Idempotent-Replayed': 'true' } : {};
  return { status: 201, body: result, headers };
}
