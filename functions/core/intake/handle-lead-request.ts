/**
 * The lead endpoint's two operations (docs/leads.md) over an authenticated, rate-limited
 * request: GET reports the key and its rate-limit state; POST validates the body and creates the
 * lead, once per Idempotency-Key. A publishable key (a page's key) may only POST, from an origin
 * listed on it, within its per-address window, past the honeypot and the organization's CAPTCHA;
 * it may send a no-script form (url-encoded, answered with a redirect or an HTML page). Takes a plain request and returns a plain outcome; the HTTP adapter
 * (functions/adapters/http-adapter.ts) shapes the response and the request log from it.
 */
import type { Deps } from '../platform/deps.js';
import { methodNotAllowed, toProblem, tooManyRequests, unsupportedMediaType } from '../platform/errors.js';
import { readJsonBody, type Caller, type HttpOutcome, type HttpRequest } from '../platform/http-request.js';
import type { AuthContext } from '../platform/model.js';
import type { Client } from '../platform/crm-fields.js';
import { logger } from '../platform/observability.js';
import { authenticate, ExposedSecretKeyError, RejectedKeyError } from '../tenancy/authenticate.js';
import { checkAddressRateLimit, checkRateLimit, rateLimitFor, rateLimitHeaders, reserveDailyCall, type RateLimitState } from '../tenancy/rate-limit.js';
import { createLead, newLeadClient, type LeadOutcome } from './create-lead.js';
import { boundedMeta } from './merge.js';
import { remainingTimeUntil, runIdempotent, validateIdempotencyKey } from './idempotency.js';
import { MAX_BODY_BYTES, parseLead } from './lead-schema.js';
import { verifyCaptcha, captchaProvidersSpec } from './captcha.js';
import {
  FORM_KEY_FIELD, addressRateLimited, admitPublishable, dailyCapReached, formErrorPage, formSuccess, honeypotAnswer, htmlPage,
  isFormPost, readFormBody, takeSpamFields, wantsHtml,
} from './public-form.js';

const METHODS = ['GET', 'POST'];

/** `clientId`: the client the request log links the answer to, when its body does not name it (a page's look-alike). */
type Answer = { status: number; body: unknown; headers?: Record<string, string>; contentType?: string; outcome?: string; clientId?: string };
/** A lead's answer, and whether the client this request created holds its request-log row (never on a replay). */
type LeadAnswer = Answer & { recordedOnClient?: number };

