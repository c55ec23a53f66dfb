/**
 * Lambda's event filtering, played locally: the delivery statistics' stream source (lib/topology.ts)
 * hands the function delivery records' inserts and changes only, and the local poller skips the rest
 * before invoking, moving its checkpoint past them, as the deployed mapping's FilterCriteria does.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, it, expect, afterEach } from '@jest/globals';
import { DynamoDBStreamsClient, DescribeStreamCommand, GetRecordsCommand, GetShardIteratorCommand, type _Record } from '@aws-sdk/client-dynamodb-streams';
import { mockClient } from 'aws-sdk-client-mock';
import type { DynamoDBRecord } from 'aws-lambda';
import { functions, type FilterPattern } from '../../../lib/topology.js';
import { matchesFilter } from '../../../lib/local/stream-filter.js';
import { StreamPoller, toLambdaRecord } from '../../../lib/local/stream-poller.js';

const streamArn = 'arn:aws:dynamodb:us-east-1:123456789012:table/crm-prod-deliveries/stream/2026-11-01T00:00:00.000';
const [source] = functions.deliveryStatistics.events;
const filter = source.filter as FilterPattern;
const seq = (n: number) => String(1_000_000_000_000_000_000n + BigInt(n));
const record = (n: number, eventName: string, sk: string): _Record => ({
  eventID: `e${n}`, eventName: eventName as never, dynamodb: { SequenceNumber: seq(n), Keys: { pk: { S: 'ORG#org_1' }, sk: { S: sk } } },
});
/** One of each: what the statistics count, and what they must never be handed. */
const records = [
  record(1, 'INSERT', 'DELIVERY#d1'),
  record(2, 'INSERT', 'EVENT#ev1'),
  record(3, 'MODIFY', 'DELIVERY#d1'),
  record(4, 'MODIFY', 'STATS#ep1#2026-11-29T01'),
  record(5, 'REMOVE', 'DELIVERY#d0'),
  // DynamoDB Local's TTL deletes (REMOVE on AWS).
  record(6, 'UNKNOWN_TO_SDK_VERSION', 'DELIVERY#d0'),
  record(7, 'INSERT', 'DELIVERY#d2'),
];

describe('the statistics stream filter', () => {
  it('passes delivery records\' inserts and changes only', () => {
    const passed = records.filter((r) => matchesFilter(filter, toLambdaRecord(r, streamArn))).map((r) => r.eventID);
    expect(passed).toEqual(['e1', 'e3', 'e7']);
  });

  it('needs every field of the pattern: a record without keys, or a key of another type, does not match', () => {
    expect(matchesFilter(filter, { eventName: 'INSERT' })).toBe(false);
    expect(matchesFilter(filter, { eventName: 'INSERT', dynamodb: { Keys: { sk: { N: '1' } } } })).toBe(false);
    expect(matchesFilter(filter, { eventName: 'INSERT', dynamodb: { Keys: { sk: { S: 'delivery#d1' } } } })).toBe(false);
  });
});

describe('the local stream poller with a filter', () => {
  let poller: StreamPoller | undefined;
  const dir = mkdtempSync(path.join(tmpdir(), 'crm-filter-'));
  afterEach(async () => {
    await poller?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('invokes the function with the matching records alone, and checkpoints past the skipped ones', async () => {
    const streams = new DynamoDBStreamsClient({ region: 'us-east-1' });
    const mock = mockClient(streams);
    mock.on(DescribeStreamCommand).resolves({ StreamDescription: { Shards: [{ ShardId: 'shardId-1' }] } });
    mock.on(GetShardIteratorCommand).resolves({ ShardIterator: 'it-0' });
    mock.on(GetRecordsCommand).callsFake(({ ShardIterator }: { ShardIterator: string }) =>
      (ShardIterator === 'it-0' ? { Records: records, NextShardIterator: 'it-1' } : { Records: [], NextShardIterator: 'it-1' }));
    const seen: DynamoDBRecord[] = [];
    const checkpointFile = path.join(dir, 'checkpoint.json');
    poller = new StreamPoller({
      streams, streamArn, handler: async (event) => void seen.push(...event.Records), batchSize: 100, maxRetries: 1, bisectOnError: false, idleDelayMs: 1,
      filter, checkpointFile,
    });
    poller.start();
    const deadline = Date.now() + 5_000;
    const checkpoint = () => { try { return JSON.parse(readFileSync(checkpointFile, 'utf8'))['shardId-1']; } catch { return undefined; } };
    while ((seen.length < 3 || checkpoint() !== seq(7)) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
    expect(seen.map((r) => r.eventID)).toEqual(['e1', 'e3', 'e7']);
    expect(checkpoint()).toBe(seq(7));
  });
});
