/**
 * The queue adapter of the delivery function: Lambda's SQS batch in, partial batch response out. Each record becomes a
 * plain QueuedDelivery; the messages the domain keeps queued (unexpected errors: received again
 * after the visibility timeout) are reported as failures, so SQS does not delete them. Retries,
 * deferrals and exhausted deliveries were sent on as new messages (or parked) first.
 */
import type { SQSBatchResponse, SQSRecord } from 'aws-lambda';
import type { Deps } from '../core/platform/deps.js';
import { deliverBatch, staysQueued, type QueuedDelivery } from '../core/delivery/deliver.js';
import { withMetrics } from '../core/platform/observability.js';
import { laneOf } from '../core/delivery/circuit-store.js';

const queuedDelivery = (deps: Deps, record: SQSRecord): QueuedDelivery => ({
  messageId: record.messageId,
  receiptHandle: record.receiptHandle,
  body: record.body,
  receiveCount: Number(record.attributes.ApproximateReceiveCount ?? 1),
  lane: laneOf(deps, record.eventSourceARN),
});

/** The batch's metrics (attempts, failures, latency) are published when it ends, as every invocation's are. */
export const deliverSqsBatch = withMetrics(async (deps: Deps, records: SQSRecord[]): Promise<SQSBatchResponse> => {
  const outcomes = await deliverBatch(deps, records.map((r) => queuedDelivery(deps, r)));
  return { batchItemFailures: outcomes.filter(staysQueued).map((o) => ({ itemIdentifier: o.messageId })) };
});
