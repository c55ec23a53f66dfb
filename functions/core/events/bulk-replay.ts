/**
 * Replays the bulk dead-letter queue (docs/deploy.md, alarm `BulkDeadLetters`): each message the
 * bulk fan-out gave up on is checked (readBulkShare) and sent back to the bulk queue, its
 * MessageGroupId its organization as handOff sent it, and deleted from the dead-letter queue only
 * once that send succeeded. The bulk fan-out then records and queues it; whatever an earlier
 * receive already recorded is found and not sent again (bulk-share.ts fanOutBulk).
 */
import { ChangeMessageVisibilityCommand, DeleteMessageCommand, ReceiveMessageCommand, SendMessageCommand } from '@aws-sdk/client-sqs';
import type { Deps } from '../platform/deps.js';
import { logger } from '../platform/observability.js';
import { bulkLogFields, readBulkShare } from './bulk-share.js';

/**
 * `messages` met; `moved` back to the bulk queue (with `dryRun`: would be); `duplicates`: the same
 * body as one moved in this pass, deleted unsent; `failed`: refused or not sent, left in the dead-letter queue.
 */
export interface BulkReplayResult { messages: number; moved: number; duplicates: number; failed: number; dryRun: boolean }

/** Seconds a message is held while it is checked and sent; failures are released at once. */
const HOLD_SECONDS = 60;

export async function replayBulkDeadLetters(deps: Deps, options: { dryRun?: boolean } = {}, onProgress?: (r: BulkReplayResult) => void): Promise<BulkReplayResult> {
  const result: BulkReplayResult = { messages: 0, moved: 0, duplicates: 0, failed: 0, dryRun: options.dryRun === true };
  // A stream batch's retry hands a share off twice; two copies in the bulk fan-out at once would both send (docs/decisions.md "The bulk path").
  const moved = new Set<string>();
  const source = deps.queues.bulkDlq;
  const held: string[] = [];
  const seen = new Set<string>();
  for (let empty = 0; empty < 2;) {
    const { Messages = [] } = await deps.sqs.send(new ReceiveMessageCommand({ QueueUrl: source, MaxNumberOfMessages: 10, WaitTimeSeconds: 1, VisibilityTimeout: HOLD_SECONDS }));
    const fresh = Messages.filter((m) => !seen.has(m.MessageId!));
    empty = fresh.length === 0 ? empty + 1 : 0;
    for (const message of fresh) {
      seen.add(message.MessageId!);
      result.messages++;
      const body = message.Body ?? '';
      const duplicate = moved.has(body);
      let ok = false;
      try {
        const share = readBulkShare(body);
        if (!result.dryRun) {
          if (!duplicate) await deps.sqs.send(new SendMessageCommand({ QueueUrl: deps.queues.bulkQueue, MessageBody: body, MessageGroupId: share.organizationId }));
          await deps.sqs.send(new DeleteMessageCommand({ QueueUrl: source, ReceiptHandle: message.ReceiptHandle! }));
        }
        ok = true;
      } catch (error) {
        logger.error('bulk dead letter not replayed; left in the bulk dead-letter queue', { messageId: message.MessageId, ...bulkLogFields(body), error: error as Error });
      }
      if (!ok) result.failed++;
      else if (duplicate) result.duplicates++;
      else {
        result.moved++;
        moved.add(body);
      }
      // A dry run holds every message until the pass ends (so each is counted once); a failure is released now.
      if (result.dryRun) held.push(message.ReceiptHandle!);
      else if (!ok) await release(deps, [message.ReceiptHandle!]);
      onProgress?.(result);
    }
  }
  await release(deps, held);
  return result;
}

async function release(deps: Deps, receipts: string[]): Promise<void> {
  await Promise.all(receipts.map((ReceiptHandle) =>
    deps.sqs.send(new ChangeMessageVisibilityCommand({ QueueUrl: deps.queues.bulkDlq, ReceiptHandle, VisibilityTimeout: 0 }))));
}
