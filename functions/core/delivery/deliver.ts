/**
 * One delivery attempt (docs/webhooks.md#answering-retries-and-failures, docs/architecture.md#fair-delivery): sign, POST, record the attempt, and decide what happens
 * next: done, retry after the scheduled delay, or failed for good (the message then goes to the
 * dead-letter queue). The attempt number comes from the delivery record (queue.ts
 * attemptNumberOf): the attempts recorded in the message's round, plus one; a receive that made no
 * attempt uses none, and a redelivered delivery starts a new round. A retry never waits in flight: it is a new delayed message, or,
 * beyond queueDelayMaxSeconds, parked in the due index (written with the attempt, in one update)
 * until the sweeper re-queues it; only then is the received message deleted. This module is the
 * attempt policy: every outcome is written as a named transition of the delivery record
 * (delivery-record.ts, through delivery-port.ts), and a batch's records are read and its
 * delivered outcomes written together (batch-records.ts).
 */
import { MetricUnit } from '@aws-lambda-powertools/metrics';
import type { Deps } from '../platform/deps.js';
import { keys, type DeliveryAttempt, type DeliveryMessage, type DeliveryRecord, type WebhookEndpoint } from '../platform/model.js';
import { endpointsOf, recordEndpointHealth } from './endpoints.js';
import { logger, metrics } from '../platform/observability.js';
import { signersOf, signFor } from './signing.js';
import { MAX_RESPONSE_BODY_BYTES, postWebhook, type PostResult } from './http-client.js';
import { deliveryAttempts, parseRetryAfter, retryDelaySeconds } from './schedule.js';
import { allowListFor } from './ssrf.js';
import { admitAttempt, markSlow, recordAttempt, releaseProbe } from './circuit-store.js';
import { failureOf } from './endpoint-notices.js';
import { takeRateSlot } from './delivery-throttle.js';
import { attemptError, keptHeaders, secretsOf } from './attempt-log.js';
import { redactor } from './redaction.js';
import { sendableHeaders } from './endpoint-fields.js';
import type { Lane } from './circuit-breaker.js';
import { attempted, attemptNumberOf, deferDelivery, readDeliveryMessage, sendDeliveryMessages, sendToDeadLetters } from './queue.js';
import { deliveryStore, transition } from './delivery-port.js';
import { firstRecord, isUnrecorded, markUnrecorded, type Transition } from './delivery-state.js';
import { DeliveredWrites, readBatchRecords, type StoredRecord } from './batch-records.js';
import { deliveryMaxReceives } from '../platform/bindings.js';

/**
 * `exhausted`: the last attempt failed (or the message kept crashing past it): it goes to the
 * dead-letter queue. `retry`: `parked` when it waits in the due index, else it is re-sent delayed.
 * `deferred`: not attempted (isolation: the endpoint's circuit is open or its bound is full; or its rate limit), to
 * be tried again at `untilMs` without consuming an attempt (queue.ts deferDelivery).
 */
export type Outcome =
  | { kind: 'delivered' | 'skipped' | 'failed'; attempt: number; result?: PostResult; reason?: string }
  | { kind: 'exhausted'; attempt: number; result?: PostResult; reason: string }
  | { kind: 'retry'; attempt: number; result: PostResult; delaySeconds: number; parked: boolean }
  /** `message`: what to queue again, when it differs from the message received (a rate-limit refusal counts itself). */
  | { kind: 'deferred'; attempt: number; untilMs: number; reason: string; lane: Lane; message?: DeliveryMessage };

/** A message as the delivery queue handed it out. */
export interface QueuedDelivery {
  messageId: string;
  receiptHandle: string;
  body: string;
  /** How often the queue handed this message out, this time included (its maxReceiveCount is the safety net: markDeadLettered). */
  receiveCount: number;
  /** The queue it came from: the main lane or the slow lane (circuit-store.ts laneOf). */
  lane?: Lane;
}

