/**
 * Re-delivery (docs/webhooks.md#answering-retries-and-failures): one delivery by id, the failed deliveries of an organization (or one
 * endpoint) in a time range, or the dead-letter queue. A redelivered delivery is a fresh message, so
 * it gets a fresh attempt count, and it carries the same payload, so the same webhook-id. A
 * delivery whose event was too large to keep is never redelivered (it would go out hollow), and a
 * redelivered delivery's copy in the dead-letter queue is removed, so it cannot be sent twice.
 */
import {
  ChangeMessageVisibilityBatchCommand, DeleteMessageBatchCommand, GetQueueAttributesCommand, ReceiveMessageCommand, StartMessageMoveTaskCommand,
  type Message,
} from '@aws-sdk/client-sqs';
import type { Deps } from '../platform/deps.js';
import { conflict, notFound } from '../platform/errors.js';
import { keys, type DeliveryMessage, type DeliveryRecord } from '../platform/model.js';
import { freshMessage, sendDeliveryMessages } from './queue.js';
import { toDeliveryRecord, withPayloads } from './store.js';
import { deliveryStore, transition } from './delivery-port.js';
import { hollowPayloadReason } from './deliver.js';
import { inBatches } from '../platform/batches.js';
import { findDelivery } from './find-delivery.js';

export interface DeliveryFilter {
  organizationId?: string;
  endpointId?: string;
  /** ISO times bounding the delivery's creation. */
  since?: string;
  until?: string;
}

export { toDeliveryRecord };
/** The queue message that (re)sends a stored delivery. */
export const toMessage = (item: DeliveryRecord): DeliveryMessage => ({ deliveryId: item.id, organizationId: item.organizationId, endpointId: item.endpointId, payload: item.payload });
const matches = (item: { organizationId?: unknown; endpointId?: unknown; createdAt?: unknown }, f: DeliveryFilter) =>
  (!f.organizationId || item.organizationId === f.organizationId) &&
  (!f.endpointId || item.endpointId === f.endpointId) &&
  (!f.since || String(item.createdAt) >= f.since) &&
  (!f.until || String(item.createdAt) <= f.until);

async function markRequeued(deps: Deps, message: DeliveryMessage): Promise<void> {
  if (!(await transition(deps, message, { to: 'redelivered' }))) throw new Error(`no delivery record ${message.deliveryId} to redeliver`);
}

async function requeue(deps: Deps, messages: DeliveryMessage[]): Promise<void> {
  if (messages.length === 0) return;
  await Promise.all(messages.map((m) => markRequeued(deps, m)));
  // A fresh count of attempts, whatever the message carried (a dead-letter copy may carry some).
  await sendDeliveryMessages(deps, messages.map((m) => freshMessage(m, deps.now())));
}

export { findDelivery };

/**
 * `removeDeadLetterCopies: false` leaves a redelivered delivery's dead-letter copy in place: what a tenant's
 * click does (settings API), so it never pages through the dead-letter queue every organization
 * shares, nor holds other organizations' messages hidden if its function times out mid-pass. A
 * left copy is harmless: when an operator redeliveries it later, the delivery function finds the
 * record delivered and skips it, or attempts a still-failing one again under the same webhook-id.
 */
export interface RedeliverOptions {
  removeDeadLetterCopies?: boolean;
  /** The delivery's organization when the caller knows it (one GetItem; else find-delivery.ts looks in every organization). */
  organizationId?: string;
}

/**
 * Any delivery by id, whatever its status (a delivered one is sent again: receivers dedupe by
 * webhook-id), except one whose payload was not kept.
 */
