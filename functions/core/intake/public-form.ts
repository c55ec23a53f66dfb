/**
 * What a publishable key (a key pasted into a public page, docs/leads.md#lead-forms-in-public-pages-publishable-keys) may do on the lead endpoint,
 * and the no-script form's side of it: POST only, only with an `Origin` listed on the key; the
 * url-encoded body of a plain `<form>` (its key in the `api_key` field, as a plain form cannot set
 * headers); the honeypot; and the small HTML pages a browser shows after a no-script post.
 */
import { MetricUnit } from '@aws-lambda-powertools/metrics';
import type { Deps } from '../platform/deps.js';
import { DomainError, badRequest, type Problem } from '../platform/errors.js';
import { readUtf8Body, type HttpOutcome, type HttpRequest } from '../platform/http-request.js';
import type { AuthContext, PublishableKeyPolicy } from '../platform/model.js';
import { metrics } from '../platform/observability.js';
import { matchOrigin } from '../tenancy/api-keys.js';
import { captchaTokenFields } from './captcha.js';
import { newLeadClient, type RequestMeta } from './create-lead.js';
import type { LeadInput } from './lead-schema.js';

/** The form field a no-script form carries its publishable key in. */
export const FORM_KEY_FIELD = 'api_key';

const FORM_TYPE = /^application\/x-www-form-urlencoded\s*(;|$)/i;

/** A POST whose body is a plain HTML form's (`application/x-www-form-urlencoded`). */
export const isFormPost = (request: Pick<HttpRequest, 'method' | 'headers'>) =>
  request.method === 'POST' && FORM_TYPE.test((request.headers['content-type'] ?? '').trim());

/**
 * Whether errors go back as an HTML page: a browser's no-script post shows the page to the visitor,
 * where problem+json would be unreadable. A plain form cannot set headers, so a request carrying a
 * key header is a program's (problem+json), and so is one asking for JSON (Accept).
 */
export const wantsHtml = (request: Pick<HttpRequest, 'method' | 'headers'>) =>
  isFormPost(request)
  && request.headers['x-api-key'] === undefined && request.headers.authorization === undefined
  && !/application\/(problem\+)?json/i.test(request.headers.accept ?? '');

/**
 * The fields of a url-encoded body; a repeated name keeps its first value (a form has one input
 * per field; a second one is not allowed to override it). 413 past `maxBytes`.
 */
export function readFormBody(request: Pick<HttpRequest, 'body' | 'headers'>, maxBytes: number): Record<string, string> {
  const text = readUtf8Body(request, maxBytes);
  const fields: Record<string, string> = Object.create(null) as Record<string, string>;
  for (const pair of text.split('&')) {
    if (pair === '') continue;
    const at = pair.indexOf('=');
    const [name, value] = at === -1 ? [decodeFormPart(pair), ''] : [decodeFormPart(pair.slice(0, at)), decodeFormPart(pair.slice(at + 1))];
    if (!(name in fields)) fields[name] = value;
  }
  return { ...fields };
}

/**
 * One name or value of a url-encoded body, its escapes decoded strictly: escapes that do not spell
 * UTF-8 (`%FF`, a lone surrogate's `%ED%A0%80`) or are cut short (`%E`) are a 400, where
 * URLSearchParams would put U+FFFD or the escape's text in their place.
 */
function decodeFormPart(part: string): string {
  try {
    return decodeURIComponent(part.replace(/\+/g, ' '));
  } catch {
    throw badRequest('The form body has a malformed percent-escape or one that is not UTF-8.');
  }
}

const refused = (slug: string, detail: string) => new DomainError(403, slug, 'Forbidden', detail);

/**
 * The origin a publishable key's request may be answered to (`Access-Control-Allow-Origin`), or 403:
 * a GET (the connectivity test shows the organization: servers use secret keys for it), a request
 * without `Origin` (not from a browser page) or from an origin not listed on the key.
 */
export function admitPublishable(policy: PublishableKeyPolicy, request: Pick<HttpRequest, 'method' | 'headers'>): string {
  if (request.method !== 'POST') {
    throw refused('publishable-key-post-only', 'A publishable key may only POST leads; use a secret key (crm_live_...) from a server to test connectivity.');
  }
  const origin = request.headers.origin;
  if (!origin) throw refused('origin-required', 'A publishable key is accepted only from a web page of an origin listed on the key; this request has no Origin header.');
  const matched = matchOrigin(policy.origins, origin);
  if (!matched) throw refused('origin-not-allowed', `The origin ${origin.slice(0, 200)} is not allowed for this key; add it to the key's origins.`);
  return matched;
}

