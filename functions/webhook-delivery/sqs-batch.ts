/**
 * The delivery's edge: Lambda's SQS batch in, partial batch response out. Each record becomes a
 * plain QueuedDelivery; the messages the domain keeps queued (retries, exhausted deliveries on
 * their way to the dead-letter queue, unexpected errors) are reported as failures, so SQS does not
 * delete them.
 */
import type { SQSBatchResponse, SQSRecord } from 'aws-lambda';
import type { Deps } from '../core/platform/deps.js';
import { deliverBatch, staysQueued, type QueuedDelivery } from '../core/delivery/deliver.js';
import { receivedAtOf } from '../core/delivery/schedule.js';
import { withMetrics } from '../core/platform/observability.js';

const queuedDelivery = (record: SQSRecord, batchStartedAt: number): QueuedDelivery => ({
  messageId: record.messageId,
  receiptHandle: record.receiptHandle,
  body: record.body,
  receiveCount: Number(record.attributes.ApproximateReceiveCount ?? 1),
  receivedAt: receivedAtOf(record.attributes, batchStartedAt),
});

/** The batch's metrics (attempts, failures, latency) are published when it ends, as every invocation's are. */
export const deliverSqsBatch = withMetrics(async (deps: Deps, records: SQSRecord[]): Promise<SQSBatchResponse> => {
  const batchStartedAt = deps.now();
  const outcomes = await deliverBatch(deps, records.map((r) => queuedDelivery(r, batchStartedAt)));
  return { batchItemFailures: outcomes.filter(staysQueued).map((o) => ({ itemIdentifier: o.messageId })) };
});
