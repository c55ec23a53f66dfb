/**
 * The delivery queue's one producer (docs/architecture.md#stages-and-what-each-owns: each queue has one owner), and where a delivery
 * waits between attempts (docs/architecture.md#fair-delivery). Fan-out, test events, redeliveries, retries, deferrals and the
 * due-index sweeper all queue through here.
 *
 * A delivery is recorded once per (event, endpoint), with an id derived from both. One BatchGetItem
 * finds what an earlier run of the batch already wrote (a BatchWrite put cannot be conditional);
 * the records whose outcome is known now (skipped, too big) are put; a pending one's record is
 * written by its first outcome, in the delivery function (3 write units a delivery instead of 4:
 * docs/capacity.md). Then the messages are sent, and only then the events' payload items are
 * written: an event item is the mark that its deliveries were queued, and names their endpoints.
 * A re-run queues again only the pending deliveries of an event without its item (the run died
 * before or while queuing) that have no record yet or a pending, unattempted, unparked one, so a
 * re-processed batch sends nothing twice unless a run died half-way through sending (then
 * receivers dedupe by webhook-id, and the delivery function skips one already delivered).
 *
 * Waiting: a retry never sits in flight. Up to `queueDelayMaxSeconds` (≤ 900 s, SQS's DelaySeconds
 * maximum) it is a new, delayed message; longer, it leaves the queue: the record carries the keys
 * of the sparse `due` index, and the sweeper (delivery-sweeper.ts) re-queues it when due. The
 * received message is deleted only after either is done (at-least-once). Attempts are counted
 * from the delivery record, not from SQS's receive count (attemptNumberOf): a throttled receive, a
 * crash before the isolation gate or an open circuit uses none of them (the retry schedule's
 * delays + 1: deliveryAttempts); the queue's maxReceiveCount counts one message's receives, a
 * safety net for a message whose receives keep crashing (docs/webhooks.md "Attempts").
 */
import { createHash } from 'node:crypto';
import type { Deps } from '../platform/deps.js';
import { keys, type DeliveryMessage, type DeliveryRecord, type EventPayload, type WebhookEndpoint } from '../platform/model.js';
import { logger } from '../platform/observability.js';
import { sqsMessageBody } from '../platform/batches.js';
import { eventItem } from './store.js';
import { deliveryPorts, deliveryStore, transition } from './delivery-port.js';
import { firstRecord, isUnrecorded, type DeliveryQueueName } from './delivery-state.js';

export { MAX_QUEUE_DELAY_SECONDS } from './sqs-delivery-queue.js';

/** SQS takes 256 KiB per message; keep room for attributes and the envelope. */
export const MAX_MESSAGE_BYTES = 240 * 1024;

export const deliveryIdFor = (eventId: string, endpointId: string) =>
  'dlv_' + createHash('sha256').update(`${eventId}|${endpointId}`).digest('base64url').slice(0, 22);

const expiresAt = (deps: Deps) => Math.floor(deps.now() / 1000) + deps.config.retentionDays * 86_400;

/**
 * Sends delivery messages through the stage's queue port (SQS: sqs-delivery-queue.ts, which makes
 * every message's MessageGroupId its organization, for fair queues), each after `delaySeconds(m)`
 * (0..900; default 0), to the delivery queue or, for exhausted ones, to its dead-letter queue.
 */
export async function sendDeliveryMessages(
  deps: Deps, messages: DeliveryMessage[], options: { delaySeconds?: (m: DeliveryMessage) => number; queue?: DeliveryQueueName } = {},
): Promise<void> {
  if (messages.length === 0) return;
  await deliveryPorts(deps).queue.send(options.queue ?? 'deliveryQueue', messages.map((message) => ({ message, delaySeconds: options.delaySeconds?.(message) ?? 0 })));
}

/** A message body as sendDeliveryMessages wrote it. */
export const readDeliveryMessage = (body: string): DeliveryMessage => JSON.parse(body) as DeliveryMessage;

/** What attemptNumberOf reads of the delivery record. */
export type AttemptCount = Pick<DeliveryRecord, 'attempts' | 'createdAt' | 'redrivenAt'>;

/**
 * The attempt a received message stands for: 1 + the attempts the record holds since the
 * message's round began (DeliveryMessage.round). Receives that made no attempt count for nothing.
 */
export function attemptNumberOf(message: DeliveryMessage, record: AttemptCount): number {
  const since = message.round ?? Date.parse(record.redrivenAt ?? record.createdAt);
  return 1 + (record.attempts ?? []).filter((a) => Date.parse(a.at) >= since).length;
}