export async function redeliverDelivery(deps: Deps, deliveryId: string, options: RedeliverOptions = {}): Promise<DeliveryMessage & { deadLetters?: DeadLetterPass }> {
  const item = await findDelivery(deps, deliveryId, options.organizationId);
  if (!item) throw notFound(`No delivery ${deliveryId}.`);
  const hollow = hollowPayloadReason(item);
  if (hollow) throw conflict(`Delivery ${deliveryId} cannot be redelivered: ${hollow}.`);
  const message = toMessage(item);
  await requeue(deps, [message]);
  // Only an exhausted (failed) delivery has a dead-letter copy.
  const deadLetters = item.status === 'failed' && options.removeDeadLetterCopies !== false ? await removeDeadLetters(deps, new Set([message.deliveryId])) : undefined;
  return { ...message, ...(deadLetters ? { deadLetters } : {}) };
}

/** An organization's deliveries, newest first, optionally by status and endpoint and time range. */
export async function listDeliveries(
  deps: Deps, organizationId: string,
  options: DeliveryFilter & { status?: string; limit?: number; /** false: without their events' payloads (a read per event saved). */ payloads?: boolean } = {},
): Promise<DeliveryRecord[]> {
  const items = await deliveryStore(deps).deliveriesOf(organizationId);
  const limit = options.limit ?? 50;
  const out = items.map(toDeliveryRecord).filter((item) => (!options.status || item.status === options.status) && matches(item, { ...options, organizationId }));
  const newest = out.sort((a, b) => String(b.createdAt).localeCompare(String(a.createdAt))).slice(0, limit);
  return options.payloads === false ? newest : withPayloads(deps, newest);
}

/**
 * Failed deliveries of an organization (optionally one endpoint, a time range) go back to the
 * queue; those whose payload was not kept are left failed and counted in `hollow`. Their copies in
 * the dead-letter queue are then removed.
 */
export async function redeliverFailed(
  deps: Deps, filter: DeliveryFilter & { organizationId: string }, onProgress?: (done: number, total: number) => void,
  options: RedeliverOptions & { maxMessages?: number; /** At most this many per call (newest first); the rest are counted in `remaining`. */ limit?: number } = {},
): Promise<{ redriven: number; hollow: number; remaining: number; deadLetters?: DeadLetterPass }> {
  // Payloads only for the ones this call re-queues (a bounded call over a long backlog reads 500, not all).
  const listed = (await listDeliveries(deps, filter.organizationId, { ...filter, status: 'failed', limit: Number.MAX_SAFE_INTEGER, payloads: false }))
    // The receiver check's sends failed as asked (DeliveryRecord.check): never sent again in bulk.
    .filter((item) => !item.check);
  const redeliverable = listed.filter((item) => !hollowPayloadReason(item));
  const failed = await withPayloads(deps, redeliverable.slice(0, options.limit ?? redeliverable.length));
  let done = 0;
  for (const batch of inBatches(failed, 10)) {
    await requeue(deps, batch.map(toMessage));
    onProgress?.((done += batch.length), failed.length);
  }
  const deadLetters = options.removeDeadLetterCopies === false ? undefined : await removeDeadLetters(deps, new Set(failed.map((item) => item.id)), options.maxMessages);
  return { redriven: failed.length, hollow: listed.length - redeliverable.length, remaining: redeliverable.length - failed.length, ...(deadLetters ? { deadLetters } : {}) };
}

/**
 * Re-queues the given deliveries (records read without their payloads, e.g. the settings API's
 * bounded scan of failed ones); their payloads are joined back here. Returns how many were queued.
 */
export async function redeliverRecords(deps: Deps, records: Omit<DeliveryRecord, 'payload'>[]): Promise<number> {
  const withPayload = await withPayloads(deps, records as DeliveryRecord[]);
  for (const batch of inBatches(withPayload, 10)) await requeue(deps, batch.map(toMessage));
  return withPayload.length;
}

/** What a pass over the dead-letter queue did: `complete` is false when it stopped at its cap. */
export interface DeadLetterPass {
  moved: number;
  /** Messages looked at in this pass. */
  seen: number;
  /** Messages in the queue when the pass started (visible and in flight; SQS's approximation). */
  total: number;
  complete: boolean;
  /** Messages still in flight at the end that this pass does not hold (e.g. an earlier capped pass's). */
  heldElsewhere: number;
}

