/**
 * `crm events replay-failures`: a stream batch the fan-out gave up on (described in the fan-out
 * failure queue, as Lambda writes it) is read back from the stream and fanned out again; a second
 * replay delivers nothing twice.
 */
import { describe, it, expect, beforeAll, afterAll } from '@jest/globals';
import { DescribeTableCommand } from '@aws-sdk/client-dynamodb';
import { DynamoDBStreamsClient, DescribeStreamCommand, GetRecordsCommand, GetShardIteratorCommand } from '@aws-sdk/client-dynamodb-streams';
import { SendMessageCommand } from '@aws-sdk/client-sqs';
import { eventually, newTenant, postLead, runCli, testStack } from '../support/stack.js';
import { Receiver } from '../support/receiver.js';
import { addEndpoint, updateEndpoint } from '../../../functions/core/endpoints.js';
import { listDeliveries } from '../../../functions/core/delivery/redrive.js';

let receiver: Receiver;
beforeAll(async () => {
  receiver = await new Receiver().start();
});
afterAll(async () => {
  await receiver.stop();
});

/** Where a client's INSERT sits in the clients table's stream. */
async function streamPositionOf(clientId: string) {
  const { deps, info } = await testStack();
  const streams = new DynamoDBStreamsClient({ region: info.region, endpoint: info.dynamodbEndpoint, credentials: { accessKeyId: 'local', secretAccessKey: 'local' } });
  const streamArn = (await deps.dynamodb.send(new DescribeTableCommand({ TableName: deps.tables.clients }))).Table!.LatestStreamArn!;
  const { StreamDescription } = await streams.send(new DescribeStreamCommand({ StreamArn: streamArn }));
  for (const shard of StreamDescription?.Shards ?? []) {
    let { ShardIterator: iterator } = await streams.send(new GetShardIteratorCommand({ StreamArn: streamArn, ShardId: shard.ShardId, ShardIteratorType: 'TRIM_HORIZON' }));
    while (iterator) {
      const page = await streams.send(new GetRecordsCommand({ ShardIterator: iterator, Limit: 1000 }));
      const hit = page.Records?.find((r) => r.eventName === 'INSERT' && r.dynamodb?.NewImage?.id?.S === clientId);
      if (hit) return { shardId: shard.ShardId!, sequenceNumber: hit.dynamodb!.SequenceNumber!, streamArn };
      if (!page.Records?.length) break;
      iterator = page.NextShardIterator;
    }
  }
  throw new Error(`no stream record for ${clientId}`);
}

describe('replaying failed fan-out batches', () => {
  it('fans a parked batch out again, and a second replay delivers nothing twice', async () => {
    const { deps } = await testStack();
    const tenant = await newTenant({ name: 'Replay Co' });
    // The lead is fanned out while the organization has no endpoint: no delivery.
    const client = (await (await postLead(tenant.key, { name: 'Missed Event' })).json()) as { id: string };
    const position = await eventually(() => streamPositionOf(client.id).catch(() => undefined), { what: 'the stream record' });
    await new Promise((r) => setTimeout(r, 1000)); // the live fan-out has run by now, and found no endpoint
    const { endpoint, secret } = await addEndpoint(deps, tenant.organizationId, { url: 'http://127.0.0.1:9/x', events: 'client.created' });
    await updateEndpoint(deps, tenant.organizationId, endpoint.id, { url: receiver.script('/replay', secret) });
    await new Promise((r) => setTimeout(r, 1000));
    expect(receiver.on('/replay')).toHaveLength(0);

    const park = () => deps.sqs.send(new SendMessageCommand({
      QueueUrl: deps.queues.fanoutFailures,
      MessageBody: JSON.stringify({
        requestContext: { condition: 'RetryAttemptsExhausted', approximateInvokeCount: 11 },
        DDBStreamBatchInfo: { shardId: position.shardId, startSequenceNumber: position.sequenceNumber, endSequenceNumber: position.sequenceNumber, batchSize: 1, streamArn: position.streamArn },
      }),
    }));
    await park();
    const first = await runCli(['events', 'replay-failures']);
    expect(first.code).toBe(0);
    expect(first.json()).toMatchObject({ failed: 0 });
    expect(first.json<{ records: number }>().records).toBeGreaterThanOrEqual(1);
    const [got] = await eventually(async () => (receiver.on('/replay').length ? receiver.on('/replay') : undefined), { what: 'the replayed delivery' });
    expect(got.verifyError).toBeUndefined();
    expect(got.event).toMatchObject({ type: 'client.created', data: { object: { id: client.id } } });

    await park();
    expect((await runCli(['events', 'replay-failures'])).code).toBe(0);
    await new Promise((r) => setTimeout(r, 1500));
    expect(receiver.on('/replay')).toHaveLength(1);
    expect(await listDeliveries(deps, tenant.organizationId)).toHaveLength(1);
  });
});
