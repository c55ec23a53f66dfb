/**
 * Replays stream batches the fan-out gave up on. After its retries, the event source parks a
 * description of the batch (shard, first and last sequence number) in the fan-out failure queue;
 * this reads those records back from the stream (kept 24 h) and runs the fan-out on them again.
 * Event and delivery ids are derived from the records, so whatever the first runs already
 * delivered is not delivered twice.
 */
import { readRange, type DynamoDBStreamsClient, type ReadOptions, type StreamBatchInfo } from './stream-store.js';
import { ChangeMessageVisibilityCommand, DeleteMessageCommand, ReceiveMessageCommand } from '@aws-sdk/client-sqs';
import type { Deps } from '../platform/deps.js';
import { logger } from '../platform/observability.js';
import { fanOut } from './fanout.js';
import { changeFromStreamsApi } from './stream-changes.js';

/** `trimmed`: batches older than the stream's 24 h (also counted in `failed`); they stay queued for inspection. */
export { readRange, type ReadOptions, type StreamBatchInfo } from './stream-store.js';

export interface ReplayResult { batches: number; records: number; failed: number; trimmed: number }

/** Drains the fan-out failure queue; batches that fail again stay there for a later run. */
export async function replayFanoutFailures(deps: Deps, streams: DynamoDBStreamsClient, onProgress?: (r: ReplayResult) => void, readOptions?: ReadOptions): Promise<ReplayResult> {
  const result: ReplayResult = { batches: 0, records: 0, failed: 0, trimmed: 0 };
  const seen = new Set<string>();
  for (let empty = 0; empty < 2;) {
    const { Messages = [] } = await deps.sqs.send(new ReceiveMessageCommand({ QueueUrl: deps.queues.fanoutFailures, MaxNumberOfMessages: 10, WaitTimeSeconds: 1, VisibilityTimeout: 120 }));
    const fresh = Messages.filter((m) => !seen.has(m.MessageId!));
    if (fresh.length === 0) {
      empty++;
      continue;
    }
    empty = 0;
    for (const message of fresh) {
      seen.add(message.MessageId!);
      const info = (JSON.parse(message.Body ?? '{}') as { DDBStreamBatchInfo?: StreamBatchInfo }).DDBStreamBatchInfo;
      let ok = false;
      try {
        if (info) {
          const range = await readRange(streams, info, readOptions);
          const changes = range.records.map((r) => changeFromStreamsApi(r, info.streamArn));
          const { failedFrom } = await fanOut(deps, changes);
          // What was read is fanned out (idempotent); an unfinished read keeps the batch for a later run.
          ok = range.complete && failedFrom === undefined;
          result.records += changes.length;
        }
      } catch (error) {
        // Past the stream's 24 h: this batch cannot be read any more, the others still can.
        if ((error as Error).name !== 'TrimmedDataAccessException') throw error;
        result.trimmed++;
        logger.error('fan-out batch older than the stream retention; left in the failure queue', { shardId: info?.shardId, startSequenceNumber: info?.startSequenceNumber, endSequenceNumber: info?.endSequenceNumber });
      }
      result.batches++;
      if (ok) {
        await deps.sqs.send(new DeleteMessageCommand({ QueueUrl: deps.queues.fanoutFailures, ReceiptHandle: message.ReceiptHandle! }));
      } else {
        result.failed++;
        await deps.sqs.send(new ChangeMessageVisibilityCommand({ QueueUrl: deps.queues.fanoutFailures, ReceiptHandle: message.ReceiptHandle!, VisibilityTimeout: 0 }));
      }
      onProgress?.(result);
    }
  }
  return result;
}
