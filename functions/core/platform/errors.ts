/**
 * Typed domain errors and their one mapping to RFC 9457 problem+json (docs/architecture.md#errors). Domain modules
 * throw these; handlers never build error bodies themselves.
 */

export interface FieldError { field: string; message: string }

export interface Problem {
  type: string;
  title: string;
  status: number;
  detail: string;
  instance?: string;
  request_id?: string;
  errors?: FieldError[];
  [extra: string]: unknown;
}

const TYPE_BASE = 'https://docs.crm.example/problems/';

export class DomainError extends Error {
  constructor(
    readonly status: number,
    readonly slug: string,
    readonly title: string,
    detail: string,
    readonly extra: { errors?: FieldError[]; headers?: Record<string, string>; [k: string]: unknown } = {},
  ) {
    super(detail);
    this.name = 'DomainError';
  }

  toProblem(requestId?: string): Problem {
    const { headers: _headers, ...extra } = this.extra;
    return { type: TYPE_BASE + this.slug, title: this.title, status: this.status, detail: this.message, ...extra, ...(requestId ? { request_id: requestId } : {}) };
  }
}

export const badRequest = (detail: string) => new DomainError(400, 'malformed-request', 'Malformed request', detail);
export const unauthorized = (detail: string) =>
  new DomainError(401, 'unauthorized', 'Unauthorized', detail, { headers: { 'WWW-Authenticate': 'Bearer realm="crm", charset="UTF-8"' } });
export const paymentRequired = (detail: string) => new DomainError(402, 'payment-required', 'Payment required', detail);
export const forbidden = (detail: string) => new DomainError(403, 'forbidden', 'Forbidden', detail);
export const notFound = (detail: string) => new DomainError(404, 'not-found', 'Not found', detail);
export const methodNotAllowed = (allowed: string[]) =>
  new DomainError(405, 'method-not-allowed', 'Method not allowed', `Use ${allowed.join(' or ')} on this path.`, { headers: { Allow: allowed.join(', ') } });
export const conflict = (detail: string) => new DomainError(409, 'conflict', 'Conflict', detail);
export const payloadTooLarge = (limitBytes: number) =>
  new DomainError(413, 'payload-too-large', 'Payload too large', `The body must be at most ${limitBytes} bytes.`);
export const unsupportedMediaType = (detail: string) => new DomainError(415, 'unsupported-media-type', 'Unsupported media type', detail);
export const validationFailed = (errors: FieldError[], detail = 'The request body has invalid fields.') =>
  new DomainError(422, 'validation-failed', 'Validation failed', detail, { errors });
export const unprocessable = (slug: string, detail: string) => new DomainError(422, slug, 'Unprocessable request', detail);
export const tooManyRequests = (retryAfterSeconds: number) =>
  new DomainError(429, 'rate-limited', 'Too many requests', `Rate limit exceeded; retry in ${retryAfterSeconds} s.`, {
    headers: { 'Retry-After': String(retryAfterSeconds) },
  });

/** Maps anything thrown to a problem and its status; unknown faults become a 500 with no internals. */
export function toProblem(error: unknown, requestId?: string): { problem: Problem; headers: Record<string, string> } {
  if (error instanceof DomainError) return { problem: error.toProblem(requestId), headers: error.extra.headers ?? {} };
  return {
    problem: {
      type: TYPE_BASE + 'internal-error',
      title: 'Internal error',
      status: 500,
      detail: `Something went wrong on our side. Quote request id ${requestId ?? 'unknown'} when contacting support.`,
      ...(requestId ? { request_id: requestId } : {}),
    },
    headers: {},
  };
}
