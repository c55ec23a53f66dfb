/**
 * The mailer's edge: Lambda's SQS batch of the notices queue in, partial batch response out. A
 * message that could not be sent to everyone is reported failed after its visibility is set to the
 * next wait of `noticeRetrySeconds` (by how often it was received), so a mail server that is down
 * is tried again later, less and less often; after noticesMaxReceives receives the queue moves it to
 * the notices dead-letter queue. Each failure counts in `NoticesFailed`. The batch stops sending
 * a margin before the Lambda's time is up (`remainingMs`): a hung mail server must not time the
 * function out, which would lose every record's backoff (they would come back after the queue's
 * own visibility timeout, without counting down to the dead-letter queue at the intended pace).
 */
import type { SQSBatchResponse, SQSRecord } from 'aws-lambda';
import { ChangeMessageVisibilityCommand } from '@aws-sdk/client-sqs';
import { MetricUnit } from '@aws-lambda-powertools/metrics';
import type { Deps } from '../core/platform/deps.js';
import { logger, metrics, withMetrics } from '../core/platform/observability.js';
import { errorCode, NoticeNotSent, sendQueuedMessage, type MailerOptions } from '../core/notify/mailer.js';
import { parseQueuedMessage } from '../core/notify/notices-queue.js';

/** The wait before the next try of a message received `receives` times. */
export const retryDelaySeconds = (schedule: readonly number[], receives: number) => schedule[Math.min(Math.max(receives, 1), schedule.length) - 1];

/** Time kept back from the sends for giving the failed records their waits (ChangeMessageVisibility), at most. */
export const BATCH_MARGIN_MS = 5_000;

export interface BatchOptions extends Omit<MailerOptions, 'deadline'> {
  /** The invocation's time left (the adapter's context.getRemainingTimeInMillis). */
  remainingMs?: () => number;
}

export const sendNoticeBatch = withMetrics(async (deps: Deps, records: SQSRecord[], options: BatchOptions): Promise<SQSBatchResponse> => {
  const remaining = options.remainingMs?.();
  // A fifth of the time at most (a short-lived test invocation still sends).
  const deadline = remaining === undefined ? undefined : deps.now() + remaining - Math.min(BATCH_MARGIN_MS, remaining / 5);
  const failed = await Promise.all(records.map(async (record) => {
    try {
      await sendQueuedMessage(deps, parseQueuedMessage(record.body), { ...options, deadline });
      return undefined;
    } catch (error) {
      const receives = Number(record.attributes.ApproximateReceiveCount ?? 1);
      // NoticeNotSent's text holds error codes alone; any other error's text may quote an address: its code only.
      logger.warn('notice not sent: tried again later', { messageId: record.messageId, receives, error: error instanceof NoticeNotSent ? error.message : errorCode(error) });
      metrics.addMetric('NoticesFailed', MetricUnit.Count, 1);
      const wait = retryDelaySeconds(deps.config.noticeRetrySeconds, receives);
      await deps.sqs.send(new ChangeMessageVisibilityCommand({ QueueUrl: deps.queues.noticesQueue, ReceiptHandle: record.receiptHandle, VisibilityTimeout: wait }))
        .catch((e: unknown) => logger.warn('notice: could not set the wait before its next try (the queue\'s own applies)', { error: errorCode(e) }));
      return { itemIdentifier: record.messageId };
    }
  }));
  return { batchItemFailures: failed.filter((f) => f !== undefined) };
});
