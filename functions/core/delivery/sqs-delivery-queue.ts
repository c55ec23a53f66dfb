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

/** SQS's DelaySeconds maximum. */
export const MAX_QUEUE_DELAY_SECONDS = 900;
/** SendMessageBatch takes at most 10 messages and 256 KiB of bodies (with attributes) in all (BatchRequestTooLong). */
const MAX_BATCH_BYTES = 256 * 1024;

type Entry = { message: DeliveryMessage; delaySeconds: number };

/** Entries in consecutive SendMessageBatch groups: at most 10 each, and within the batch payload limit. */
function sqsBatches(entries: Entry[]): Entry[][] {
  const batches: Entry[][] = [];
  let size = 0;
  for (const e of entries) {
    const bytes = Buffer.byteLength(JSON.stringify(e.message)) + 64; // + the entry's id and delay
    const last = batches.at(-1);
    if (!last || last.length >= 10 || size + bytes > MAX_BATCH_BYTES) {
      batches.push([e]);
      size = bytes;
    } else {
      last.push(e);
      size += bytes;
    }
  }
  return batches;
}

export function sqsDeliveryQueue(deps: Deps): DeliveryQueue {
  return {
    async send(queue, entries) {
      await Promise.all(sqsBatches(entries).map(async (batch) => {
        const out = await deps.sqs.send(new SendMessageBatchCommand({
          QueueUrl: deps.queues[queue],
          Entries: batch.map(({ message, delaySeconds }, n) => {
            const delay = Math.min(MAX_QUEUE_DELAY_SECONDS, Math.max(0, Math.ceil(delaySeconds)));
            return { Id: String(n), MessageBody: JSON.stringify(message), MessageGroupId: message.organizationId, ...(delay > 0 ? { DelaySeconds: delay } : {}) };
          }),
        }));
        if (out.Failed?.length) throw new Error(`could not queue ${out.Failed.length} deliveries: ${out.Failed.map((f) => f.Code).join(', ')}`);
      }));
    },
  };
}