/** A publishable key's per-address refusal (429, the reason named). */
export const addressRateLimited = (limit: number, retryAfterSeconds: number) =>
  new DomainError(429, 'rate-limited-address', 'Too many requests',
    `This address sent too many leads with this key (at most ${limit} a minute per address); retry in ${retryAfterSeconds} s.`,
    { headers: { 'Retry-After': String(retryAfterSeconds) } });

/** The daily cap's refusal: 429 with Retry-After until the next UTC day (nothing is wrong with the request itself). */
export const dailyCapReached = (cap: number, retryAfterSeconds: number) =>
  new DomainError(429, 'daily-cap-reached', 'Too many requests',
    `This key's daily cap of ${cap} leads is reached; it resets at 00:00 UTC (in ${retryAfterSeconds} s).`,
    { headers: { 'Retry-After': String(retryAfterSeconds) } });

/**
 * Splits what the spam defences read off a publishable key's body: the honeypot's value, the CAPTCHA
 * tokens and the form's key, none of which is ever stored as a lead's custom field.
 */
export function takeSpamFields(body: unknown, policy: PublishableKeyPolicy): { lead: unknown; honeypot: string; tokens: Record<string, unknown> } {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return { lead: body, honeypot: '', tokens: {} };
  const lead = { ...(body as Record<string, unknown>) };
  const honeypotValue = lead[policy.honeypotField];
  const tokens: Record<string, unknown> = {};
  for (const field of captchaTokenFields) {
    if (field in lead) tokens[field] = lead[field];
    delete lead[field];
  }
  delete lead[policy.honeypotField];
  delete lead[FORM_KEY_FIELD];
  const honeypot = typeof honeypotValue === 'string' ? honeypotValue.trim() : honeypotValue ? String(honeypotValue) : '';
  return { lead, honeypot, tokens };
}

/**
 * A filled honeypot: counted, and answered as if accepted, with nothing written or billed. The body
 * is the client a real lead of this input would have been (the same builder), so a bot comparing
 * answers learns nothing; the input was validated first, so an invalid one gets the same 422.
 */
export function honeypotAnswer(deps: Deps, auth: AuthContext, input: LeadInput, meta: RequestMeta): { status: number; body: unknown } {
  metrics.addMetric('HoneypotTripped', MetricUnit.Count, 1);
  return { status: 201, body: newLeadClient(deps, auth, input, meta) };
}

const escapeHtml = (text: string) => text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

function page(title: string, body: string): string {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="robots" content="noindex"><title>${escapeHtml(title)}</title>
<style>body{font-family:system-ui,sans-serif;max-width:32rem;margin:3rem auto;padding:0 1rem;color:#1d2430}h1{font-size:1.5rem}</style>
</head><body>
${body}
</body></html>
`;
}

const HTML = 'text/html; charset=utf-8';
/** No script, no framing, no referrer: the pages show text only. */
const pageHeaders = {
  'Content-Security-Policy': "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'",
  'Referrer-Policy': 'no-referrer',
  'Cache-Control': 'no-store',
};

/**
 * A no-script post's success: 303 to the key's thank-you URL (the browser follows with a GET, so a
 * reload never posts again), or a small "Thank you" page with 201 when the key has none.
 */
export function formSuccess(policy: PublishableKeyPolicy): Pick<Extract<HttpOutcome, { status: number }>, 'status' | 'body' | 'contentType'> & { headers: Record<string, string> } {
  if (policy.thankYouUrl) return { status: 303, body: '', contentType: 'text/plain; charset=utf-8', headers: { Location: policy.thankYouUrl, 'Cache-Control': 'no-store' } };
  return {
    status: 201,
    contentType: HTML,
    headers: pageHeaders,
    body: page('Thank you', '<h1>Thank you!</h1>\n<p>We received your request and will be in touch soon.</p>'),
  };
}

/** A no-script post's error as a small page with the problem's status, title, detail and field errors. */
export function formErrorPage(problem: Problem): string {
  const fields = problem.errors?.length
    ? `<ul>${problem.errors.map((e) => `<li>${escapeHtml(e.field)}: ${escapeHtml(e.message)}</li>`).join('')}</ul>\n`
    : '';
  return page(problem.title, `<h1>${escapeHtml(problem.title)}</h1>\n<p>${escapeHtml(problem.detail)}</p>\n${fields}<p>Use your browser's Back button to return to the form.</p>${problem.request_id ? `\n<p><small>Request id ${escapeHtml(problem.request_id)}</small></p>` : ''}`);
}

export const htmlPage = { contentType: HTML, headers: pageHeaders };
