/**
 * A delivery's attempt log, bounded whatever the receiver sends (docs/webhooks.md "Answering,
 * retries and failures"): an attempt's error text is at most MAX_ERROR_CHARS, and a delivery keeps
 * its MAX_KEPT_ATTEMPTS most recent attempts plus a count of the older ones (`olderAttempts`).
 * Unbounded, a receiver answering 15 KB redirects with 4 KB bodies filled the item to DynamoDB's
 * 400 KB limit after ~20 re-deliveries, and from then on no outcome of the delivery could be written.
 * (The record's writer, delivery-record.ts, trims the stored list after an append.)
 */
import type { DeliveryAttempt, WebhookEndpoint } from '../platform/model.js';
import type { PostResult } from './http-client.js';
import { redactor, REDACTED, type Redactor } from './redaction.js';

export { REDACTED } from './redaction.js';

/** Characters an attempt's error text keeps (a receiver's redirect target is part of it). */
export const MAX_ERROR_CHARS = 300;
/** Attempts a delivery record keeps; older ones are only counted. */
export const MAX_KEPT_ATTEMPTS = 20;

/** Headers an attempt keeps of its request and of its response, characters per name and per value. */
export const MAX_KEPT_HEADERS = 20;
export const MAX_HEADER_NAME_CHARS = 64;
export const MAX_HEADER_CHARS = 200;
/** UTF-8 bytes of names and values kept per side: an attempt's headers stay under 2 KB. */
export const MAX_HEADER_BYTES = 1024;

/** The request headers shown with their values; any other (a custom header, say) by its name alone. */
const SHOWN_REQUEST_HEADERS = new Set(['webhook-id', 'webhook-timestamp', 'webhook-signature', 'content-type', 'user-agent', 'content-length']);
export const NOT_KEPT = '(not kept)';
/** Response headers that may carry a credential (a receiver's session cookie, say): kept by name only. */
export const credentialLike = (name: string): boolean =>
  ['set-cookie', 'www-authenticate', 'authorization'].includes(name) || name.startsWith('proxy-') || /token|secret|key|auth|cookie/i.test(name);

/**
 * The headers an attempt shows (settings API, docs/settings.md), bounded like the rest of the log:
 * at most MAX_KEPT_HEADERS, names cut at MAX_HEADER_NAME_CHARS, values at MAX_HEADER_CHARS, and
 * MAX_HEADER_BYTES in all (the headers after that are left out). Of the request, only the
 * allow-listed headers keep a value (a signature shortened to its scheme and first characters);
 * of the response, credential-like headers are redacted, and the endpoint's stored secrets in any
 * name or value (redaction.ts). Anyone holding a settings link sees them.
 */
export function keptHeaders(pairs: [string, string][], side: 'request' | 'response', redact: Redactor = redactor([])): Record<string, string> {
  const kept: Record<string, string> = {};
  let bytes = 0;
  for (const [raw, value] of pairs.slice(0, MAX_KEPT_HEADERS)) {
    // A response header's name is redacted as sent, in any case, then lower-cased.
    const name = side === 'request' ? clip(raw.toLowerCase(), MAX_HEADER_NAME_CHARS) : redact.excerpt(raw, MAX_HEADER_NAME_CHARS, { unit: 'chars', ellipsis: true, anyCase: true, name: true }).toLowerCase();
    const shown = side === 'request'
      ? (!SHOWN_REQUEST_HEADERS.has(name) ? NOT_KEPT : name === 'webhook-signature' ? value.split(' ').map((s) => clip(s, 16)).join(' ') : clip(value, MAX_HEADER_CHARS))
      : (credentialLike(name) ? REDACTED : redact.excerpt(value, MAX_HEADER_CHARS, { unit: 'chars', ellipsis: true }));
    bytes += Buffer.byteLength(name) + Buffer.byteLength(shown);
    if (bytes > MAX_HEADER_BYTES) break;
    kept[name] = shown;
  }
  return kept;
}

/**
 * The secrets an attempt must never keep, though the receiver answers them (an echoing server):
 * the endpoint's custom header values and signing secrets and keys (with and without `whsec_` / `whsk_`). Short ones
 * too: redaction.ts withholds an excerpt it cannot redact.
 */
export function secretsOf(endpoint: Pick<WebhookEndpoint, 'headers' | 'secrets'>): string[] {
  return [...new Set([...Object.values(endpoint.headers ?? {}).flatMap(valueParts), ...endpoint.secrets.flatMap((s) => [s.secret, s.secret.replace(/^(whsec|whsk)_/, '')])])];
}

/** Parts of a header value at least this long are secrets of their own. */
const MIN_PART_CHARS = 8;

/**
 * A header value and the parts of it a receiver echoes on their own: the credential after an auth
 * scheme (`Bearer <token>`: the token; `Basic <b64>`: also `user:password` and the password), and
 * each long part between `;`, `,`, `=`, `&`, `:` or spaces (a cookie's value, a key=value list).
 */
function valueParts(value: string): string[] {
  const parts = [value];
  const scheme = /^(\S+)\s+(\S.*)$/.exec(value);
  if (scheme) {
    parts.push(scheme[2]);
    if (/^basic$/i.test(scheme[1])) {
      const pair = Buffer.from(scheme[2], 'base64').toString('utf8');
      const colon = pair.indexOf(':');
      if (colon > 0) parts.push(pair, pair.slice(colon + 1));
    }
  }
  parts.push(...value.split(/[;,=&:\s]+/).filter((part) => part.length >= MIN_PART_CHARS));
  return parts;
}

/** `text` cut to `max` characters (code points: never half an emoji), marked with an ellipsis when cut. */
export function clip(text: string, max: number): string {
  const chars = Array.from(text);
  return chars.length <= max ? text : `${chars.slice(0, max - 1).join('')}…`;
}

/** An attempt's error text: `<code>: <message>`, the message's secrets redacted, then bounded (the code is ours: always kept). */
export const attemptError = (result: Pick<PostResult, 'error' | 'errorCode'>, redact: Redactor = redactor([])): string | undefined => {
  if (!result.error) return undefined;
  const code = result.errorCode ? `${result.errorCode}: ` : '';
  return `${code}${redact.excerpt(result.error, MAX_ERROR_CHARS - Array.from(code).length, { unit: 'chars', ellipsis: true })}`;
};

/** The record's log with `added` appended: the most recent MAX_KEPT_ATTEMPTS, and the count of those dropped. */
export function appendAttempts(record: { attempts?: DeliveryAttempt[]; olderAttempts?: unknown }, ...added: DeliveryAttempt[]): { attempts: DeliveryAttempt[]; olderAttempts?: number } {
  const all = [...(record.attempts ?? []), ...added];
  const dropped = Math.max(0, all.length - MAX_KEPT_ATTEMPTS);
  const older = Number(record.olderAttempts ?? 0) + dropped;
  return { attempts: all.slice(dropped), ...(older ? { olderAttempts: older } : {}) };
}