/** `error`: the attempt broke off unexpectedly (logged); the message is received again. */
export type BatchOutcome = { messageId: string } & (Outcome | { kind: 'error' });

/**
 * Whether the received message stays on the queue instead of being consumed: only after an
 * unexpected error (visible again after the visibility timeout, its receive counted). Retries,
 * deferrals and exhausted deliveries were sent on (or parked) by deliverBatch before this.
 */
export const staysQueued = (outcome: BatchOutcome): boolean => outcome.kind === 'error';

/**
 * Records an outcome with its transition (delivery-record.ts), pinned to the message's round; each
 * is conditional on the state it leaves, so one refused changes nothing and nothing more is sent
 * or queued: the outcome becomes what the record says now (delivered meanwhile by a duplicate
 * message, its record gone, or a redelivery began a new round, whose message carries on).
 */
async function settle(deps: Deps, message: DeliveryMessage, change: Transition, outcome: Outcome): Promise<Outcome> {
  if (await transition(deps, message, { ...change, round: message.round })) return outcome;
  const now = await deliveryStore(deps).getOne(keys.delivery(message.organizationId, message.deliveryId), { consistent: true, projection: ['status'] });
  const { attempt } = outcome;
  if (!now) {
    logger.warn('delivery record missing; outcome dropped', { organizationId: message.organizationId, endpointId: message.endpointId, deliveryId: message.deliveryId, transition: change.to });
    return { kind: 'skipped', attempt, reason: 'no delivery record' };
  }
  if (now.status === 'delivered') return { kind: 'delivered', attempt, reason: 'already delivered' };
  logger.info('outcome of an earlier round not recorded: redelivered since', { organizationId: message.organizationId, endpointId: message.endpointId, deliveryId: message.deliveryId, transition: change.to });
  return { kind: 'skipped', attempt, reason: 'superseded: redelivered since' };
}

