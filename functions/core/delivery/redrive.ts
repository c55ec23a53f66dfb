/**
 * Re-delivery (DESIGN §11): one delivery by id, the failed deliveries of an organization (or one
 * endpoint) in a time range, or the dead-letter queue. A re-driven delivery is a fresh message, so
 * it gets a fresh attempt count, and it carries the same payload, so the same webhook-id. A
 * delivery whose event was too large to keep is never re-driven (it would go out hollow), and a
 * re-driven delivery's copy in the dead-letter queue is removed, so it cannot be sent twice.
 */
import { GetCommand, QueryCommand, ScanCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import {
  ChangeMessageVisibilityBatchCommand, DeleteMessageBatchCommand, GetQueueAttributesCommand, ReceiveMessageCommand, StartMessageMoveTaskCommand,
  type Message,
} from '@aws-sdk/client-sqs';
import type { Deps } from '../clients.js';
import { conflict, notFound } from '../errors.js';
import { keys, type DeliveryMessage } from '../model.js';
import { sendDeliveryMessages } from '../events/fanout.js';
import { hollowPayloadReason } from './deliver.js';

export interface DeliveryFilter {
  organizationId?: string;
  endpointId?: string;
  /** ISO times bounding the delivery's creation. */
  since?: string;
  until?: string;
}

type Item = Record<string, unknown>;
const toMessage = (item: Item): DeliveryMessage => ({
  deliveryId: item.id as string, organizationId: item.organizationId as string, endpointId: item.endpointId as string, payload: item.payload as DeliveryMessage['payload'],
});
const matches = (item: { organizationId?: unknown; endpointId?: unknown; createdAt?: unknown }, f: DeliveryFilter) =>
  (!f.organizationId || item.organizationId === f.organizationId) &&
  (!f.endpointId || item.endpointId === f.endpointId) &&
  (!f.since || String(item.createdAt) >= f.since) &&
  (!f.until || String(item.createdAt) <= f.until);

async function markRequeued(deps: Deps, message: DeliveryMessage): Promise<void> {
  const now = new Date(deps.now()).toISOString();
  await deps.doc.send(new UpdateCommand({
    TableName: deps.tables.deliveries,
    Key: keys.delivery(message.organizationId, message.deliveryId),
    UpdateExpression: 'SET #s = :p, queuedAt = :now, redrivenAt = :now, updatedAt = :now REMOVE reason, nextAttemptAt',
    ConditionExpression: 'attribute_exists(pk)',
    ExpressionAttributeNames: { '#s': 'status' },
    ExpressionAttributeValues: { ':p': 'pending', ':now': now },
  }));
}

async function requeue(deps: Deps, messages: DeliveryMessage[]): Promise<void> {
  if (messages.length === 0) return;
  await Promise.all(messages.map((m) => markRequeued(deps, m)));
  await sendDeliveryMessages(deps, messages);
}

export async function findDelivery(deps: Deps, deliveryId: string): Promise<Item | undefined> {
  const { Items = [] } = await deps.doc.send(new QueryCommand({
    TableName: deps.tables.deliveries, IndexName: 'gsi1',
    KeyConditionExpression: 'gsi1pk = :pk', ExpressionAttributeValues: { ':pk': keys.deliveryIndex(deliveryId).gsi1pk },
  }));
  if (!Items[0]) return undefined;
  const { Item } = await deps.doc.send(new GetCommand({ TableName: deps.tables.deliveries, Key: { pk: Items[0].pk, sk: Items[0].sk }, ConsistentRead: true }));
  return Item;
}

/**
 * Any delivery by id, whatever its status (a delivered one is sent again: receivers dedupe by
 * webhook-id), except one whose payload was not kept.
 */
export async function redriveDelivery(deps: Deps, deliveryId: string): Promise<DeliveryMessage> {
  const item = await findDelivery(deps, deliveryId);
  if (!item) throw notFound(`No delivery ${deliveryId}.`);
  const hollow = hollowPayloadReason(item);
  if (hollow) throw conflict(`Delivery ${deliveryId} cannot be re-driven: ${hollow}.`);
  const message = toMessage(item);
  await requeue(deps, [message]);
  // Only an exhausted (failed) delivery has a dead-letter copy.
  if (item.status === 'failed') await removeDeadLetters(deps, new Set([message.deliveryId]));
  return message;
}

/** An organization's deliveries, newest first, optionally by status and endpoint and time range. */
export async function listDeliveries(deps: Deps, organizationId: string, options: DeliveryFilter & { status?: string; limit?: number } = {}): Promise<Item[]> {
  const out: Item[] = [];
  let startKey: Record<string, unknown> | undefined;
  const limit = options.limit ?? 50;
  do {
    const page = await deps.doc.send(new QueryCommand({
      TableName: deps.tables.deliveries,
      KeyConditionExpression: 'pk = :pk AND begins_with(sk, :sk)',
      ExpressionAttributeValues: { ':pk': keys.org(organizationId).pk, ':sk': keys.deliveryPrefix },
      ExclusiveStartKey: startKey,
      ConsistentRead: true,
    }));
    for (const item of page.Items ?? []) {
      if ((!options.status || item.status === options.status) && matches(item, { ...options, organizationId })) out.push(item);
    }
    startKey = page.LastEvaluatedKey;
  } while (startKey);
  return out.sort((a, b) => String(b.createdAt).localeCompare(String(a.createdAt))).slice(0, limit);
}

/**
 * Failed deliveries of an organization (optionally one endpoint, a time range) go back to the
 * queue; those whose payload was not kept are left failed and counted in `hollow`. Their copies in
 * the dead-letter queue are then removed.
 */
export async function redriveFailed(
  deps: Deps, filter: DeliveryFilter & { organizationId: string }, onProgress?: (done: number, total: number) => void,
): Promise<{ redriven: number; hollow: number }> {
  const listed = await listDeliveries(deps, filter.organizationId, { ...filter, status: 'failed', limit: Number.MAX_SAFE_INTEGER });
  const failed = listed.filter((item) => !hollowPayloadReason(item));
  for (let i = 0; i < failed.length; i += 10) {
    await requeue(deps, failed.slice(i, i + 10).map(toMessage));
    onProgress?.(Math.min(i + 10, failed.length), failed.length);
  }
  await removeDeadLetters(deps, new Set(failed.map((item) => item.id as string)));
  return { redriven: failed.length, hollow: listed.length - failed.length };
}

/**
 * Moves dead-letter messages back to the delivery queue. Without a filter, on AWS, SQS's own
 * StartMessageMoveTask does it; otherwise (filters, or the local emulator) receive → send → delete,
 * leaving messages that do not match where they are.
 */
export async function redriveDeadLetters(deps: Deps, filter: DeliveryFilter = {}, onProgress?: (moved: number, seen: number) => void): Promise<{ moved: number; task?: string }> {
  const unfiltered = !filter.organizationId && !filter.endpointId && !filter.since && !filter.until;
  if (unfiltered && !deps.settings.local) {
    const arn = async (url: string) => (await deps.sqs.send(new GetQueueAttributesCommand({ QueueUrl: url, AttributeNames: ['QueueArn'] }))).Attributes!.QueueArn!;
    const out = await deps.sqs.send(new StartMessageMoveTaskCommand({ SourceArn: await arn(deps.queues.deliveryDlq), DestinationArn: await arn(deps.queues.deliveryQueue) }));
    return { moved: 0, task: out.TaskHandle };
  }
  return sweepDeadLetters(deps, async (delivery) => {
    const { Item } = await deps.doc.send(new GetCommand({ TableName: deps.tables.deliveries, Key: keys.delivery(delivery.organizationId, delivery.deliveryId) }));
    return matches({ organizationId: delivery.organizationId, endpointId: delivery.endpointId, createdAt: Item?.createdAt }, filter);
  }, (taken) => requeue(deps, taken), onProgress);
}

/** Deletes the dead-letter copies of these deliveries (they were queued again another way). */
async function removeDeadLetters(deps: Deps, deliveryIds: Set<string>): Promise<void> {
  if (deliveryIds.size > 0) await sweepDeadLetters(deps, (delivery) => deliveryIds.has(delivery.deliveryId), async () => undefined);
}

/**
 * One pass over the dead-letter queue by receive → act → delete (StartMessageMoveTask cannot
 * filter, and the local emulator lacks it): messages `pick` selects are handed to `take`, then
 * deleted; the others are made visible again where they are.
 */
async function sweepDeadLetters(
  deps: Deps,
  pick: (delivery: DeliveryMessage) => boolean | Promise<boolean>,
  take: (deliveries: DeliveryMessage[]) => Promise<void>,
  onProgress?: (moved: number, seen: number) => void,
): Promise<{ moved: number }> {
  let moved = 0;
  let seen = 0;
  const skipped: Message[] = [];
  const seenIds = new Set<string>();
  // SQS may answer a receive with nothing while messages remain: stop after two empty long polls.
  for (let empty = 0; empty < 2;) {
    const { Messages = [] } = await deps.sqs.send(new ReceiveMessageCommand({ QueueUrl: deps.queues.deliveryDlq, MaxNumberOfMessages: 10, WaitTimeSeconds: 1, VisibilityTimeout: 60 }));
    const fresh = Messages.filter((m) => !seenIds.has(m.MessageId!));
    if (fresh.length === 0) {
      empty++;
      continue;
    }
    empty = 0;
    const taken: { message: Message; delivery: DeliveryMessage }[] = [];
    for (const m of fresh) {
      seenIds.add(m.MessageId!);
      seen++;
      const delivery = JSON.parse(m.Body ?? '{}') as DeliveryMessage;
      if (await pick(delivery)) taken.push({ message: m, delivery });
      else skipped.push(m);
    }
    await take(taken.map((t) => t.delivery));
    if (taken.length > 0) {
      await deps.sqs.send(new DeleteMessageBatchCommand({ QueueUrl: deps.queues.deliveryDlq, Entries: taken.map((t, i) => ({ Id: String(i), ReceiptHandle: t.message.ReceiptHandle! })) }));
    }
    moved += taken.length;
    onProgress?.(moved, seen);
  }
  // Messages that were not picked go back to being visible in the dead-letter queue.
  for (let i = 0; i < skipped.length; i += 10) {
    await deps.sqs.send(new ChangeMessageVisibilityBatchCommand({
      QueueUrl: deps.queues.deliveryDlq,
      Entries: skipped.slice(i, i + 10).map((m, n) => ({ Id: String(n), ReceiptHandle: m.ReceiptHandle!, VisibilityTimeout: 0 })),
    }));
  }
  return { moved };
}

/** Local stack start: deliveries left pending by the last run (the SQS emulator keeps no messages) are queued again. */
export async function resumePendingDeliveries(deps: Deps): Promise<number> {
  const pending: DeliveryMessage[] = [];
  let startKey: Record<string, unknown> | undefined;
  do {
    const page = await deps.doc.send(new ScanCommand({
      TableName: deps.tables.deliveries, FilterExpression: '#s = :p', ExpressionAttributeNames: { '#s': 'status' }, ExpressionAttributeValues: { ':p': 'pending' }, ExclusiveStartKey: startKey,
    }));
    pending.push(...(page.Items ?? []).filter((i) => i.entity === 'delivery').map(toMessage));
    startKey = page.LastEvaluatedKey;
  } while (startKey);
  await sendDeliveryMessages(deps, pending);
  return pending.length;
}
