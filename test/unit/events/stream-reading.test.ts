/**
 * Reading DynamoDB Streams the way AWS answers: `GetRecords` may return empty pages before the end
 * of an open shard, which DynamoDB Local never does, so the pages are injected with
 * aws-sdk-client-mock. Neither the replay of failed batches nor the local stream poller may take an
 * empty page for the end.
 */
import { describe, it, expect, afterEach } from '@jest/globals';
import { DynamoDBStreamsClient, DescribeStreamCommand, GetRecordsCommand, GetShardIteratorCommand, type _Record } from '@aws-sdk/client-dynamodb-streams';
import { mockClient } from 'aws-sdk-client-mock';
import type { DynamoDBRecord } from 'aws-lambda';
import { readRange, type StreamBatchInfo } from '../../../functions/core/events/replay.js';
import { StreamPoller } from '../../../lib/local/stream-poller.js';

const streamArn = 'arn:aws:dynamodb:us-east-1:123456789012:table/crm-prod-clients/stream/2026-11-01T00:00:00.000';
const seq = (n: number) => String(1_000_000_000_000_000_000n + BigInt(n));
const record = (n: number): _Record => ({ eventID: `e${n}`, eventName: 'INSERT', dynamodb: { SequenceNumber: seq(n), Keys: { pk: { S: 'ORG#org_1' }, sk: { S: `CLIENT#${n}` } } } });

/** A shard served page by page: iterator `it-i` reads `pages[i]`; after the last page the shard is closed (no next iterator) or stays open (that page again). */
function shard(pages: _Record[][], { closed = false } = {}) {
  const streams = new DynamoDBStreamsClient({ region: 'us-east-1' });
  const mock = mockClient(streams);
  mock.on(GetShardIteratorCommand).resolves({ ShardIterator: 'it-0' });
  mock.on(GetRecordsCommand).callsFake(({ ShardIterator }: { ShardIterator: string }) => {
    const at = Number(ShardIterator.slice(3));
    const last = at >= pages.length - 1;
    return { Records: pages[Math.min(at, pages.length - 1)], NextShardIterator: last && closed ? undefined : `it-${Math.min(at + 1, pages.length - 1)}` };
  });
  return { streams, mock };
}

const batch = (first: number, last: number): StreamBatchInfo => ({ shardId: 'shardId-1', startSequenceNumber: seq(first), endSequenceNumber: seq(last), streamArn });

describe('replaying a failed batch', () => {
  it('reads past empty pages until the batch’s last sequence number', async () => {
    const { streams } = shard([[], [record(1)], [], [], [record(2), record(3)], [], [record(4), record(5)]]);
    const { records, complete } = await readRange(streams, batch(1, 4), { emptyPauseMs: 0 });
    expect(records.map((r) => r.eventID)).toEqual(['e1', 'e2', 'e3', 'e4']);
    expect(complete).toBe(true);
  });

  it('stops at the end of a closed shard', async () => {
    const { streams } = shard([[record(1)], []], { closed: true });
    expect(await readRange(streams, batch(1, 9), { emptyPauseMs: 0 })).toEqual({ records: [record(1)], complete: true });
  });

  it('pauses at least 1 s after an empty page and backs off, leaving the shard’s GetRecords budget to the live reader', async () => {
    const { streams } = shard([[record(1)], [], [], [], [], [record(2)]]);
    const pauses: number[] = [];
    const { records } = await readRange(streams, batch(1, 2), { sleep: async (ms) => { pauses.push(ms); } });
    expect(records.map((r) => r.eventID)).toEqual(['e1', 'e2']);
    expect(pauses).toEqual([1_000, 2_000, 4_000, 8_000]);
  });

  it('gives up after a bounded number of empty pages in a row, and says the read is incomplete', async () => {
    const { streams, mock } = shard([[record(1)], []]);
    expect(await readRange(streams, batch(1, 9), { maxEmptyPages: 5, emptyPauseMs: 0 })).toEqual({ records: [record(1)], complete: false });
    expect(mock.commandCalls(GetRecordsCommand)).toHaveLength(6);
  });
});

describe('the local stream poller', () => {
  let poller: StreamPoller | undefined;
  afterEach(async () => {
    await poller?.stop();
  });

  it('keeps polling with its iterator past empty pages, and delivers every record', async () => {
    const { streams, mock } = shard([[], [record(1)], [], [], [record(2), record(3)], []]);
    mock.on(DescribeStreamCommand).resolves({ StreamDescription: { Shards: [{ ShardId: 'shardId-1' }] } });
    const seen: DynamoDBRecord[] = [];
    poller = new StreamPoller({ streams, streamArn, handler: async (event) => void seen.push(...event.Records), batchSize: 100, maxRetries: 1, bisectOnError: false, idleDelayMs: 1 });
    poller.start();
    const deadline = Date.now() + 5_000;
    while (seen.length < 3 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
    expect(seen.map((r) => r.eventID)).toEqual(['e1', 'e2', 'e3']);
  });
});
