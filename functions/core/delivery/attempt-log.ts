/**
 * A delivery's attempt log, bounded whatever the receiver sends (docs/webhooks.md "Answering,
 * retries and failures"): an attempt's error text is at most MAX_ERROR_CHARS, and a delivery keeps
 * its MAX_KEPT_ATTEMPTS most recent attempts plus a count of the older ones (`olderAttempts`).
 * Unbounded, a receiver answering 15 KB redirects with 4 KB bodies filled the item to DynamoDB's
 * 400 KB limit after ~20 re-deliveries, and from then on no outcome of the delivery could be written.
 */
import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import type { Deps } from '../platform/deps.js';
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

/**
 * After an UpdateItem appended an attempt (`list_append`, which cannot trim in the same expression):
 * when the list it returned (`ReturnValues: UPDATED_NEW`) is over the bound, drops its oldest
 * entries and counts them, conditional on the list still having that length. A writer that
 * appended meanwhile makes the condition fail: that writer's own trim does the work instead.
 */
export async function trimAttempts(deps: Deps, key: Record<string, string>, updated: Record<string, unknown> | undefined): Promise<void> {
  const length = Array.isArray(updated?.attempts) ? updated.attempts.length : 0;
  const excess = length - MAX_KEPT_ATTEMPTS;
  if (excess <= 0) return;
  try {
    await deps.doc.send(new UpdateCommand({
      TableName: deps.tables.deliveries,
      Key: key,
      UpdateExpression: `REMOVE ${Array.from({ length: excess }, (_, i) => `attempts[${i}]`).join(', ')} SET olderAttempts = if_not_exists(olderAttempts, :zero) + :n`,
      ConditionExpression: 'size(attempts) = :length',
      ExpressionAttributeValues: { ':zero': 0, ':n': excess, ':length': length },
    }));
  } catch (error) {
    if (!(error instanceof ConditionalCheckFailedException)) throw error;
  }
}
