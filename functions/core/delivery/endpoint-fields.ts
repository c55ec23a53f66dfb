/**
 * An endpoint's fields as its owner gives them, validated here for the settings API and the CLI
 * alike (a bad one is a 422 naming it): its URL; custom headers the receiver wants on every
 * request (its own auth header, say; values kept like signing secrets: only the delivery reads
 * them back, owners see them masked); at most N deliveries a second (docs/webhooks.md "Custom
 * headers", "Rate limit").
 */
import { isIP } from 'node:net';
import type { Deps } from '../platform/deps.js';
import type { WebhookEndpoint } from '../platform/model.js';
import { validationFailed, type FieldError } from '../platform/errors.js';
import { allowListFor, isBlockedAddress } from './ssrf.js';

/** https only (http on the local stack); no credentials in the URL; IP literals checked now, names at connect time. */
export function validateUrl(deps: Deps, raw: string): string {
  const errors: FieldError[] = [];
  let url: URL | undefined;
  try {
    url = new URL(raw);
  } catch {
    errors.push({ field: 'url', message: 'must be an absolute URL' });
  }
  if (url) {
    if (url.protocol !== 'https:' && !(url.protocol === 'http:' && deps.config.local)) errors.push({ field: 'url', message: 'must use https' });
    if (url.username || url.password) errors.push({ field: 'url', message: 'must not contain credentials' });
    if (raw.length > 2000) errors.push({ field: 'url', message: 'must be at most 2000 characters' });
    const host = url.hostname.replace(/^\[|\]$/g, '');
    if (isIP(host)) {
      const decision = isBlockedAddress(host, allowListFor(deps.config));
      if (decision.blocked) errors.push({ field: 'url', message: `points to a ${decision.reason} address` });
    }
  }
  if (errors.length) throw validationFailed(errors);
  return url!.toString();
}


/** Custom headers an endpoint may carry, and their bounds (a name is also an attribute name in DynamoDB). */
export const MAX_CUSTOM_HEADERS = 10;
export const MAX_HEADER_NAME_LENGTH = 64;
export const MAX_HEADER_VALUE_LENGTH = 1000;
/** Deliveries a second an endpoint may be limited to: whole numbers, each one an attribute of its throttle item (delivery-throttle.ts). */
export const MAX_RATE_LIMIT_PER_SECOND = 100;

/** RFC 9110 section 5.6.2 token characters. */
const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
/** Visible ASCII and spaces/tabs inside (RFC 9110 section 5.5 field-value, without obs-text): no CR, LF or other control. */
const FIELD_VALUE = /^[\x21-\x7e]([\x20-\x7e\t]*[\x21-\x7e])?$/;

/**
 * Names the delivery sets itself or that steer the connection: a receiver's header must never
 * replace the signature, the body's framing or the host it is sent to.
 */
const RESERVED = new Set([
  'content-type', 'content-length', 'content-encoding', 'host', 'user-agent', 'connection', 'keep-alive',
  'transfer-encoding', 'te', 'trailer', 'upgrade', 'expect', 'accept-encoding', 'date',
]);
export const reservedHeader = (name: string): boolean =>
  RESERVED.has(name) || name.startsWith('webhook-') || name.startsWith('proxy-') || name.startsWith(':');

/**
 * The stored custom headers a delivery may send: those that keep the rules a change is held to
 * (name, value, reserved names, count), whatever wrote them (an import, a hand edit, an older
 * version). The others are left out, by name, for the caller to report; never sent.
 */
export function sendableHeaders(stored: Record<string, unknown> | undefined): { headers: Record<string, string>; refused: string[] } {
  const headers: Record<string, string> = {};
  const refused: string[] = [];
  for (const [name, value] of Object.entries(stored ?? {})) {
    const ok = TOKEN.test(name) && name.length <= MAX_HEADER_NAME_LENGTH && name === name.toLowerCase() && !reservedHeader(name) && name !== '__proto__'
      && typeof value === 'string' && value.length <= MAX_HEADER_VALUE_LENGTH && FIELD_VALUE.test(value) && Object.keys(headers).length < MAX_CUSTOM_HEADERS;
    if (ok) headers[name] = value;
    else refused.push(name.slice(0, MAX_HEADER_NAME_LENGTH));
  }
  return { headers, refused };
}

/** A change of custom headers: a name with a value sets it, with null removes it (names are compared in lower case). */
export type HeaderChanges = Record<string, string | null>;

