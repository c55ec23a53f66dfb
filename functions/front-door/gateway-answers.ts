/**
 * The front door's own answers: what API Gateway answers without a function (gateway responses,
 * the catch-all mocks, malformed paths, oversized bodies) and which bodies it hands over as bytes.
 * The CDK stack renders them as MOCK integrations and gateway responses (lib/stacks/crm-api.ts);
 * the local front door (lib/local/http-server.ts) answers the same from the same entries.
 */
import { DomainError, methodNotAllowed, notFound, payloadTooLarge, tooManyRequests, unsupportedMediaType } from '../core/platform/errors.js';
import { wafKeyWindowSeconds } from './waf.js';

/** A problem+json answer the gateway makes itself (docs/architecture.md#errors). */
export interface GatewayAnswerSpec {
  /** Absent on the DEFAULT_4XX/5XX fallbacks: API Gateway keeps the status of the error and the body omits it. */
  status?: number;
  slug: string;
  title: string;
  /** Absent: API Gateway's own message for the error ($context.error.message). */
  detail?: string;
  headers?: Record<string, string>;
}

/**
 * API Gateway compresses an answer of at least this many bytes (gzip or deflate, as the client's
 * Accept-Encoding asks; it has no br): the settings page's script and styles, a page of deliveries.
 * The local gateway does the same (lib/local/http-server.ts).
 */
export const compressionMinBytes = 1024;

/**
 * Request types API Gateway hands the functions as bytes (base64, `isBase64Encoded`) rather than
 * as text it decoded itself: the functions decode UTF-8 strictly, so bytes that are not UTF-8 get a
 * 400 instead of being stored as U+FFFD (docs/leads.md). Parameters (charset) are not matched.
 */
export const binaryMediaTypes = ['application/json', 'application/x-www-form-urlencoded'] as const;
export const isBinaryMediaType = (contentType: string | undefined) =>
  (binaryMediaTypes as readonly string[]).includes((contentType ?? '').split(';')[0].trim().toLowerCase());

/** API Gateway's answer to a path with a malformed percent-escape (`%zz`, `%E2%82`): a 400 before any route. */
export const malformedPath = { type: 'DEFAULT_4XX' as const, status: 400, message: 'The request path has a malformed percent-escape.' };

/** API Gateway's hard payload limit (REQUEST_TOO_LARGE); the function enforces its own, smaller one. */
export const gatewayMaxBodyBytes = 10 * 1024 * 1024;

const mayHaveBeenProcessed = 'The request failed or timed out and may or may not have been processed: retry with the same Idempotency-Key.';
const answer = (e: DomainError): GatewayAnswerSpec => ({ status: e.status, slug: e.slug, title: e.title, detail: e.message, headers: e.extra.headers });
/**
 * Gateway responses (API Gateway response types), problem+json like the function's own errors.
 * MISSING_AUTHENTICATION_TOKEN is what API Gateway answers for a path no resource matches: with
 * no IAM auth anywhere it can only mean "no such route" (the catch-all routes make it a backstop).
 */
export const gatewayResponses = {
  MISSING_AUTHENTICATION_TOKEN: answer(notFound('No route for this path.')),
  THROTTLED: answer(tooManyRequests(1)),
  // The WebACL holds only rate rules, so a WAF block always means "this key (or address) is flooding".
  WAF_FILTERED: answer(tooManyRequests(wafKeyWindowSeconds)),
  REQUEST_TOO_LARGE: answer(payloadTooLarge(gatewayMaxBodyBytes)),
  // A catch-all mock given a Content-Type it has no request template for (mockRequestContentTypes).
  UNSUPPORTED_MEDIA_TYPE: answer(unsupportedMediaType('This Content-Type is not accepted here: send application/json.')),
  // Never fires for lead intake (10 s time-out, under the 29 s integration limit): kept as a backstop.
  INTEGRATION_TIMEOUT: answer(new DomainError(504, 'gateway-timeout', 'Gateway timeout', mayHaveBeenProcessed)),
  DEFAULT_4XX: { slug: 'gateway-error', title: 'Request refused' },
  // A function that timed out or crashed (502) may have written the lead already: say how to retry safely.
  DEFAULT_5XX: { slug: 'gateway-error', title: 'Bad gateway', detail: mayHaveBeenProcessed },
} satisfies Record<string, GatewayAnswerSpec>;
export type GatewayResponseType = keyof typeof gatewayResponses;

/** API Gateway's status and message when the Lambda proxy integration fails (crash, time-out, bad answer). */
export const lambdaFailure = { type: 'DEFAULT_5XX' as const, status: 502, message: 'Internal server error' };

/**
 * Content types the catch-all mocks have a request template (`{"statusCode": 200}`) for. Without
 * one, API Gateway passes the raw body to the mock, which fails on anything but that JSON (a 500);
 * with passthrough NEVER, any other type is answered UNSUPPORTED_MEDIA_TYPE (415).
 */
export const mockRequestContentTypes = ['application/json', 'application/x-www-form-urlencoded', 'text/plain', 'multipart/form-data', 'application/xml'];
export const mockRequestTemplate = '{"statusCode": 200}';
/** Whether a catch-all mock takes a request: no Content-Type counts as application/json, as on API Gateway; parameters are ignored. */
export const mockAcceptsContentType = (contentType: string | undefined) =>
  contentType === undefined || mockRequestContentTypes.includes(contentType.split(';')[0].trim().toLowerCase());

/** Answers of the catch-all routes (MOCK integrations: no function runs, no Lambda cost). */
export const catchAllAnswers = {
  /** ANY on a path with no route (`/`, intermediate paths, `{proxy+}` under each of them). */
  notFound: gatewayResponses.MISSING_AUTHENTICATION_TOKEN,
  /** ANY on a route's path, for the methods it does not serve. */
  methodNotAllowed: (allowed: string[]) => answer(methodNotAllowed(allowed)),
};

/**
 * The body of a gateway answer. `requestId` and `message` are values locally, and VTL references
 * ($context.requestId, $context.error.messageString, already quoted) in the CDK templates.
 */
export function gatewayProblemBody(spec: GatewayAnswerSpec, requestId: string, message: { json: string } | string = ''): string {
  const MESSAGE = '\u0000message\u0000';
  const problem = new DomainError(spec.status ?? 0, spec.slug, spec.title, spec.detail ?? MESSAGE).toProblem(requestId);
  if (spec.status === undefined) delete (problem as { status?: number }).status;
  const body = JSON.stringify(problem);
  return body.replace(JSON.stringify(MESSAGE), typeof message === 'string' ? JSON.stringify(message) : message.json);
}
