/**
 * Replays stream batches the fan-out gave up on. After its retries, the event source parks a
 * description of the batch (shard, first and last sequence number) in the fan-out failure queue;
 * this reads those records back from the stream (kept 24 h) and runs the fan-out on them again.
 * Event and delivery ids are derived from the records, so whatever the first runs already
 * delivered is not delivered twice.
 */
import { DynamoDBStreamsClient, GetRecordsCommand, GetShardIteratorCommand, type _Record } from '@aws-sdk/client-dynamodb-streams';
import { ChangeMessageVisibilityCommand, DeleteMessageCommand, ReceiveMessageCommand } from '@aws-sdk/client-sqs';
import type { Deps } from '../platform/deps.js';
import { logger } from '../platform/observability.js';
import { backoffMs, BACKOFFS, sleep } from '../platform/retry.js';
import { fanOut } from './fanout.js';
import { changeFromStreamsApi } from './stream-changes.js';

/** The part of Lambda's on-failure record for stream sources that locates the batch. */
export interface StreamBatchInfo { shardId: string; startSequenceNumber: string; endSequenceNumber: string; streamArn: string }

/** `trimmed`: batches older than the stream's 24 h (also counted in `failed`); they stay queued for inspection. */
export interface ReplayResult { batches: number; records: number; failed: number; trimmed: number }

export interface ReadOptions {
  /** Consecutive empty pages tolerated before giving up on reaching the batch's end. */
  maxEmptyPages?: number;
  /**
   * First pause after an empty page, doubled at each further empty page up to 8 s. GetRecords
   * allows 5 calls/s per shard, shared with the live event source mapping: replay stays at ≤ 1/s.
   */
  emptyPauseMs?: number;
  /** Injected by tests. */
  sleep?: (ms: number) => Promise<void>;
}


/**
 * Stream records of one shard from `start` to `end` inclusive. DynamoDB Streams may answer an
 * empty page before the end of an open shard, so an empty page only means "read on": reading
 * stops past `end` or at the end of a closed shard (no next iterator). `complete` is false when
 * `maxEmptyPages` empty pages in a row came first, so the caller keeps the batch for a later run
 * instead of dropping its rest.
 */
export async function readRange(streams: DynamoDBStreamsClient, info: StreamBatchInfo, options: ReadOptions = {}): Promise<{ records: _Record[]; complete: boolean }> {
  const { maxEmptyPages = 20, emptyPauseMs = BACKOFFS.replayEmptyPage.baseMs, sleep: pause = sleep } = options;
  const end = BigInt(info.endSequenceNumber);
  let { ShardIterator: iterator } = await streams.send(new GetShardIteratorCommand({
    StreamArn: info.streamArn, ShardId: info.shardId, ShardIteratorType: 'AT_SEQUENCE_NUMBER', SequenceNumber: info.startSequenceNumber,
  }));
  const records: _Record[] = [];
  for (let empty = 0; iterator;) {
    const page = await streams.send(new GetRecordsCommand({ ShardIterator: iterator, Limit: 1000 }));
    for (const r of page.Records ?? []) {
      if (BigInt(r.dynamodb!.SequenceNumber!) > end) return { records, complete: true };
      records.push(r);
      if (BigInt(r.dynamodb!.SequenceNumber!) === end) return { records, complete: true };
    }
    if ((page.Records ?? []).length > 0) empty = 0;
    else if (++empty >= maxEmptyPages) return { records, complete: false };
    else if (emptyPauseMs > 0) await pause(backoffMs(empty - 1, { ...BACKOFFS.replayEmptyPage, baseMs: emptyPauseMs }));
    iterator = page.NextShardIterator;
  }
  return { records, complete: true }; // a closed shard, read to its end
}

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