export async function handleLeadRequest(deps: Deps, request: HttpRequest): Promise<HttpOutcome> {
  // What is known so far goes with the answer or the error: the caller once authenticated, the
  // rate-limit and CORS headers once decided (they go on every answer from there on).
  let known: Caller & { headers: Record<string, string>; outcome?: string } = { headers: {} };
  try {
    if (!METHODS.includes(request.method)) throw methodNotAllowed(METHODS);
    // A plain HTML form cannot set headers: its (publishable) key comes as a field of its body.
    const form = isFormPost(request) ? readFormBody(request, MAX_BODY_BYTES) : undefined;
    const auth = await authenticate(deps, request.headers, { formKey: form?.[FORM_KEY_FIELD], allowPublishable: true, repeatedHeaders: request.repeatedHeaders });
    known = { organizationId: auth.organization.id, keyId: auth.key.keyId, headers: {} };
    if (form && !auth.key.publishable) {
      throw unsupportedMediaType('application/x-www-form-urlencoded bodies are accepted from publishable keys only: send application/json.');
    }

    const policy = auth.key.publishable;
    if (policy) {
      // The answer depends on Origin: shared caches must not hand one origin's answer to another.
      known.headers = { Vary: 'Origin' };
      const origin = admitPublishable(policy, request);
      known.headers = { Vary: 'Origin', 'Access-Control-Allow-Origin': origin };
      // Per client address first: one address's flood is refused before it spends the key's minute.
      const perAddress = await checkAddressRateLimit(deps, auth.key.keyId, request.sourceIp, policy.perIpLimit);
      if (!perAddress.allowed) {
        known.headers = { ...known.headers, ...rateLimitHeaders(perAddress) };
        throw addressRateLimited(policy.perIpLimit, perAddress.retryAfterSeconds ?? 1);
      }
    }

    // Both methods count against the key's limit.
    const limit = await checkRateLimit(deps, auth.key.keyId, rateLimitFor(deps, auth.organization));
    known = { ...known, headers: { ...known.headers, ...rateLimitHeaders(limit) } };
    if (!limit.allowed) throw tooManyRequests(limit.retryAfterSeconds ?? 1);

    const answer: LeadAnswer = request.method === 'GET' ? describeKey(auth, limit) : await createLeadOnce(deps, request, auth, form);
    const { outcome, recordedOnClient, clientId: _linked, ...rest } = answer;
    const clientId = clientOf(answer);
    return {
      ...known, ...rest, headers: { ...known.headers, ...answer.headers }, ...(outcome ? { outcome } : {}), ...(clientId ? { clientId } : {}),
      ...(recordedOnClient ? { recordedOnClient } : {}),
    };
  } catch (error) {
    // Recorded under the key's organization, so its owner sees that a secret key sits in a page.
    if (error instanceof ExposedSecretKeyError) known = { ...known, organizationId: error.organizationId, keyId: error.keyId, outcome: 'secret-key-exposed' };
    // A revoked or expired key's refused call, in its owner's request log (not billed: nothing was created).
    if (error instanceof RejectedKeyError) known = { ...known, organizationId: error.organizationId, keyId: error.keyId, outcome: error.reason };
    if (wantsHtml(request)) return errorPage(error, request, known);
    return { ...known, error };
  }
}

