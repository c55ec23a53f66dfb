/**
 * The delivery queues on SQS, as the delivery stage's queue port (delivery-state.ts DeliveryQueue):
 * SendMessageBatch calls of up to 10 messages within its payload limit, in parallel. Every message
 * names its organization as its MessageGroupId: the delivery queues are standard queues, which SQS
 * makes fair by that id (a tenant holding a disproportionate share of the messages in flight, or
 * of the processing time, is served after the others: docs/decisions.md "Fair delivery queues").
 * The local stack's SQS emulator plays the same rule (lib/local/sqs-fair.ts).
 */
import { SendMessageBatchCommand } from '@aws-sdk/client-sqs';
import type { Deps } from '../platform/deps.js';
import type { DeliveryMessage } from '../platform/model.js';
import type { DeliveryQueue } from './delivery-state.js';
import { inSqsBatches, sqsMessageBody } from '../platform/batches.js';

/** SQS's DelaySeconds maximum. */
export const MAX_QUEUE_DELAY_SECONDS = 900;
type Entry = { message: DeliveryMessage; delaySeconds: number };

export function sqsDeliveryQueue(deps: Deps): DeliveryQueue {
  return {
    async send(queue, entries) {
      await Promise.all(inSqsBatches(entries, (e: Entry) => Buffer.byteLength(sqsMessageBody(e.message))).map(async (batch) => {
        const out = await deps.sqs.send(new SendMessageBatchCommand({
          QueueUrl: deps.queues[queue],
          Entries: batch.map(({ message, delaySeconds }, n) => {
            const delay = Math.min(MAX_QUEUE_DELAY_SECONDS, Math.max(0, Math.ceil(delaySeconds)));
            return { Id: String(n), MessageBody: sqsMessageBody(message), MessageGroupId: message.organizationId, ...(delay > 0 ? { DelaySeconds: delay } : {}) };
          }),
        }));
        if (out.Failed?.length) throw new Error(`could not queue ${out.Failed.length} deliveries: ${out.Failed.map((f) => f.Code).join(', ')}`);
      }));
    },
  };
}