/** Dead-letter messages one pass looks at; `--max` changes it. */
export const DEAD_LETTER_PASS_MAX = 1_000;
/**
 * How long a looked-at message stays hidden. Long, so that a slow pass never meets its own skipped
 * messages again (they would crowd out unseen ones); a capped pass leaves them hidden, so running
 * it again continues with the rest; any other pass makes them visible again at its end.
 */
export const DEAD_LETTER_HOLD_SECONDS = 15 * 60;

/**
 * Moves dead-letter messages back to the delivery queue. Without a filter, on AWS, SQS's own
 * StartMessageMoveTask does it; otherwise (filters, or the local emulator) receive → send → delete,
 * leaving messages that do not match where they are.
 */
export async function redeliverDeadLetters(
  deps: Deps, filter: DeliveryFilter = {}, onProgress?: (moved: number, seen: number) => void, options: { maxMessages?: number } = {},
): Promise<Partial<DeadLetterPass> & { moved: number; task?: string; alreadyDelivered?: number }> {
  const unfiltered = !filter.organizationId && !filter.endpointId && !filter.since && !filter.until;
  if (unfiltered && !deps.config.local) {
    const arn = async (url: string) => (await deps.sqs.send(new GetQueueAttributesCommand({ QueueUrl: url, AttributeNames: ['QueueArn'] }))).Attributes!.QueueArn!;
    const out = await deps.sqs.send(new StartMessageMoveTaskCommand({ SourceArn: await arn(deps.queues.deliveryDlq), DestinationArn: await arn(deps.queues.deliveryQueue) }));
    return { moved: 0, task: out.TaskHandle };
  }
  // A dead letter whose delivery has since been delivered (re-delivered from the settings page,
  // which leaves the copy) is only removed: sending it again would repeat a delivered webhook.
  // (The move task's messages meet the same rule in deliver.ts, which skips delivered records.)
  const delivered = new Set<string>();
  const result = await passOverDeadLetters(deps, async (delivery) => {
    const Item = await deliveryStore(deps).getOne(keys.delivery(delivery.organizationId, delivery.deliveryId));
    const picked = matches({ organizationId: delivery.organizationId, endpointId: delivery.endpointId, createdAt: Item?.createdAt }, filter);
    if (picked && Item?.status === 'delivered') delivered.add(delivery.deliveryId);
    return picked;
  }, (taken) => requeue(deps, taken.filter((m) => !delivered.has(m.deliveryId))), { onProgress, maxMessages: options.maxMessages });
  return { ...result, ...(delivered.size ? { alreadyDelivered: delivered.size } : {}) };
}

/** Deletes the dead-letter copies of these deliveries (they were queued again another way); stops once all are found. */
async function removeDeadLetters(deps: Deps, deliveryIds: Set<string>, maxMessages?: number): Promise<DeadLetterPass | undefined> {
  if (deliveryIds.size === 0) return undefined;
  const left = new Set(deliveryIds);
  return passOverDeadLetters(deps, (delivery) => left.delete(delivery.deliveryId), async () => undefined, { maxMessages, done: () => left.size === 0 });
}

async function deadLetterDepth(deps: Deps): Promise<{ visible: number; inFlight: number }> {
  const { Attributes = {} } = await deps.sqs.send(new GetQueueAttributesCommand({
    QueueUrl: deps.queues.deliveryDlq, AttributeNames: ['ApproximateNumberOfMessages', 'ApproximateNumberOfMessagesNotVisible'],
  }));
  return { visible: Number(Attributes.ApproximateNumberOfMessages ?? 0), inFlight: Number(Attributes.ApproximateNumberOfMessagesNotVisible ?? 0) };
}

