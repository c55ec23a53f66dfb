/**
 * Fan-out (DESIGN §10, §11): stream records → events → one delivery per subscribed endpoint of the
 * event's organization. Each delivery has an id derived from (event id, endpoint id) and is written
 * with a conditional put, so a re-processed batch creates nothing twice; it is then queued. Events
 * for a disabled endpoint are recorded as skipped; payloads too big for the queue are recorded as
 * failed with the reason, never retried in a loop.
 */
import { createHash } from 'node:crypto';
import { GetCommand, PutCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { SendMessageBatchCommand } from '@aws-sdk/client-sqs';
import type { DynamoDBRecord, DynamoDBBatchResponse } from 'aws-lambda';
import type { Deps } from '../clients.js';
import { keys, type DeliveryMessage, type DeliveryRecord, type EventPayload, type WebhookEndpoint } from '../model.js';
import { MetricUnit } from '@aws-lambda-powertools/metrics';
import { currentEndpoints } from '../endpoints.js';
import { logger, metrics } from '../observability.js';
import { derive } from './derive.js';
import { isSubscribed } from './catalog.js';

/** SQS takes 256 KiB per message; keep room for attributes and the envelope. */
export const MAX_MESSAGE_BYTES = 240 * 1024;

export const deliveryIdFor = (eventId: string, endpointId: string) =>
  'dlv_' + createHash('sha256').update(`${eventId}|${endpointId}`).digest('base64url').slice(0, 22);

const expiresAt = (deps: Deps) => Math.floor(deps.now() / 1000) + deps.settings.retentionDays * 86_400;

export async function sendDeliveryMessages(deps: Deps, messages: DeliveryMessage[]): Promise<void> {
  const batches: DeliveryMessage[][] = [];
  for (let i = 0; i < messages.length; i += 10) batches.push(messages.slice(i, i + 10));
  await Promise.all(batches.map(async (batch) => {
    const out = await deps.sqs.send(new SendMessageBatchCommand({
      QueueUrl: deps.queues.deliveryQueue,
      Entries: batch.map((m, n) => ({ Id: String(n), MessageBody: JSON.stringify(m) })),
    }));
    if (out.Failed?.length) throw new Error(`could not queue ${out.Failed.length} deliveries: ${out.Failed.map((f) => f.Code).join(', ')}`);
  }));
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

/** Queues the deliveries of one event to those of `endpoints` subscribed to it. */
export async function fanOutEvent(deps: Deps, event: EventPayload, endpoints: WebhookEndpoint[]): Promise<DeliveryMessage[]> {
  const subscribed = endpoints.filter((e) => isSubscribed(e.events, event.type));
  const messages = (await Promise.all(subscribed.map((e) => recordDelivery(deps, event, e)))).filter((m): m is DeliveryMessage => !!m);
  if (messages.length > 0) {
    await sendDeliveryMessages(deps, messages);
    await markQueued(deps, messages);
  }
  return messages;
}

/** A record whose organization_id disagrees with its key is dropped: logged (ids only) and counted for the alarm. */
function reportTenantMismatch(record: DynamoDBRecord, organizationId: string | undefined): void {
  logger.warn('stream record dropped: its organization_id disagrees with its partition key', {
    keyOrganizationId: organizationId, sequenceNumber: record.dynamodb?.SequenceNumber, eventName: record.eventName, eventSourceARN: record.eventSourceARN,
  });
  metrics.addMetric('TenantMismatch', MetricUnit.Count, 1);
}

/**
 * The stream handler's work. Events of the whole batch are recorded in parallel (each delivery is
 * idempotent, and receivers get no ordering guarantee anyway), then queued in batches of 10. If
 * anything fails, the first record whose work did not complete is reported, so the event source
 * retries from there; what was done before it is not redone, and redoing the rest creates nothing
 * twice.
 */
export async function fanOut(deps: Deps, records: DynamoDBRecord[]): Promise<DynamoDBBatchResponse> {
  let mismatches = 0;
  const work = records.map((record) => {
    const { events, tenantMismatch } = derive(record);
    if (tenantMismatch) {
      mismatches++;
      reportTenantMismatch(record, tenantMismatch.organizationId);
    }
    return { record, events, ok: true };
  });
  if (mismatches > 0) metrics.publishStoredMetrics();
  // Each organization's endpoints are read fresh, once per batch (never from a cache): an endpoint
  // added before a change was written hears of it, however recently it was added.
  const endpointsByOrg = new Map<string, Promise<WebhookEndpoint[]>>();
  const endpointsOf = (organizationId: string) => {
    if (!endpointsByOrg.has(organizationId)) endpointsByOrg.set(organizationId, currentEndpoints(deps, organizationId));
    return endpointsByOrg.get(organizationId)!;
  };
  await Promise.all(work.map(async (item) => {
    try {
      const messages: DeliveryMessage[] = [];
      for (const event of item.events) {
        const endpoints = (await endpointsOf(event.organization_id)).filter((e) => isSubscribed(e.events, event.type));
        for (const m of await Promise.all(endpoints.map((e) => recordDelivery(deps, event, e)))) if (m) messages.push(m);
      }
      (item as { messages?: DeliveryMessage[] }).messages = messages;
    } catch (error) {
      item.ok = false;
      logger.error('fan-out failed', { sequenceNumber: item.record.dynamodb?.SequenceNumber, error: error as Error });
    }
  }));
  // Queue what the records before the first failure produced (records after it will be redone).
  const firstFailed = work.findIndex((w) => !w.ok);
  const done = firstFailed === -1 ? work : work.slice(0, firstFailed);
  const messages = done.flatMap((w) => (w as { messages?: DeliveryMessage[] }).messages ?? []);
  try {
    await sendDeliveryMessages(deps, messages);
    await markQueued(deps, messages);
  } catch (error) {
    logger.error('queuing deliveries failed', { error: error as Error });
    return { batchItemFailures: records[0] ? [{ itemIdentifier: records[0].dynamodb!.SequenceNumber! }] : [] };
  }
  return { batchItemFailures: firstFailed === -1 ? [] : [{ itemIdentifier: records[firstFailed].dynamodb!.SequenceNumber! }] };
}
