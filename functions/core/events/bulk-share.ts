/**
 * The fan-out's bulk path (docs/capacity.md "Fan-out lanes"). An organization's large share of a
 * stream batch (an import, a nightly sync), and its next shares of 5 events or more for 10 s after
 * (events/fanout.ts `shares`), are not recorded in the lane, at four writes per delivery:
 * the lane hands it to the bulk queue in compact messages (a few SendMessageBatch calls per batch),
 * and the bulk fan-out (functions/bulk-fanout) records and queues each message's deliveries exactly
 * as the lane does (delivery/queue.ts recordDeliveries, queueDeliveries). So the lane keeps pace with
 * any import, and the organizations sharing it do not wait for the import's writes.
 *
 * A message carries the deliveries as planned in the lane: the events, and the endpoints (id and
 * state) the lane read for them, so the bulk fan-out reads no endpoint. A message received twice
 * finds its records and its events' items (the record's BatchGet check) and queues nothing again.
 */
import { SendMessageBatchCommand } from '@aws-sdk/client-sqs';
import type { Deps } from '../platform/deps.js';
import type { EventPayload } from '../platform/model.js';
import { inSqsBatches, sqsMessageBody } from '../platform/batches.js';
import { queueDeliveries, recordDeliveries, type EndpointState, type PlannedDelivery } from '../delivery/queue.js';

/** A bulk message's budget: four fit one SendMessageBatch (256 KiB), far under SQS's message limit. */
export const BULK_MESSAGE_BYTES = 64 * 1024;
/** Events per bulk message at most: one message is one bounded run of the bulk fan-out. */
export const BULK_MESSAGE_EVENTS = 100;
/** Room for the message's own fields and its endpoints. */
const ENVELOPE_BYTES = 4 * 1024;

/** One bulk message: an organization's events in stream order, each with the endpoints (indexes in `endpoints`) it goes to. */
export interface BulkShare {
  organizationId: string;
  endpoints: EndpointState[];
  events: { event: EventPayload; to: number[] }[];
}

const eventBytes = (event: EventPayload) => Buffer.byteLength(sqsMessageBody(event)) + 16;

/** Whether an event fits a bulk message (one that does not stays in the lane, where it is recorded as too big for the queue). */
export const fitsBulkMessage = (event: EventPayload) => eventBytes(event) <= BULK_MESSAGE_BYTES - ENVELOPE_BYTES;

/** One organization's planned deliveries (in order, each event's endpoints together) as bulk messages. */
export function bulkMessages(share: PlannedDelivery[]): BulkShare[] {
  const out: BulkShare[] = [];
  let size = 0;
  for (const { event, endpoint } of share) {
    let current = out.at(-1);
    let entry = current?.events.at(-1)?.event.id === event.id ? current!.events.at(-1) : undefined;
    if (!entry) {
      const bytes = eventBytes(event);
      if (!current || current.events.length >= BULK_MESSAGE_EVENTS || size + bytes > BULK_MESSAGE_BYTES - ENVELOPE_BYTES) {
        current = { organizationId: event.organization_id, endpoints: [], events: [] };
        out.push(current);
        size = 0;
      }
      entry = { event, to: [] };
      current.events.push(entry);
      size += bytes;
    }
    let index = current!.endpoints.findIndex((e) => e.id === endpoint.id);
    if (index < 0) {
      index = current!.endpoints.push({ id: endpoint.id, enabled: endpoint.enabled, ...(endpoint.disabledReason ? { disabledReason: endpoint.disabledReason } : {}) }) - 1;
    }
    entry.to.push(index);
  }
  return out;
}

/** A bulk message's deliveries, as the lane planned them. */
export const plannedOf = (share: BulkShare): PlannedDelivery[] =>
  share.events.flatMap(({ event, to }) => to.map((i) => ({ event, endpoint: share.endpoints[i] })));

/**
 * Hands the shares to the bulk queue. Every message's MessageGroupId is its organization: the bulk
 * queue is fair like the delivery queues, so two importers share the bulk fan-out.
 */
export async function handOff(deps: Deps, shares: PlannedDelivery[][]): Promise<void> {
  const bodies = shares.flatMap(bulkMessages).map((m) => ({ body: sqsMessageBody(m), group: m.organizationId }));
  await Promise.all(inSqsBatches(bodies, (b) => Buffer.byteLength(b.body)).map(async (batch) => {
    const out = await deps.sqs.send(new SendMessageBatchCommand({
      QueueUrl: deps.queues.bulkQueue,
      Entries: batch.map((b, n) => ({ Id: String(n), MessageBody: b.body, MessageGroupId: b.group })),
    }));
    if (out.Failed?.length) throw new Error(`could not hand off ${out.Failed.length} bulk messages: ${out.Failed.map((f) => f.Code).join(', ')}`);
  }));
}

/** A bulk message body as handOff wrote it; anything else is refused (it then reaches the bulk dead-letter queue). */
export function readBulkShare(body: string): BulkShare {
  const share = JSON.parse(body) as Partial<BulkShare>;
  if (typeof share?.organizationId !== 'string' || !Array.isArray(share.endpoints) || !Array.isArray(share.events)
    || !share.events.every((e) => e?.event?.organization_id === share.organizationId && Array.isArray(e.to) && e.to.every((i) => share.endpoints![i] !== undefined))) {
    throw new Error('not a bulk share message');
  }
  return share as BulkShare;
}

/**
 * What a log line about a bulk message names (docs/operations.md "Logs Insights queries"): its
 * organization and its endpoints (`endpointIds`, comma-separated); nothing for a body that is not one.
 */
export function bulkLogFields(body: string): { organizationId?: string; endpointIds?: string } {
  try {
    const share = readBulkShare(body);
    return { organizationId: share.organizationId, endpointIds: share.endpoints.map((e) => e.id).join(',') };
  } catch {
    return {};
  }
}

/** Records and queues a bulk message's deliveries; returns how many were queued (0 for a repeat). */
export async function fanOutBulk(deps: Deps, body: string): Promise<number> {
  const recorded = await recordDeliveries(deps, plannedOf(readBulkShare(body)));
  await queueDeliveries(deps, recorded);
  return recorded.messages.length;
}
