/**
 * A delivery's attempt log, bounded whatever the receiver sends (docs/webhooks.md "Answering,
 * retries and failures"): an attempt's error text is at most MAX_ERROR_CHARS, and a delivery keeps
 * its MAX_KEPT_ATTEMPTS most recent attempts plus a count of the older ones (`olderAttempts`).
 * Unbounded, a receiver answering 15 KB redirects with 4 KB bodies filled the item to DynamoDB's
 * 400 KB limit after ~20 re-deliveries, and from then on no outcome of the delivery could be written.
 * (The record's writer, delivery-record.ts, trims the stored list after an append.)
 */
import type { DeliveryAttempt } from '../platform/model.js';
import type { PostResult } from './http-client.js';

/** Characters an attempt's error text keeps (a receiver's redirect target is part of it). */
export const MAX_ERROR_CHARS = 300;
/** Attempts a delivery record keeps; older ones are only counted. */
export const MAX_KEPT_ATTEMPTS = 20;

/** Headers an attempt keeps of its request and of its response, and characters per value. */
export const MAX_KEPT_HEADERS = 20;
export const MAX_HEADER_CHARS = 200;

/**
 * The headers an attempt shows (settings API, docs/settings.md), bounded like the rest of the log:
 * at most MAX_KEPT_HEADERS, each value at most MAX_HEADER_CHARS; a signature's value shortened to
 * its scheme and first characters (it is no secret, but a full one is noise).
 */
export function keptHeaders(pairs: [string, string][]): Record<string, string> {
  return Object.fromEntries(pairs.slice(0, MAX_KEPT_HEADERS).map(([name, value]) => {
    const lower = name.toLowerCase();
    return [lower, lower === 'webhook-signature' ? value.split(' ').map((s) => clip(s, 16)).join(' ') : clip(value, MAX_HEADER_CHARS)];
  }));
}

/** `text` cut to `max` characters (code points: never half an emoji), marked with an ellipsis when cut. */
export function clip(text: string, max: number): string {
  const chars = Array.from(text);
  return chars.length <= max ? text : `${chars.slice(0, max - 1).join('')}…`;
}

/** An attempt's error text: `<code>: <message>`, bounded. */
export const attemptError = (result: Pick<PostResult, 'error' | 'errorCode'>): string | undefined =>
  result.error ? clip(result.errorCode ? `${result.errorCode}: ${result.error}` : result.error, MAX_ERROR_CHARS) : undefined;

/** The record's log with `added` appended: the most recent MAX_KEPT_ATTEMPTS, and the count of those dropped. */
export function appendAttempts(record: { attempts?: DeliveryAttempt[]; olderAttempts?: unknown }, ...added: DeliveryAttempt[]): { attempts: DeliveryAttempt[]; olderAttempts?: number } {
  const all = [...(record.attempts ?? []), ...added];
  const dropped = Math.max(0, all.length - MAX_KEPT_ATTEMPTS);
  const older = Number(record.olderAttempts ?? 0) + dropped;
  return { attempts: all.slice(dropped), ...(older ? { olderAttempts: older } : {}) };
}