/** The message as a fresh send of the delivery (redeliveries, the dead-letter queue): a new round of attempts from `now`. */
export const freshMessage = (message: DeliveryMessage, now: number): DeliveryMessage => ({ ...attempted(message), round: now });

/** The message once its delivery was attempted: its rate-limit refusals (DeliveryMessage.throttled) no longer count. */
export function attempted(message: DeliveryMessage): DeliveryMessage {
  const { throttled: _cleared, ...rest } = message;
  return rest;
}

/**
 * Parks a received delivery until `untilMs` without an attempt (none is recorded, so none is
 * consumed): what the circuit breaker and the per-endpoint bound do with a delivery they do not
 * attempt now. A short wait is a delayed message; a longer one (over queueDelayMaxSeconds) is
 * written to the due index, with the message's round. The caller then consumes the received
 * message (deliverBatch does, for a `deferred` outcome). Returns where it waits (`settled`: the
 * record is no longer pending (delivered meanwhile by a duplicate message, or failed), is gone, or
 * was redelivered since: nothing waits).
 */
export async function deferDelivery(
  deps: Deps, message: DeliveryMessage, untilMs: number, options: { reason: string; queue?: 'deliveryQueue' | 'deliverySlowQueue' },
): Promise<'queued' | 'parked' | 'settled'> {
  const delaySeconds = Math.max(0, (untilMs - deps.now()) / 1000);
  if (delaySeconds <= deps.config.queueDelayMaxSeconds) {
    // A delivery without a record yet gets it now, so the lists show it held (a recorded one keeps its record as it is).
    if (isUnrecorded(message) && !(await transition(deps, message, { to: 'held', untilMs, reason: options.reason, round: message.round }))) return 'settled';
    await sendDeliveryMessages(deps, [message], { delaySeconds: () => delaySeconds, queue: options.queue });
    return 'queued';
  }
  const parked = await transition(deps, message, { to: 'parked', park: { untilMs, round: message.round }, reason: options.reason, round: message.round });
  return parked ? 'parked' : 'settled';
}

/**
 * An exhausted delivery's message goes to the dead-letter queue (a retry is a new message, so the
 * queue's maxReceiveCount no longer gets it there). It is sent fresh (a round from now): moved
 * back by StartMessageMoveTask, it starts a new round of attempts (deliveryAttempts), like every redeliver.
 */
export async function sendToDeadLetters(deps: Deps, message: DeliveryMessage): Promise<void> {
  await sendDeliveryMessages(deps, [freshMessage(message, deps.now())], { queue: 'deliveryDlq' });
  // The dead-letter arrivals' query (docs/operations.md "Logs Insights queries") finds this line.
  logger.warn('delivery dead-lettered', { organizationId: message.organizationId, endpointId: message.endpointId, deliveryId: message.deliveryId, eventId: message.payload.id, by: 'attempts' });
}

/** A delivery record as stored: its payload is its event's (store.ts). */
type StoredDelivery = Omit<DeliveryRecord, 'payload'> & Record<string, unknown>;

/** What recording a delivery reads of its endpoint: which one, and whether it is enabled (as the fan-out read it). */
export type EndpointState = Pick<WebhookEndpoint, 'id' | 'enabled' | 'disabledReason'>;
/** One delivery to record: an event for one endpoint subscribed to it. */
export interface PlannedDelivery {
  event: EventPayload;
  endpoint: EndpointState;
  /** A send of the receiver check: its record says so (DeliveryRecord.check). */
  check?: true;
}

/** Recorded deliveries: the messages to send, then the events' payload items to write (queueDeliveries). */
export interface RecordedDeliveries { messages: DeliveryMessage[]; events: Record<string, unknown>[] }

/**
 * Records each planned delivery once (see the module comment): one BatchGetItem for the records a
 * previous run may have written and the event items of those it queued, then BatchWriteItem for
 * the records whose outcome is already known (skipped: endpoint disabled; failed: too big to
 * queue). A pending delivery's record is not put here: its first outcome writes it whole
 * (delivery-state.ts firstRecord, Transition.create), one write where a put and an update were
 * (docs/capacity.md); `putPending` puts it now (recordDelivery: a delivery recorded by hand; and the
 * stage's `pendingRecordsAtFanOut`, for the deploy that brought this change).
 * Returns the messages to queue (the new pending deliveries of events not queued yet, and those an
 * earlier run recorded but did not queue) and the event items queueDeliveries writes once they are sent.
 */