/** The changes as stored names (lower case); each bad header is an error in `errors`. */
function headerChanges(input: unknown, errors: FieldError[]): HeaderChanges {
  const changes: HeaderChanges = {};
  if (typeof input !== 'object' || input === null || Array.isArray(input)) {
    errors.push({ field: 'headers', message: 'must be an object of header name to value (null removes one)' });
    return changes;
  }
  if (Object.keys(input).length > 2 * MAX_CUSTOM_HEADERS) errors.push({ field: 'headers', message: `names at most ${2 * MAX_CUSTOM_HEADERS} headers at once` });
  for (const [raw, value] of Object.entries(input as Record<string, unknown>)) {
    const field = `headers.${raw.slice(0, MAX_HEADER_NAME_LENGTH)}`;
    const name = raw.toLowerCase();
    if (!TOKEN.test(raw) || raw.length > MAX_HEADER_NAME_LENGTH) errors.push({ field, message: `is not a header name (letters, digits and !#$%&'*+.^_\`|~- only, at most ${MAX_HEADER_NAME_LENGTH})` });
    else if (reservedHeader(name)) errors.push({ field, message: `"${name}" is reserved: the delivery sets it itself (webhook-*, content-type, content-length, host, user-agent and connection headers cannot be replaced)` });
    // `__proto__` would set the object's prototype instead of a header; no receiver needs it.
    else if (name === '__proto__') errors.push({ field, message: '"__proto__" cannot be a header name here: choose another name' });
    // Own names only: `constructor` and `toString` are names like any other.
    else if (Object.hasOwn(changes, name)) errors.push({ field, message: 'is given twice (names are not case-sensitive)' });
    if (value !== null && typeof value !== 'string') errors.push({ field, message: 'must be text, or null to remove the header' });
    else if (typeof value === 'string' && (value.length > MAX_HEADER_VALUE_LENGTH || !FIELD_VALUE.test(value))) {
      errors.push({ field, message: `must be 1 to ${MAX_HEADER_VALUE_LENGTH} printable ASCII characters, without line breaks or leading or trailing spaces` });
    }
    if (name !== '__proto__') changes[name] = value as string | null;
  }
  return changes;
}

/** The headers after the changes; a 422 past MAX_CUSTOM_HEADERS. */
export function applyHeaderChanges(current: Record<string, string>, changes: HeaderChanges): Record<string, string> {
  const next = { ...current };
  for (const [name, value] of Object.entries(changes)) {
    if (value === null) delete next[name];
    else next[name] = value;
  }
  if (Object.keys(next).length > MAX_CUSTOM_HEADERS) {
    throw validationFailed([{ field: 'headers', message: `an endpoint has at most ${MAX_CUSTOM_HEADERS} custom headers (it would have ${Object.keys(next).length}); remove one with null` }]);
  }
  return next;
}

/** The options of an endpoint as given (undefined: unchanged), validated together: one 422 lists every bad one. */
export function validateOptions(input: { headers?: unknown; rateLimitPerSecond?: unknown }): { headers: HeaderChanges; rate?: number | null } {
  const errors: FieldError[] = [];
  const headers = input.headers === undefined ? {} : headerChanges(input.headers, errors);
  const rate = input.rateLimitPerSecond;
  if (rate !== undefined && rate !== null && (typeof rate !== 'number' || !Number.isInteger(rate) || rate < 1 || rate > MAX_RATE_LIMIT_PER_SECOND)) {
    errors.push({ field: 'rate_limit_per_second', message: `must be a whole number of deliveries a second from 1 to ${MAX_RATE_LIMIT_PER_SECOND}, or null for no limit` });
  }
  if (errors.length) throw validationFailed(errors);
  return { headers, ...(rate !== undefined ? { rate: rate as number | null } : {}) };
}

/** A header value as its owner sees it: a long one by its last 4 characters, a short one not at all. */
export const maskedValue = (value: string): string => (value.length >= 16 ? `••••${value.slice(-4)}` : '••••');

/** The headers as the settings API and the CLI show them: names and masked values. */
export const maskedHeaders = (headers: Record<string, string> | undefined): Record<string, string> =>
  Object.fromEntries(Object.entries(headers ?? {}).map(([name, value]) => [name, maskedValue(value)]));

/**
 * A new URL takes the stored custom headers (secrets) with it only when the same request says so:
 * each set again or removed with null, or, on the same origin only, `keep_headers: true` (the page
 * asks first, showing the new URL). On a shared-origin receiver (a catch-hook service) a path
 * change otherwise let anyone holding a settings link collect the values there (docs/webhooks.md
 * "Custom headers"). Another origin always needs them again: a 422 naming them, nothing written.
 */
export function requireHeadersAgain(current: Pick<WebhookEndpoint, 'url' | 'headers'>, url: string, changes: Record<string, string | null>, keep = false): void {
  if (url === current.url) return;
  const missing = Object.keys(current.headers ?? {}).filter((name) => !Object.hasOwn(changes, name));
  if (missing.length === 0) return;
  const sameOrigin = new URL(url).origin === new URL(current.url).origin;
  if (sameOrigin && keep) return;
  throw validationFailed([{
    field: 'headers',
    message: sameOrigin
      ? `the URL changes, so its custom headers must be set again in the same request, removed with null, or kept with keep_headers: true: ${missing.join(', ')}`
      : `the URL moves to another host (scheme, host or port), so its custom headers must be set again in the same request, or removed with null: ${missing.join(', ')}`,
  }]);
}
