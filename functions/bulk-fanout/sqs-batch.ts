/**
 * The bulk fan-out's edge: Lambda's SQS batch in, partial batch response out. A message whose
 * deliveries could not all be recorded and queued is reported failed and received again (a repeat
 * creates nothing twice); after the queue's maxReceiveCount it moves to the bulk dead-letter queue.
 * Each failure counts in `BulkSharesFailed` (docs/deploy.md "Alarms").
 */
import type { SQSBatchResponse, SQSRecord } from 'aws-lambda';
import type { Deps } from '../core/platform/deps.js';
import { bulkLogFields, fanOutBulk } from '../core/events/bulk-share.js';
import { MetricUnit } from '@aws-lambda-powertools/metrics';
import { logger, metrics, withMetrics } from '../core/platform/observability.js';

export const fanOutBulkBatch = withMetrics(async (deps: Deps, records: SQSRecord[]): Promise<SQSBatchResponse> => {
  const failed = await Promise.all(records.map(async (record) => {
    try {
      await fanOutBulk(deps, record.body);
      return undefined;
    } catch (error) {
      logger.error('bulk share not recorded', { messageId: record.messageId, ...bulkLogFields(record.body), error: error as Error });
      // A partial batch response is a successful invocation: the function's Errors never see this (BulkSharesFailed alarm).
      metrics.addMetric('BulkSharesFailed', MetricUnit.Count, 1);
      return { itemIdentifier: record.messageId };
    }
  }));
  return { batchItemFailures: failed.filter((f) => f !== undefined) };
});