export async function recordDeliveries(deps: Deps, planned: PlannedDelivery[], options: { putPending?: boolean } = {}): Promise<RecordedDeliveries> {
  if (planned.length === 0) return { messages: [], events: [] };
  const round = deps.now();
  const expiry = expiresAt(deps);
  const byId = new Map<string, { record: StoredDelivery; message: DeliveryMessage; event: EventPayload; stored: EventPayload }>();
  for (const { event, endpoint, check } of planned) {
    const id = deliveryIdFor(event.id, endpoint.id);
    if (byId.has(id)) continue;
    const message: DeliveryMessage = { deliveryId: id, organizationId: event.organization_id, endpointId: endpoint.id, payload: event, round };
    const size = Buffer.byteLength(sqsMessageBody(message));
    const tooBig = size > MAX_MESSAGE_BYTES;
    const [status, reason] = !endpoint.enabled
      ? ['skipped', `endpoint disabled${endpoint.disabledReason ? `: ${endpoint.disabledReason}` : ''}`] as const
      : tooBig ? ['failed', `payload of ${size} bytes exceeds the ${MAX_MESSAGE_BYTES}-byte queue budget`] as const
        : ['pending', undefined] as const;
    if (tooBig) logger.warn('delivery payload too large', { organizationId: event.organization_id, endpointId: endpoint.id, deliveryId: id, eventType: event.type, size });
    // No id-index entry (gsi1): a delivery is found by id through its organization (find-delivery.ts), a write per delivery saved.
    const record = {
      ...firstRecord(message as DeliveryMessage & { round: number }, deps.config.retentionDays),
      status, ...(reason ? { reason } : {}), ...(tooBig ? { payloadOmitted: true } : {}), // never sent: see deliver.ts hollowPayloadReason
      ...(check ? { check: true } : {}),
    } as StoredDelivery;
    byId.set(id, { record, message, event, stored: tooBig ? { ...event, data: { object: {} } } : event });
  }
  const all = [...byId.values()];
  const eventKeys = [...new Map(all.map((d) => [d.event.id, keys.event(d.event.organization_id, d.event.id)])).values()];
  const found = await deliveryStore(deps).get([...all.map((d) => keys.delivery(d.record.organizationId, d.record.id)), ...eventKeys], {
    consistent: true, projection: ['sk', 'id', 'eventId', 'status', 'attempts', 'dueAt'],
  });
  const existing = new Map(found.filter((i) => String(i.sk).startsWith(keys.deliveryPrefix)).map((item) => [item.id as string, item]));
  const queuedEvents = new Set(found.filter((i) => !String(i.sk).startsWith(keys.deliveryPrefix)).map((i) => i.eventId as string));
  const fresh = all.filter((d) => !existing.has(d.record.id));
  const putPending = options.putPending || deps.config.pendingRecordsAtFanOut;
  await deliveryStore(deps).recorded(fresh.filter((d) => putPending || d.record.status !== 'pending').map((d) => d.record));
  // Recorded by a run that died before its event item (so before queuing, or while): queued again.
  const unqueued = all.filter((d) => {
    const was = existing.get(d.record.id);
    return was && !queuedEvents.has(d.event.id) && was.status === 'pending' && (was.attempts as unknown[] | undefined)?.length === 0 && was.dueAt === undefined;
  });
  // One payload item per event (a re-write by a re-run is the same item), naming its endpoints.
  const endpointsOf = new Map<string, string[]>();
  for (const d of all) endpointsOf.set(d.event.id, [...(endpointsOf.get(d.event.id) ?? []), d.record.endpointId]);
  const events = [...new Map(all.filter((d) => !queuedEvents.has(d.event.id)).map((d) => [d.event.id, eventItem(d.event, d.stored, expiry, endpointsOf.get(d.event.id)!)])).values()];
  // New pending ones of an event already queued (its item written) were sent by an earlier run: not again.
  const unsent = fresh.filter((d) => d.record.status === 'pending' && !queuedEvents.has(d.event.id));
  return { messages: [...unsent, ...unqueued].map((d) => d.message), events };
}

/** Sends the messages, then writes their events' payload items (the mark that they were queued). */
export async function queueDeliveries(deps: Deps, recorded: RecordedDeliveries): Promise<void> {
  if (recorded.messages.length === 0 && recorded.events.length === 0) return;
  await sendDeliveryMessages(deps, recorded.messages);
  await deliveryStore(deps).recorded(recorded.events);
}

/**
 * Records the delivery of one event to one endpoint without queuing it (tests, and tools that send
 * by hand): the message, or nothing (see recordDeliveries). Its event item is written at once.
 */
export async function recordDelivery(deps: Deps, event: EventPayload, endpoint: WebhookEndpoint): Promise<DeliveryMessage | undefined> {
  const recorded = await recordDeliveries(deps, [{ event, endpoint }], { putPending: true });
  await deliveryStore(deps).recorded(recorded.events);
  return recorded.messages[0];
}