/** A no-script post's error as the page its visitor sees: the problem (errors.ts, the one mapping) as HTML, same status. */
function errorPage(error: unknown, request: HttpRequest, known: Caller & { headers: Record<string, string>; outcome?: string }): HttpOutcome {
  const { problem, headers } = toProblem(error, request.requestId);
  if (problem.status >= 500) logger.error('request failed', { requestId: request.requestId, error: error as Error });
  return { ...known, status: problem.status, body: formErrorPage(problem), contentType: htmlPage.contentType, headers: { ...known.headers, ...htmlPage.headers, ...headers } };
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

/**
 * POST: the lead, created once per Idempotency-Key when the request has one. A publishable key's
 * post first passes the spam defences (honeypot, then the organization's CAPTCHA) and its daily cap.
 */
async function createLeadOnce(deps: Deps, request: HttpRequest, auth: AuthContext, form: Record<string, string> | undefined): Promise<LeadAnswer> {
  const idempotencyKey = validateIdempotencyKey(request.headers['idempotency-key']);
  const body = form ?? readJsonBody(request, MAX_BODY_BYTES);
  const policy = auth.key.publishable;
  // A no-script form post is answered formSuccess (303 to its thank-you page, or 201): its client records that status as its row.
  const success = form && policy ? formSuccess(policy) : undefined;
  const rowStatus = success?.status ?? 201;
  const meta = boundedMeta({
    requestId: request.requestId, ip: request.sourceIp, userAgent: request.headers['user-agent'], rowStatus,
    ...(policy ? { channel: form ? 'form' as const : 'page' as const } : {}),
  });
  let input;
  let verify: (() => Promise<void>) | undefined;
  if (policy) {
    const { lead, honeypot, tokens } = takeSpamFields(body, policy);
    // Validated before the honeypot: an invalid post gets the 422 a person would, filled or not.
    input = parseLead(lead);
    if (honeypot) {
      const fake = honeypotAnswer(deps, auth, input, meta);
      return { ...(success ?? fake), outcome: 'honeypot' };
    }
    const provider = auth.organization.captchaProvider;
    if (provider) {
      // Checked when the lead is created, not again on an Idempotency-Key replay: a provider accepts
      // a token once, so a client's retry of a lost answer would be refused instead of replayed.
      verify = () => verifyCaptcha(deps, { organizationId: auth.organization.id, provider, token: tokens[captchaProvidersSpec[provider].field], remoteIp: request.sourceIp });
    }
  } else {
    input = parseLead(body);
  }
  // Set when this request (not a replay of an earlier one) created the client.
  let recordedOnClient: number | undefined;
  const lead = async () => {
    const outcome = await createLead(deps, auth, input, meta);
    recordedOnClient = outcome.kind === 'created' ? rowStatus : undefined;
    return leadAnswer(auth, outcome, () => newLeadClient(deps, auth, input, meta));
  };
  const cap = policy?.dailyCap;
  const create = async (): Promise<Answer> => {
    await verify?.();
    if (cap === undefined) return lead();
    const reservation = await reserveDailyCall(deps, auth.key.keyId, cap);
    if (!reservation.allowed) throw dailyCapReached(cap, reservation.retryAfterSeconds ?? 1);
    try {
      return await lead();
    } catch (error) {
      await reservation.release();
      throw error;
    }
  };
  if (success) {
    await create();
    return { ...success, recordedOnClient };
  }
  if (!idempotencyKey) return { ...await create(), recordedOnClient };

  const remainingTime = request.deadline === undefined ? undefined : remainingTimeUntil(request.deadline);
  const { result, replayed } = await runIdempotent(deps, remainingTime, {
    organizationId: auth.organization.id,
    ...(policy ? { pageKeyId: auth.key.keyId } : {}),
    idempotencyKey,
    payload: input,
    run: create,
  });
  // Not to a page: every visitor of a page shares its key, so the header would tell one that another sent the same lead.
  const headers: Record<string, string> = replayed && !policy ? { 'Idempotent-Replayed': 'true' } : {};
  // Records stored before answers carried their status hold the created client itself (a 201).
  const answer: Answer = typeof (result as Partial<Answer>).status === 'number' ? result : { status: 201, body: result };
  return { ...answer, headers: { ...answer.headers, ...headers }, recordedOnClient };
}

/** The client a lead's answer names (a honeypot's is made up), for the request log's link to its trail (docs/settings.md). */
function clientOf(answer: Answer): string | undefined {
  const id = answer.clientId ?? (answer.body as { id?: unknown } | null)?.id;
  return answer.status < 300 && answer.outcome !== 'honeypot' && typeof id === 'string' && id.startsWith('cli_') ? id : undefined;
}

/**
 * The answer to a lead (docs/leads.md "Duplicates"): 201 and the new client; 200 and only the id of
 * the client a submission was merged into, or that a repeat within 10 minutes belongs to, so that
 * whoever sends a known e-mail learns nothing stored about that person. A publishable key (a page)
 * learns nothing of a match at all: a repeat is answered as a new lead (`lookAlike`: a fresh id
 * and the time of this request, never the earlier client's id, whose time part would date the
 * first submission), and a flagged lead without its link.
 */
function leadAnswer(auth: AuthContext, outcome: LeadOutcome, lookAlike: () => Client<'lead', 'api'>): Answer {
  const organization_id = auth.organization.id;
  const page = auth.key.publishable !== undefined;
  if (outcome.kind === 'merged') return { status: 200, body: { id: outcome.clientId, organization_id, merged: true }, outcome: 'merged' };
  if (outcome.kind === 'duplicate') {
    if (page) return { status: 201, body: lookAlike(), outcome: 'duplicate', clientId: outcome.clientId };
    return { status: 200, body: { id: outcome.clientId, organization_id, duplicate: true }, outcome: 'duplicate' };
  }
  // A client this request wrote under an earlier request's id (adopting its bill): to a page, a look-alike (the id dates the earlier request).
  if (page && outcome.adopted) return { status: 201, body: lookAlike(), outcome: 'adopted', clientId: outcome.client.id };
  const { possible_duplicate_of: duplicateOf, ...client } = outcome.client;
  return { status: 201, body: page || !duplicateOf ? client : outcome.client };
}
