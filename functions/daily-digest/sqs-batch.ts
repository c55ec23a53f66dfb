/**
 * The digest queue's edge: Lambda's SQS batch in (one organization's digest of one day per
 * message, functions/core/settings/digest-queue.ts), partial batch response out. A digest that
 * cannot be made is received again, then rests in the digest dead-letter queue.
 */
import type { SQSBatchResponse, SQSRecord } from 'aws-lambda';
import type { Deps } from '../core/platform/deps.js';
import { logger } from '../core/platform/observability.js';
import { digestJob } from '../core/settings/daily-digest.js';
import { parseDigestJob } from '../core/settings/digest-queue.js';

export async function digestBatch(deps: Deps, records: SQSRecord[]): Promise<SQSBatchResponse> {
  const failed = await Promise.all(records.map(async (record) => {
    try {
      await digestJob(deps, parseDigestJob(record.body));
      return undefined;
    } catch (error) {
      logger.error('digest not made: tried again later', { messageId: record.messageId, error: error as Error });
      return { itemIdentifier: record.messageId };
    }
  }));
  return { batchItemFailures: failed.filter((f) => f !== undefined) };
}
