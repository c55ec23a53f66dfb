/**
 * The mailer's edge: Lambda's SQS batch of the notices queue in, partial batch response out. A
 * message that could not be sent to everyone is reported failed after its visibility is set to the
 * next wait of `noticeRetrySeconds` (by how often it was received), so a mail server that is down
 * is tried again later, less and less often; after noticesMaxReceives receives the queue moves it to
 * the notices dead-letter queue. Each failure counts in `NoticesFailed`.
 */
import type { SQSBatchResponse, SQSRecord } from 'aws-lambda';
import { ChangeMessageVisibilityCommand } from '@aws-sdk/client-sqs';
import { MetricUnit } from '@aws-lambda-powertools/metrics';
import type { Deps } from '../core/platform/deps.js';
import { logger, metrics, withMetrics } from '../core/platform/observability.js';
import { sendQueuedMessage, type MailerOptions } from '../core/notify/mailer.js';
import { parseQueuedMessage } from '../core/notify/notices-queue.js';

/** The wait before the next try of a message received `receives` times. */
export const retryDelaySeconds = (schedule: readonly number[], receives: number) => schedule[Math.min(Math.max(receives, 1), schedule.length) - 1];

export const sendNoticeBatch = withMetrics(async (deps: Deps, records: SQSRecord[], options: MailerOptions): Promise<SQSBatchResponse> => {
  const failed = await Promise.all(records.map(async (record) => {
    try {
      await sendQueuedMessage(deps, parseQueuedMessage(record.body), options);
      return undefined;
    } catch (error) {
      const receives = Number(record.attributes.ApproximateReceiveCount ?? 1);
      logger.warn('notice not sent: tried again later', { messageId: record.messageId, receives, error: (error as Error).message });
      metrics.addMetric('NoticesFailed', MetricUnit.Count, 1);
      const wait = retryDelaySeconds(deps.config.noticeRetrySeconds, receives);
      await deps.sqs.send(new ChangeMessageVisibilityCommand({ QueueUrl: deps.queues.noticesQueue, ReceiptHandle: record.receiptHandle, VisibilityTimeout: wait }))
        .catch((e: Error) => logger.warn('notice: could not set the wait before its next try (the queue\'s own applies)', { error: e.message }));
      return { itemIdentifier: record.messageId };
    }
  }));
  return { batchItemFailures: failed.filter((f) => f !== undefined) };
});
