/**
 * Reading DynamoDB Streams back (the events stage's store of what the streams hold): the records of
 * one shard between two sequence numbers, for the replay of failed fan-out batches (replay.ts). The
 * only module of the domain that talks to the Streams API.
 */
import { GetRecordsCommand, GetShardIteratorCommand, type DynamoDBStreamsClient, type _Record } from '@aws-sdk/client-dynamodb-streams';
import { backoffMs, BACKOFFS, sleep } from '../platform/retry.js';

export type { DynamoDBStreamsClient, _Record as StreamRecord };

/** The part of Lambda's on-failure record for stream sources that locates the batch. */
export interface StreamBatchInfo { shardId: string; startSequenceNumber: string; endSequenceNumber: string; streamArn: string }

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
