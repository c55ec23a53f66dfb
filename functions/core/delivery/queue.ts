/**
 * The delivery queue's one producer (DESIGN §3: each queue has one owner). A delivery is recorded
 * once per (event, endpoint), with an id derived from both, so a re-processed stream batch creates
 * nothing twice; then it is queued and marked queued. Fan-out, test events and re-drives all queue
 * through here.
 */
import { createHash } from 'node:crypto';
import { GetCommand, PutCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { ChangeMessageVisibilityCommand, SendMessageBatchCommand } from '@aws-sdk/client-sqs';
import type { Deps } from '../platform/deps.js';
import { inBatches } from '../platform/batches.js';
import { keys, type DeliveryMessage, type DeliveryRecord, type EventPayload, type WebhookEndpoint } from '../platform/model.js';
import { logger } from '../platform/observability.js';

/** SQS takes 256 KiB per message; keep room for attributes and the envelope. */
export const MAX_MESSAGE_BYTES = 240 * 1024;

export const deliveryIdFor = (eventId: string, endpointId: string) =>
  'dlv_' + createHash('sha256').update(`${eventId}|${endpointId}`).digest('base64url').slice(0, 22);

const expiresAt = (deps: Deps) => Math.floor(deps.now() / 1000) + deps.settings.retentionDays * 86_400;

export async function sendDeliveryMessages(deps: Deps, messages: DeliveryMessage[]): Promise<void> {
  await Promise.all(inBatches(messages, 10).map(async (batch) => {
    const out = await deps.sqs.send(new SendMessageBatchCommand({
      QueueUrl: deps.queues.deliveryQueue,
      Entries: batch.map((m, n) => ({ Id: String(n), MessageBody: JSON.stringify(m) })),
    }));
    if (out.Failed?.length) throw new Error(`could not queue ${out.Failed.length} deliveries: ${out.Failed.map((f) => f.Code).join(', ')}`);
  }));
}

/** A message body as sendDeliveryMessages wrote it. */
export const readDeliveryMessage = (body: string): DeliveryMessage => JSON.parse(body) as DeliveryMessage;

/**
 * Hides a received message for `delaySeconds` (0: visible at once), counted by SQS from its
 * receive, so it is handed out again then: how a retry waits on the queue.
 */
export async function retryQueuedLater(deps: Deps, receiptHandle: string, delaySeconds: number): Promise<void> {
  await deps.sqs.send(new ChangeMessageVisibilityCommand({ QueueUrl: deps.queues.deliveryQueue, ReceiptHandle: receiptHandle, VisibilityTimeout: delaySeconds }));
}

/**
 * Records the delivery of `event` to `endpoint` once. Returns the message to queue, or nothing when
 * there is nothing to send (skipped, too big, or already queued by an earlier run).
 */
export async function recordDelivery(deps: Deps, event: EventPayload, endpoint: WebhookEndpoint): Promise<DeliveryMessage | undefined> {
  const id = deliveryIdFor(event.id, endpoint.id);
  const now = new Date(deps.now()).toISOString();
  const message: DeliveryMessage = { deliveryId: id, organizationId: event.organization_id, endpointId: endpoint.id, payload: event };
  const size = Buffer.byteLength(JSON.stringify(message));
  const [status, reason] = !endpoint.enabled
    ? ['skipped', `endpoint disabled${endpoint.disabledReason ? `: ${endpoint.disabledReason}` : ''}`] as const
    : size > MAX_MESSAGE_BYTES ? ['failed', `payload of ${size} bytes exceeds the ${MAX_MESSAGE_BYTES}-byte queue budget`] as const
      : ['pending', undefined] as const;
  const record: DeliveryRecord & Record<string, unknown> = {
    ...keys.delivery(event.organization_id, id), ...keys.deliveryIndex(id), entity: 'delivery',
    id, organizationId: event.organization_id, endpointId: endpoint.id, eventId: event.id, eventType: event.type,
    status, ...(reason ? { reason } : {}), payload: size > MAX_MESSAGE_BYTES ? { ...event, data: { object: {} } } : event, ...(size > MAX_MESSAGE_BYTES ? { payloadOmitted: true } : {}), // never sent: see deliver.ts hollowPayloadReason
    attempts: [], createdAt: now, updatedAt: now, expiresAt: expiresAt(deps),
  };
  try {
    await deps.doc.send(new PutCommand({ TableName: deps.tables.deliveries, Item: record, ConditionExpression: 'attribute_not_exists(pk)' }));
  } catch (error) {
    if ((error as Error).name !== 'ConditionalCheckFailedException') throw error;
    // Written by an earlier run of this batch: queue it only if that run died before queuing.
    const { Item } = await deps.doc.send(new GetCommand({ TableName: deps.tables.deliveries, Key: keys.delivery(event.organization_id, id), ConsistentRead: true }));
    return Item?.status === 'pending' && !Item.queuedAt ? message : undefined;
  }
  if (size > MAX_MESSAGE_BYTES) logger.warn('delivery payload too large', { deliveryId: id, eventType: event.type, size });
  return status === 'pending' ? message : undefined;
}

export async function markQueued(deps: Deps, messages: DeliveryMessage[]): Promise<void> {
  const at = new Date(deps.now()).toISOString();
  await Promise.all(messages.map((m) => deps.doc.send(new UpdateCommand({
    TableName: deps.tables.deliveries,
    Key: keys.delivery(m.organizationId, m.deliveryId),
    UpdateExpression: 'SET queuedAt = :at',
    ExpressionAttributeValues: { ':at': at },
  }))));
}

/** Sends the messages and marks their records queued (a record left unmarked is queued again on a re-run). */
export async function queueDeliveries(deps: Deps, messages: DeliveryMessage[]): Promise<void> {
  await sendDeliveryMessages(deps, messages);
  await markQueued(deps, messages);
}
