/**
 * Mail feedback queue (SES bounce and complaint events, via EventBridge) → suppressed recipients
 * (functions/core/notify/mail-feedback.ts). A message that cannot be recorded is received again,
 * then rests in the mail feedback dead-letter queue.
 */
import type { SQSEvent, SQSBatchResponse } from 'aws-lambda';
import { lambdaDeps } from '../core/platform/deps.js';
import { logger } from '../core/platform/observability.js';
import { recordMailFeedback } from '../core/notify/mail-feedback.js';
import { instrumented } from '../adapters/instrumentation.js';

export const handler = instrumented(async (event: SQSEvent): Promise<SQSBatchResponse> => {
  const deps = await lambdaDeps();
  const failed = await Promise.all(event.Records.map(async (record) => {
    try {
      await recordMailFeedback(deps, record.body);
      return undefined;
    } catch (error) {
      logger.error('mail feedback not recorded', { messageId: record.messageId, error: error as Error });
      return { itemIdentifier: record.messageId };
    }
  }));
  return { batchItemFailures: failed.filter((f) => f !== undefined) };
});
