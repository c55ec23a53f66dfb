/**
 * Where a change sits in the clients table's stream, and whether the local stack's fan-out has
 * processed it yet (its stream poller checkpoints a shard only after the handler returned). Lets a
 * test wait on "the live fan-out has seen this record" instead of sleeping.
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { DescribeTableCommand } from '@aws-sdk/client-dynamodb';
import { DynamoDBStreamsClient, DescribeStreamCommand, GetRecordsCommand, GetShardIteratorCommand, type _Record } from '@aws-sdk/client-dynamodb-streams';
import { eventually, testStack } from '../support/stack.js';

export interface StreamPosition { shardId: string; sequenceNumber: string; streamArn: string }

export async function streamsClient(): Promise<DynamoDBStreamsClient> {
  const { info } = await testStack();
  return new DynamoDBStreamsClient({ region: info.region, endpoint: info.dynamodbEndpoint, credentials: { accessKeyId: 'local', secretAccessKey: 'local' } });
}

async function findInStream(match: (r: _Record) => boolean): Promise<StreamPosition | undefined> {
  const { deps } = await testStack();
  const streams = await streamsClient();
  const streamArn = (await deps.dynamodb.send(new DescribeTableCommand({ TableName: deps.tables.clients }))).Table!.LatestStreamArn!;
  const { StreamDescription } = await streams.send(new DescribeStreamCommand({ StreamArn: streamArn }));
  for (const shard of StreamDescription?.Shards ?? []) {
    let { ShardIterator: iterator } = await streams.send(new GetShardIteratorCommand({ StreamArn: streamArn, ShardId: shard.ShardId, ShardIteratorType: 'TRIM_HORIZON' }));
    while (iterator) {
      const page = await streams.send(new GetRecordsCommand({ ShardIterator: iterator, Limit: 1000 }));
      const hit = page.Records?.find(match);
      if (hit) return { shardId: shard.ShardId!, sequenceNumber: hit.dynamodb!.SequenceNumber!, streamArn };
      if (!page.Records?.length) break; // DynamoDB Local never pages empty before a shard's end
      iterator = page.NextShardIterator;
    }
  }
  return undefined;
}

/** The position of the INSERT of the client `clientId`, once it is in the stream. */
export const insertOf = (clientId: string): Promise<StreamPosition> =>
  eventually(() => findInStream((r) => r.eventName === 'INSERT' && r.dynamodb?.NewImage?.id?.S === clientId), { what: `the stream record of ${clientId}` });

/** Waits until the local stack's fan-out has processed the stream up to `position`. */
export async function fannedOut(position: StreamPosition): Promise<void> {
  const dir = path.dirname((await testStack()).stackFile);
  const target = BigInt(position.sequenceNumber);
  await eventually(async () => readdirSync(dir).filter((f) => f.startsWith('checkpoint-') && f.endsWith('.json')).some((f) => {
    const done = (JSON.parse(readFileSync(path.join(dir, f), 'utf8')) as Record<string, string>)[position.shardId];
    return done !== undefined && BigInt(done) >= target;
  }), { what: `the fan-out past ${position.sequenceNumber}` });
}