/**
 * One pass over the dead-letter queue by receive → act → delete (StartMessageMoveTask cannot
 * filter, and the local emulator lacks it): messages `pick` selects are handed to `take`, then
 * deleted; the others are held (DEAD_LETTER_HOLD_SECONDS) and only their id and receipt handle kept.
 * An empty receive does not mean the end (SQS samples its servers): the pass ends when the queue
 * reports no visible message, when `done()` says so, or at `maxMessages` (then `complete` is false).
 */
async function passOverDeadLetters(
  deps: Deps,
  pick: (delivery: DeliveryMessage) => boolean | Promise<boolean>,
  take: (deliveries: DeliveryMessage[]) => Promise<void>,
  { onProgress, maxMessages = DEAD_LETTER_PASS_MAX, done = () => false }: { onProgress?: (moved: number, seen: number) => void; maxMessages?: number; done?: () => boolean } = {},
): Promise<DeadLetterPass> {
  const start = await deadLetterDepth(deps);
  let moved = 0;
  const seen = new Set<string>();
  /** MessageId → latest receipt handle of the messages left in the queue. */
  const skipped = new Map<string, string>();
  let stopped: 'empty' | 'done' | 'cap' | 'stalled' = 'cap';
  for (let stalls = 0; seen.size < maxMessages;) {
    const { Messages = [] } = await deps.sqs.send(new ReceiveMessageCommand({
      QueueUrl: deps.queues.deliveryDlq, MaxNumberOfMessages: Math.min(10, maxMessages - seen.size), WaitTimeSeconds: 1, VisibilityTimeout: DEAD_LETTER_HOLD_SECONDS,
    }));
    // One met again (held longer than the hold): keep its new handle, do not judge it twice.
    for (const m of Messages) if (skipped.has(m.MessageId!)) skipped.set(m.MessageId!, m.ReceiptHandle!);
    const fresh = Messages.filter((m) => !seen.has(m.MessageId!));
    if (fresh.length === 0) {
      if ((await deadLetterDepth(deps)).visible === 0) {
        stopped = 'empty';
        break;
      }
      if (++stalls >= 5) {
        stopped = 'stalled';
        break;
      }
      continue;
    }
    stalls = 0;
    const taken: { message: Message; delivery: DeliveryMessage }[] = [];
    for (const m of fresh) {
      seen.add(m.MessageId!);
      const delivery = JSON.parse(m.Body ?? '{}') as DeliveryMessage;
      if (await pick(delivery)) taken.push({ message: m, delivery });
      else skipped.set(m.MessageId!, m.ReceiptHandle!);
    }
    await take(taken.map((t) => t.delivery));
    if (taken.length > 0) {
      await deps.sqs.send(new DeleteMessageBatchCommand({ QueueUrl: deps.queues.deliveryDlq, Entries: taken.map((t, i) => ({ Id: String(i), ReceiptHandle: t.message.ReceiptHandle! })) }));
    }
    moved += taken.length;
    onProgress?.(moved, seen.size);
    if (done()) {
      stopped = 'done';
      break;
    }
  }
  const end = await deadLetterDepth(deps);
  const complete = stopped === 'empty' || stopped === 'done' || (stopped === 'cap' && end.visible === 0);
  // A capped pass leaves what it looked at hidden, so the next pass reaches the rest; otherwise release it.
  if (complete) {
    for (const handles of inBatches([...skipped.values()], 10)) {
      await deps.sqs.send(new ChangeMessageVisibilityBatchCommand({
        QueueUrl: deps.queues.deliveryDlq,
        Entries: handles.map((ReceiptHandle, n) => ({ Id: String(n), ReceiptHandle, VisibilityTimeout: 0 })),
      }));
    }
  }
  return { moved, seen: seen.size, total: start.visible + start.inFlight, complete, heldElsewhere: Math.max(0, end.inFlight - skipped.size) };
}