/** What an attempt keeps of its result; `secrets` (attempt-log.ts secretsOf) are redacted wherever the receiver echoes them. The receiver check keeps its sends the same way. */
export function attemptRecord(deps: Deps, attempt: number, result: PostResult, secrets: string[]): DeliveryAttempt {
  const redact = redactor(secrets);
  return {
    at: new Date(deps.now()).toISOString(), attempt, latencyMs: result.latencyMs,
    ...(result.status !== undefined ? { statusCode: result.status } : {}),
    ...(result.error ? { error: attemptError(result, redact) } : {}),
    ...(result.responseBody ? { responseBody: redact.excerpt(result.responseBody, MAX_RESPONSE_BODY_BYTES, { truncated: result.responseBodyTruncated }) } : {}),
    // Shown with the attempt in the settings page (bounded: attempt-log.ts keptHeaders).
    ...(result.requestHeaders ? { requestHeaders: keptHeaders(result.requestHeaders, 'request') } : {}),
    ...(result.responseHeaders ? { responseHeaders: keptHeaders(result.responseHeaders, 'response', redact) } : {}),
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

/** Whether the message belongs to a round that a later redelivery replaced (messages without a round predate rounds). */
export const supersededByRedelivery = (message: DeliveryMessage, record: Pick<DeliveryRecord, 'redrivenAt'>): boolean =>
  message.round !== undefined && record.redrivenAt !== undefined && message.round < Date.parse(record.redrivenAt);

/**
 * Signs and sends one delivery to its endpoint, and records the outcome. The attempt number is
 * counted from the record (queue.ts attemptNumberOf).
 */
export async function attemptDelivery(
  deps: Deps, message: DeliveryMessage,
  options: {
    lane?: Lane;
    /**
     * From deliverBatch: the record, read whole with the batch's others, and where a delivered
     * outcome is written with theirs. Absent: the record is read here, the outcome written here.
     */
    batch?: { record: StoredRecord | undefined; writes: DeliveredWrites };
  } = {},
): Promise<Outcome> {
  const lane = options.lane ?? 'main';
  const { batch } = options;
  const stored = batch ? batch.record : await deliveryStore(deps).getOne(keys.delivery(message.organizationId, message.deliveryId), {
    consistent: true, projection: ['pk', 'sk', 'status', 'payloadOmitted', 'reason', 'attempts', 'createdAt', 'redrivenAt'],
  }) as StoredRecord | undefined;
  // None stored yet: a pending delivery, whose first outcome writes its record (delivery-state.ts markUnrecorded).
  // A message from before rounds (none) always had its record put by the fan-out.
  if (!stored && message.round !== undefined) markUnrecorded(message);
  const record: StoredRecord | undefined = stored ?? (isUnrecorded(message) ? firstRecord(message, deps.config.retentionDays) as StoredRecord : undefined);
  if (!record) {
    logger.warn('delivery record missing; message dropped', { organizationId: message.organizationId, endpointId: message.endpointId, deliveryId: message.deliveryId });
    return { kind: 'skipped', attempt: 0, reason: 'no delivery record' };
  }
  // A message of a round before the record's last redelivery (a retry still waiting when "Retry now"
  // re-queued it, say) is consumed without an attempt: one delivery never runs two retry chains.
  if (supersededByRedelivery(message, record)) return { kind: 'skipped', attempt: 0, reason: 'superseded by a redelivery' };
  const attempt = attemptNumberOf(message, record);
  if (record.status === 'delivered') return { kind: 'delivered', attempt, reason: 'already delivered' };
  const hollow = hollowPayloadReason(record);
  if (hollow) {
    return settle(deps, message, { to: 'failed', reason: hollow }, { kind: 'failed', attempt, reason: hollow });
  }
  const attempts = deliveryAttempts(deps.config);
  if (attempt > attempts) {
    // Its round's attempts are all recorded already (a duplicate message of an exhausted delivery).
    const reason = `no success after ${attempts} attempts`;
    return settle(deps, message, { to: 'failed', reason }, { kind: 'exhausted', attempt, reason });
  }
  // The organization's endpoints, cached for endpointCacheTtlSeconds: a disable, a secret
  // rotation or a signing scheme switch reaches deliveries within that TTL (the old key signs
  // through its grace anyway). Each attempt is signed as its endpoint is then, not when queued.
  const endpoint: WebhookEndpoint | undefined = (await endpointsOf(deps, message.organizationId, message.endpointId)).find((e) => e.id === message.endpointId);
  if (!endpoint) {
    const reason = 'the endpoint was removed';
    return settle(deps, message, { to: 'failed', reason }, { kind: 'failed', attempt, reason });
  }
  if (!endpoint.enabled && message.payload.type !== 'webhook.test') {
    const reason = `endpoint disabled${endpoint.disabledReason ? `: ${endpoint.disabledReason}` : ''}`;
    return settle(deps, message, { to: 'skipped', reason }, { kind: 'skipped', attempt, reason });
  }
  // Endpoints are validated on write, but a row written earlier (or by hand) is re-checked here:
  // outside the local stack an event is never sent in cleartext.
  if (!deps.config.local && !endpoint.url.startsWith('https:')) {
    const reason = 'the endpoint URL is not https; events are only sent over TLS (update the URL and redeliver)';
    return settle(deps, message, { to: 'failed', reason }, { kind: 'failed', attempt, reason });
  }

  // Rotation always leaves the newest secret unexpired, but an item edited by hand may have none:
  // a recorded failure (redeliverable once a secret is rotated in), not a crash on every receive.
  if (signersOf(endpoint, deps.now()).length === 0) {
    const reason = 'the endpoint has no active signing secret (rotate it: settings page or `crm webhooks rotate-secret`, then redeliver)';
    return settle(deps, message, { to: 'failed', reason }, { kind: 'failed', attempt, reason });
  }

  // ISOLATION GATE (docs/architecture.md#fair-delivery, delivery-isolation): the endpoint is loaded, nothing is sent yet.
  // An attempt the gate does not admit returns { kind: 'deferred', attempt, untilMs, reason }:
  // deliverBatch parks it with deferDelivery (no attempt consumed) and consumes the message.
  // `move`: to the slow lane now; `park`: in this lane until the circuit half-opens or a slot frees.
  const admission = await admitAttempt(deps, endpoint, lane);
  if (admission.kind === 'move') return { kind: 'deferred', attempt, untilMs: admission.until ?? deps.now(), reason: admission.reason, lane: 'slow' };
  if (admission.kind === 'park') return { kind: 'deferred', attempt, untilMs: admission.until, reason: admission.reason, lane };
  // The endpoint's rate limit (delivery-throttle.ts), shared by every container: over it, the
  // delivery waits for a free lane like a parked one, without an attempt (it throttles, it does not fail).
  // A refused probe gives its claim back, or every other delivery would park until its deadline.
  const throttled = await takeRateSlot(deps, endpoint, message.throttled).catch((error: unknown) => { admission.release(); throw error; });
  if (throttled) {
    admission.release();
    if (admission.probeDeadline !== undefined) await releaseProbe(deps, endpoint, admission.probeDeadline);
    return { kind: 'deferred', attempt, untilMs: throttled.untilMs, reason: throttled.reason, lane, message: { ...message, throttled: (message.throttled ?? 0) + 1 } };
  }

  let result: PostResult;
  // Everything after the gate gives the slot back, signing included: a slot never released stays
  // taken for the container's life (after maxInFlightPerEndpoint of them, the endpoint is "busy" there for good).
  try {
    const now = deps.now();
    const body = JSON.stringify(message.payload);
    // The receiver's own headers first: none can replace ours (endpoint-fields.ts reservedHeader; the client sets content-type and the rest).
    // Stored ones that break the header rules (written by an import or by hand) are never sent.
    const custom = sendableHeaders(endpoint.headers);
    if (custom.refused.length > 0) {
      metrics.addMetric('DeliveryHeadersRefused', MetricUnit.Count, custom.refused.length);
      logger.warn('stored custom headers that break the header rules were not sent', { organizationId: endpoint.organizationId, endpointId: endpoint.id, names: custom.refused });
    }
    const headers = { ...custom.headers, ...signFor(endpoint, { id: message.payload.id, body }, now) };
    result = await postWebhook({ url: endpoint.url, headers, body, timeoutMs: admission.timeoutMs, allow: allowListFor(deps.config) });
  } finally {
    admission.release();
  }
  // ISOLATION REPORT (delivery-isolation): the attempt's result (result.ok, result.errorCode) goes to the breaker here.
  // A main-lane POST cut off at its short budget is not an attempt: it moves to the slow lane (full time-out), its endpoint too.
  if (result.errorCode === 'ETIMEDOUT' && admission.timeoutMs < deps.config.deliveryTimeoutMs) {
    await markSlow(deps, endpoint);
    return { kind: 'deferred', attempt, untilMs: deps.now(), reason: `no answer within ${admission.timeoutMs} ms: moved to the slow lane`, lane: 'slow' };
  }
  // A failure short of the last attempt (and not a 410, which disables) waits for a retry: the paused notice counts it.
  const waits = !result.ok && result.status !== 410 && attempt < deliveryAttempts(deps.config);
  await recordAttempt(deps, endpoint, { ok: result.ok, probe: admission.probe, latencyMs: result.latencyMs, lastError: failureOf(result, endpoint), ...(waits ? { waiting: message } : {}) });
  const whole = batch && record;
  const writeDelivered = batch && whole
    ? (attemptMade: DeliveryAttempt) => batch.writes.add(message, whole, attemptMade)
    : undefined;
  return recordOutcome(deps, message, endpoint, attempt, result, writeDelivered);
}

/** Records an attempt's result and decides what follows (delivered, disabled, exhausted, or when to retry). */
async function recordOutcome(
  deps: Deps, message: DeliveryMessage, endpoint: WebhookEndpoint, attempt: number, result: PostResult,
  /** Collects a delivered outcome for the batch's write (deliverBatch); absent: written here. */
  writeDelivered?: (attempt: DeliveryAttempt) => void,
): Promise<Outcome> {
  const record_ = attemptRecord(deps, attempt, result, secretsOf(endpoint));
  metrics.addMetric('DeliveryAttempts', MetricUnit.Count, 1);
  metrics.addMetric('DeliveryLatency', MetricUnit.Milliseconds, result.latencyMs);
  if (!result.ok) metrics.addMetric('DeliveryFailures', MetricUnit.Count, 1);
  logger.info('delivery attempt', { organizationId: message.organizationId, deliveryId: message.deliveryId, endpointId: endpoint.id, eventId: message.payload.id, eventType: message.payload.type, attempt, status: result.status, latencyMs: result.latencyMs, error: result.errorCode });

  if (result.ok) {
    if (writeDelivered) writeDelivered(record_);
    else await transition(deps, message, { to: 'delivered', attempt: record_ });
    await recordEndpointHealth(deps, endpoint, 'ok');
    return { kind: 'delivered', attempt, result };
  }
  if (result.status === 410) {
    // Disabled first, so whoever reads the failed record ("the endpoint was disabled") finds it so.
    await recordEndpointHealth(deps, endpoint, 'gone', failureOf(result, endpoint));
    return settle(deps, message, { to: 'failed', attempt: record_, reason: 'the receiver answered 410 Gone; the endpoint was disabled' }, { kind: 'failed', attempt, result, reason: 'gone' });
  }
  await recordEndpointHealth(deps, endpoint, 'failed', failureOf(result, endpoint));
  if (attempt >= deliveryAttempts(deps.config)) {
    return settle(deps, message, { to: 'failed', attempt: record_, reason: `no success after ${attempt} attempts` }, { kind: 'exhausted', attempt, result, reason: 'retries exhausted' });
  }
  const decidedAt = deps.now();
  const retryAfter = result.status === 429 || result.status === 503 ? parseRetryAfter(result.retryAfter, decidedAt) : undefined;
  const delaySeconds = retryDelaySeconds(attempt, { schedule: deps.config.retryScheduleSeconds, jitter: deps.config.retryJitter, retryAfterSeconds: retryAfter });
  const untilMs = decidedAt + delaySeconds * 1000;
  // Beyond a queue delay, the retry leaves the queue: parked in the due index with this very write.
  const parked = delaySeconds > deps.config.queueDelayMaxSeconds;
  const settled = await settle(deps, message, { to: 'attempted', attempt: record_, nextAttemptAt: new Date(untilMs).toISOString(), ...(parked ? { park: { untilMs, round: message.round } } : {}) },
    { kind: 'retry', attempt, result, delaySeconds, parked });
  if (settled.kind === 'retry' && settled.parked) metrics.addMetric('DeliveryRetriesParked', MetricUnit.Count, 1); // once written
  return settled;
}

/**
 * What follows an outcome on the queue, before the received message is consumed: a retry that is
 * not parked is re-sent delayed (in the same round), a deferred delivery is parked without an
 * attempt, an exhausted one is sent to the dead-letter queue.
 */
async function sendOn(deps: Deps, message: DeliveryMessage, outcome: Outcome): Promise<void> {
  if (outcome.kind === 'retry' && !outcome.parked) {
    await sendDeliveryMessages(deps, [attempted(message)], { delaySeconds: () => outcome.delaySeconds });
  } else if (outcome.kind === 'deferred') {
    await deferDelivery(deps, outcome.message ?? message, outcome.untilMs, { reason: outcome.reason, queue: outcome.lane === 'slow' ? 'deliverySlowQueue' : 'deliveryQueue' });
  } else if (outcome.kind === 'exhausted') {
    await sendToDeadLetters(deps, message);
  }
}

/** The delivery queues' maxReceiveCount: the receive after this many moves the message to the dead-letter queue. */
const MAX_RECEIVES = deliveryMaxReceives;

/**
 * A message whose receives kept breaking off unexpectedly is moved to the dead-letter queue by SQS
 * itself; its record says so (failed, with the reason), or it would stay `pending` for good, out
 * of every list of failed deliveries and of "re-deliver all failed". Best effort: the cause may
 * be the table itself (the dead-letter pass redeliveries the message either way).
 */
async function markDeadLettered(deps: Deps, message: DeliveryMessage, receives: number): Promise<void> {
  const reason = `its last ${receives} receives broke off unexpectedly (see the delivery function's log), so the queue moved it to the dead-letter queue; redeliver it once the cause is fixed`;
  logger.warn('delivery dead-lettered', { organizationId: message.organizationId, endpointId: message.endpointId, deliveryId: message.deliveryId, eventId: message.payload.id, by: 'receives' });
  // Never attempted, its record may not be written yet: this outcome writes it (delivery-state.ts unrecorded).
  const create = message.round === undefined ? undefined : firstRecord({ ...message, round: message.round }, deps.config.retentionDays);
  await transition(deps, message, { to: 'dead-lettered', reason, round: message.round, ...(create ? { create } : {}) }).catch((error: unknown) => {
    logger.error('recording a dead-lettered delivery as failed failed', { organizationId: message.organizationId, endpointId: message.endpointId, deliveryId: message.deliveryId, error: error as Error });
  });
}

/**
 * The delivery queue batch's work, every message at once. Each outcome's follow-up (sendOn) is done
 * before its message is reported consumed; an unexpected error leaves the message on the queue.
 */
export async function deliverBatch(deps: Deps, queued: QueuedDelivery[]): Promise<BatchOutcome[]> {
  const parsed = queued.map((item) => {
    try {
      return readDeliveryMessage(item.body);
    } catch {
      return undefined; // reported below, with the item
    }
  });
  // One read for the batch; if it fails, each attempt reads its own record (and writes its own outcome).
  const records = await readBatchRecords(deps, parsed.filter((m): m is DeliveryMessage => m !== undefined)).catch((error: unknown) => {
    logger.warn('reading the batch’s delivery records failed; reading them one by one', {
      organizationIds: [...new Set(parsed.map((m) => m?.organizationId).filter(Boolean))].join(','), error: error as Error,
    });
    return undefined;
  });
  const writes = new DeliveredWrites();
  const outcomes = await Promise.all(queued.map(async (item, n): Promise<BatchOutcome & { deliveryId?: string }> => {
    try {
      const message = parsed[n] ?? readDeliveryMessage(item.body);
      const outcome = await attemptDelivery(deps, message, {
        lane: item.lane, ...(records ? { batch: { record: records.get(message.deliveryId), writes } } : {}),
      });
      await sendOn(deps, message, outcome);
      return { messageId: item.messageId, deliveryId: message.deliveryId, ...outcome };
    } catch (error) {
      const message = parsed[n];
      logger.error('delivery failed unexpectedly', {
        messageId: item.messageId, organizationId: message?.organizationId, endpointId: message?.endpointId, deliveryId: message?.deliveryId, error: error as Error,
      });
      if (item.receiveCount >= MAX_RECEIVES) {
        // SQS's own move is not in the dead-letter queue's NumberOfMessagesSent: this counts it (DeliveryQueueDeadLetters alarm).
        metrics.addMetric('DeliveriesMovedByQueue', MetricUnit.Count, 1);
        if (message) await markDeadLettered(deps, message, item.receiveCount);
      }
      return { messageId: item.messageId, kind: 'error' };
    }
  }));
  // Delivered, but the outcome not recorded: the message stays queued, so the record ends right
  // (a second POST with the same webhook-id, which receivers dedupe, rather than a lost outcome).
  const unwritten = await writes.flush(deps);
  return outcomes.map(({ deliveryId, ...outcome }) => (deliveryId && unwritten.has(deliveryId) && outcome.kind === 'delivered' ? { messageId: outcome.messageId, kind: 'error' } : outcome));
}
