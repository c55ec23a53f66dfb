/**
 * An HTTP request and its outcome as the domain sees them (docs/architecture.md#stages-and-what-each-owns): plain values. The HTTP adapter
 * (functions/adapters/http-adapter.ts) parses API Gateway's event into an HttpRequest, and shapes the
 * response, its headers and the request-log entry from the HttpOutcome.
 */
import { badRequest, payloadTooLarge, unsupportedMediaType } from './errors.js';

export interface HttpRequest {
  method: string;
  /** Names lower-cased. */
  headers: Record<string, string>;
  /** Header names (lower-cased) the request carried more than once, in any case (`X-API-Key` and `x-api-key`). */
  repeatedHeaders?: string[];
  /** Raw bytes (a Buffer) or text, as received. */
  body: Buffer | string | undefined;
  sourceIp?: string;
  requestId: string;
  /** When the function will be stopped (epoch ms), when the runtime says (Lambda's context does). */
  deadline?: number;
  /** The API resource matched (`/api/settings/keys/{id}`), its path parameters and the query string. */
  resource?: string;
  pathParameters?: Record<string, string>;
  query?: Record<string, string>;
  /** The API's base URL as the caller reached it (scheme, host and, on an execute-api host, the stage). */
  baseUrl?: string;
}

/** Known once the caller is authenticated: the request log records it, even for a refused request. */
export interface Caller {
  organizationId?: string;
  keyId?: string;
}

/**
 * What a request came to: an answer, or the error to answer with as problem+json (platform/errors.ts),
 * plus the headers owed on either (e.g. rate-limit state) and the caller, once known. `contentType`:
 * the body is that text as is (an HTML page, an empty redirect), not JSON. `outcome`: what the request
 * log records beyond the status (e.g. `honeypot`: answered 201, nothing created). `clientId`: the
 * client a lead came to (created, merged into, repeated), which the request log links to its trail.
 * `recordedOnClient`: the status the client this request created records as its request-log row;
 * answered that status, the adapter writes no row of its own (docs/settings.md "Request log").
 */
export type HttpOutcome = Caller & { headers: Record<string, string>; outcome?: string; clientId?: string; recordedOnClient?: number } & (
  | { status: number; body: unknown; contentType?: string }
  | { error: unknown }
);

/** The JSON body of a request, enforcing content type and charset, size, UTF-8 and syntax (415, 413, 400; docs/leads.md). */
export function readJsonBody(request: Pick<HttpRequest, 'headers' | 'body'>, maxBytes: number): unknown {
  const type = request.headers['content-type'] ?? '';
  // Exactly application/json (any case): the one JSON type API Gateway hands over as bytes
  // (functions/front-door/gateway-answers.ts binaryMediaTypes). Another (`application/vnd.api+json`) would arrive as text the
  // gateway already decoded leniently, with U+FFFD in place of bytes that are not UTF-8.
  if (mediaTypeOf(type) !== 'application/json') {
    throw unsupportedMediaType(`Send the body as application/json${type ? `, not ${type.split(';')[0].slice(0, 80)}` : ''}.`);
  }
  const text = readUtf8Body(request, maxBytes);
  try {
    return JSON.parse(text);
  } catch (error) {
    throw badRequest(`The body is not valid JSON: ${(error as Error).message}.`);
  }
}

/** A Content-Type's media type, lower-cased, without parameters. */
export const mediaTypeOf = (contentType: string | undefined) => (contentType ?? '').split(';')[0].trim().toLowerCase();

const strictUtf8 = new TextDecoder('utf-8', { fatal: true });

/**
 * The body's text, decoded as UTF-8 strictly: a charset other than UTF-8 is a 415 (it would be
 * misread), a body over `maxBytes` bytes (not characters) a 413, and bytes that are not UTF-8 a 400
 * rather than text with U+FFFD stored in their place. A body the gateway passed as text (a type it
 * does not hand over as bytes, functions/front-door/gateway-answers.ts binaryMediaTypes) is taken as it came.
 */
export function readUtf8Body(request: Pick<HttpRequest, 'headers' | 'body'>, maxBytes: number): string {
  const charset = /;\s*charset\s*=\s*"?([^";\s]*)"?/i.exec(request.headers['content-type'] ?? '')?.[1];
  if (charset !== undefined && !/^utf-?8$/i.test(charset)) throw unsupportedMediaType(`The body must be UTF-8 (charset=utf-8), not ${charset.slice(0, 40)}.`);
  const raw = Buffer.isBuffer(request.body) ? request.body : Buffer.from(request.body ?? '', 'utf8');
  if (raw.length > maxBytes) throw payloadTooLarge(maxBytes);
  try {
    return strictUtf8.decode(raw);
  } catch {
    throw badRequest('The body is not valid UTF-8.');
  }
}
