/**
 * The lead endpoint's two operations (DESIGN §6, §8, §9) over an authenticated, rate-limited
 * request: GET reports the key and its rate-limit state; POST validates the body and creates the
 * lead, once per Idempotency-Key. Takes a plain request and returns a plain outcome; the HTTP edge
 * (functions/edge/http-edge.ts) shapes the response and the request log from it.
 */
import type { Deps } from '../platform/deps.js';
import { methodNotAllowed, tooManyRequests } from '../platform/errors.js';
import { readJsonBody, type Caller, type HttpOutcome, type HttpRequest } from '../platform/http-request.js';
import type { AuthContext } from '../platform/model.js';
import { authenticate } from '../tenancy/authenticate.js';
import { checkRateLimit, rateLimitFor, rateLimitHeaders, type RateLimitState } from '../tenancy/rate-limit.js';
import { createLead } from './create-lead.js';
import { remainingTimeUntil, runIdempotent, validateIdempotencyKey } from './idempotency.js';
import { MAX_BODY_BYTES, parseLead } from './lead-schema.js';

const METHODS = ['GET', 'POST'];

type Answer = { status: number; body: unknown; headers?: Record<string, string> };

export async function handleLeadRequest(deps: Deps, request: HttpRequest): Promise<HttpOutcome> {
  // What is known so far goes with the answer or the error: the caller once authenticated, the
  // rate-limit headers once counted (they go on every answer from there on).
  let known: Caller & { headers: Record<string, string> } = { headers: {} };
  try {
    if (!METHODS.includes(request.method)) throw methodNotAllowed(METHODS);
    const auth = await authenticate(deps, request.headers);
    known = { organizationId: auth.organization.id, keyId: auth.key.keyId, headers: {} };

    // Both methods count against the key's limit.
    const limit = await checkRateLimit(deps, auth.key.keyId, rateLimitFor(deps, auth.organization));
    known = { ...known, headers: rateLimitHeaders(limit) };
    if (!limit.allowed) throw tooManyRequests(limit.retryAfterSeconds ?? 1);

    const answer = request.method === 'GET' ? describeKey(auth, limit) : await createLeadOnce(deps, request, auth);
    return { ...known, ...answer, headers: { ...known.headers, ...answer.headers } };
  } catch (error) {
    return { ...known, error };
  }
}

/** GET: the connectivity test. */
function describeKey(auth: AuthContext, limit: RateLimitState): Answer {
  return {
    status: 200,
    body: {
      organization: { id: auth.organization.id, name: auth.organization.name },
      key: { id: auth.key.keyId, name: auth.key.name },
      rate_limit: { limit: limit.limit, remaining: limit.remaining, reset_seconds: limit.resetSeconds, window_seconds: 60 },
    },
  };
}

/** POST: the lead, created once per Idempotency-Key when the request has one. */
async function createLeadOnce(deps: Deps, request: HttpRequest, auth: AuthContext): Promise<Answer> {
  const idempotencyKey = validateIdempotencyKey(request.headers['idempotency-key']);
  const input = parseLead(readJsonBody(request, MAX_BODY_BYTES));
  const meta = { requestId: request.requestId, ip: request.sourceIp, userAgent: request.headers['user-agent'] };
  const create = () => createLead(deps, auth, input, meta);
  if (!idempotencyKey) return { status: 201, body: await create() };

  const remainingTime = request.deadline === undefined ? undefined : remainingTimeUntil(request.deadline);
  const { result, replayed } = await runIdempotent(deps, remainingTime, {
    organizationId: auth.organization.id,
    idempotencyKey,
    payload: input,
    run: create,
  });
  const headers: Record<string, string> = replayed ? { 'Idempotent-Replayed': 'true' } : {};
  return { status: 201, body: result, headers };
}
