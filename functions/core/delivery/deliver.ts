/**
 * One delivery attempt (DESIGN §11): sign, POST, record the attempt, and decide what happens next:
 * done, retry after the scheduled delay, or failed for good (the message then reaches the
 * dead-letter queue). The attempt number is the message's receive count, so a re-driven message
 * starts a fresh count and a crashed attempt still counts.
 */
import { GetCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { MetricUnit } from '@aws-lambda-powertools/metrics';
import type { Deps } from '../platform/deps.js';
import { keys, type DeliveryAttempt, type DeliveryMessage, type DeliveryRecord, type DeliveryStatus, type WebhookEndpoint } from '../platform/model.js';
import { activeSecrets, endpointsOf, recordEndpointHealth } from './endpoints.js';
import { logger, metrics } from '../platform/observability.js';
import { signatureHeaders } from './signing.js';
import { postWebhook, type PostResult } from './http-client.js';
import { MAX_ATTEMPTS, parseRetryAfter, retryDelaySeconds, visibilityLeftSeconds } from './schedule.js';
import { allowListFor } from './ssrf.js';
import { readDeliveryMessage, retryQueuedLater } from './queue.js';

/** `exhausted`: the last attempt failed, so the message goes to the dead-letter queue. */
export type Outcome =
  | { kind: 'delivered' | 'skipped' | 'failed'; attempt: number; result?: PostResult; reason?: string }
  | { kind: 'exhausted'; attempt: number; result: PostResult; reason: string }
  | { kind: 'retry'; attempt: number; result: PostResult; delaySeconds: number };

/** A message as the delivery queue handed it out. */
export interface QueuedDelivery {
  messageId: string;
  receiptHandle: string;
  body: string;
  /** How often the queue handed it out, this time included: the attempt number. */
  receiveCount: number;
  /** When it was (at the earliest) received, epoch ms: see schedule.ts receivedAtOf. */
  receivedAt: number;
}

/** `error`: the attempt broke off unexpectedly (logged); the message is received again. */
export type BatchOutcome = { messageId: string } & (Outcome | { kind: 'error' });

/**
 * Whether the message stays on the queue instead of being consumed: a retry (re-timed by
 * deliverBatch), an exhausted delivery (visible at once, so its next receive moves it to the
 * dead-letter queue) and an unexpected error.
 */
export const staysQueued = (outcome: BatchOutcome): boolean => ['retry', 'exhausted', 'error'].includes(outcome.kind);

async function updateDelivery(deps: Deps, message: DeliveryMessage, status: DeliveryStatus, extra: { attempt?: DeliveryAttempt; reason?: string; nextAttemptAt?: string } = {}) {
  const now = new Date(deps.now()).toISOString();
  const sets = ['#s = :s', 'updatedAt = :now'];
  const values: Record<string, unknown> = { ':s': status, ':now': now };
  if (extra.attempt) {
    sets.push('attempts = list_append(if_not_exists(attempts, :empty), :a)');
    values[':a'] = [extra.attempt];
    values[':empty'] = [];
  }
  if (extra.reason) {
    sets.push('reason = :r');
    values[':r'] = extra.reason;
  }
  if (extra.nextAttemptAt) {
    sets.push('nextAttemptAt = :n');
    values[':n'] = extra.nextAttemptAt;
  }
  if (status === 'delivered') sets.push('deliveredAt = :now');
  await deps.doc.send(new UpdateCommand({
    TableName: deps.tables.deliveries,
    Key: keys.delivery(message.organizationId, message.deliveryId),
    UpdateExpression: `SET ${sets.join(', ')}${status === 'delivered' ? ' REMOVE nextAttemptAt' : ''}`,
    ExpressionAttributeNames: { '#s': 'status' },
    ExpressionAttributeValues: values,
  }));
}

function attemptRecord(deps: Deps, attempt: number, result: PostResult): DeliveryAttempt {
  return {
    at: new Date(deps.now()).toISOString(), attempt, latencyMs: result.latencyMs,
    ...(result.status !== undefined ? { statusCode: result.status } : {}),
    ...(result.error ? { error: result.errorCode ? `${result.errorCode}: ${result.error}` : result.error } : {}),
    ...(result.responseBody ? { responseBody: result.responseBody } : {}),
  };
}

/**
 * A record whose event was too big for the queue keeps only the event's envelope (fan-out marks it
 * payloadOmitted; older records say so in their reason). Sending it would put an empty event under
 * the real webhook-id, which receivers that dedupe then take for the real one.
 */
export function hollowPayloadReason(record: Pick<DeliveryRecord, 'payloadOmitted' | 'reason'>): string | undefined {
  const tooBig = record.payloadOmitted === true || /byte queue budget/.test(record.reason ?? '');
  return tooBig ? 'the event was too large to queue; its payload was not kept, so it is never sent' : undefined;
}

/**
 * Signs and sends one delivery to its endpoint, and records the outcome. `receivedAt` is when SQS
 * handed the message out (epoch ms): a retry's delay never exceeds what SQS still allows from there.
 */
export async function attemptDelivery(deps: Deps, message: DeliveryMessage, attempt: number, { receivedAt = deps.now() }: { receivedAt?: number } = {}): Promise<Outcome> {
  const { Item } = await deps.doc.send(new GetCommand({ TableName: deps.tables.deliveries, Key: keys.delivery(message.organizationId, message.deliveryId), ConsistentRead: true }));
  const record = Item as DeliveryRecord | undefined;
  if (!record) {
    logger.warn('delivery record missing; message dropped', { deliveryId: message.deliveryId });
    return { kind: 'skipped', attempt, reason: 'no delivery record' };
  }
  if (record.status === 'delivered') return { kind: 'delivered', attempt, reason: 'already delivered' };
  const hollow = hollowPayloadReason(record);
  if (hollow) {
    await updateDelivery(deps, message, 'failed', { reason: hollow });
    return { kind: 'failed', attempt, reason: hollow };
  }
  // The organization's endpoints, cached for endpointCacheTtlSeconds: a disable or a secret
  // rotation reaches deliveries within that TTL (the old secret signs for 24 h anyway).
  const endpoint: WebhookEndpoint | undefined = (await endpointsOf(deps, message.organizationId, message.endpointId)).find((e) => e.id === message.endpointId);
  if (!endpoint) {
    await updateDelivery(deps, message, 'failed', { reason: 'the endpoint was removed' });
    return { kind: 'failed', attempt, reason: 'the endpoint was removed' };
  }
  if (!endpoint.enabled && message.payload.type !== 'webhook.test') {
    const reason = `endpoint disabled${endpoint.disabledReason ? `: ${endpoint.disabledReason}` : ''}`;
    await updateDelivery(deps, message, 'skipped', { reason });
    return { kind: 'skipped', attempt, reason };
  }
  // Endpoints are validated on write, but a row written earlier (or by hand) is re-checked here:
  // outside the local stack an event is never sent in cleartext.
  if (!deps.settings.local && !endpoint.url.startsWith('https:')) {
    const reason = 'the endpoint URL is not https; events are only sent over TLS (update the URL and re-drive)';
    await updateDelivery(deps, message, 'failed', { reason });
    return { kind: 'failed', attempt, reason };
  }

  const now = deps.now();
  const body = JSON.stringify(message.payload);
  const headers = signatureHeaders({ id: message.payload.id, timestamp: Math.floor(now / 1000), body, secrets: activeSecrets(endpoint, now) });
  const result = await postWebhook({ url: endpoint.url, headers, body, timeoutMs: deps.settings.deliveryTimeoutMs, allow: allowListFor(deps.settings) });
  const record_ = attemptRecord(deps, attempt, result);
  metrics.addMetric('DeliveryAttempts', MetricUnit.Count, 1);
  metrics.addMetric('DeliveryLatency', MetricUnit.Milliseconds, result.latencyMs);
  if (!result.ok) metrics.addMetric('DeliveryFailures', MetricUnit.Count, 1);
  logger.info('delivery attempt', { deliveryId: message.deliveryId, endpointId: endpoint.id, eventType: message.payload.type, attempt, status: result.status, latencyMs: result.latencyMs, error: result.errorCode });

  if (result.ok) {
    await updateDelivery(deps, message, 'delivered', { attempt: record_ });
    await recordEndpointHealth(deps, endpoint, 'ok');
    return { kind: 'delivered', attempt, result };
  }
  if (result.status === 410) {
    await updateDelivery(deps, message, 'failed', { attempt: record_, reason: 'the receiver answered 410 Gone; the endpoint was disabled' });
    await recordEndpointHealth(deps, endpoint, 'gone');
    return { kind: 'failed', attempt, result, reason: 'gone' };
  }
  await recordEndpointHealth(deps, endpoint, 'failed');
  if (attempt >= MAX_ATTEMPTS) {
    await updateDelivery(deps, message, 'failed', { attempt: record_, reason: `no success after ${attempt} attempts` });
    return { kind: 'exhausted', attempt, result, reason: 'retries exhausted' };
  }
  const retryAfter = result.status === 429 || result.status === 503 ? parseRetryAfter(result.retryAfter, now) : undefined;
  const wanted = retryDelaySeconds(attempt, { schedule: deps.settings.retryScheduleSeconds, jitter: deps.settings.retryJitter, retryAfterSeconds: retryAfter });
  // SQS counts its 12 h from the receive: the delay actually applied, and recorded, is what is left.
  const decidedAt = deps.now();
  const delaySeconds = Math.min(wanted, visibilityLeftSeconds(receivedAt, decidedAt));
  await updateDelivery(deps, message, 'pending', { attempt: record_, nextAttemptAt: new Date(decidedAt + delaySeconds * 1000).toISOString() });
  return { kind: 'retry', attempt, result, delaySeconds };
}

/**
 * The delivery queue batch's work. A retry re-times its message on the queue; an exhausted
 * delivery is made visible at once, so its next receive (the 6th) moves it to the dead-letter
 * queue; both stay queued (staysQueued), everything else is consumed.
 */
export async function deliverBatch(deps: Deps, queued: QueuedDelivery[]): Promise<BatchOutcome[]> {
  const outcomes = await Promise.all(queued.map(async (item): Promise<BatchOutcome> => {
    try {
      const outcome = await attemptDelivery(deps, readDeliveryMessage(item.body), item.receiveCount, { receivedAt: item.receivedAt });
      if (outcome.kind === 'retry' || outcome.kind === 'exhausted') {
        await retryQueuedLater(deps, item.receiptHandle, outcome.kind === 'retry' ? outcome.delaySeconds : 0);
      }
      return { messageId: item.messageId, ...outcome };
    } catch (error) {
      logger.error('delivery failed unexpectedly', { messageId: item.messageId, error: error as Error });
      return { messageId: item.messageId, kind: 'error' };
    }
  }));
  return outcomes;
}
