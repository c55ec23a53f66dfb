/**
 * `crm events replay-failures`: a stream batch the fan-out gave up on (described in the fan-out
 * failure queue, as Lambda writes it) is read back from the stream and fanned out again; a second
 * replay delivers nothing twice; empty GetRecords pages before the batch's end (which DynamoDB
 * Streams may return, DynamoDB Local never) are read past, injected with aws-sdk-client-mock.
 */
import { describe, it, expect, afterAll } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import { rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { GetRecordsCommand, GetShardIteratorCommand, TrimmedDataAccessException } from '@aws-sdk/client-dynamodb-streams';
import { CreateQueueCommand, DeleteMessageCommand, DeleteQueueCommand, SendMessageCommand } from '@aws-sdk/client-sqs';
import type { Deps } from '../../../functions/core/platform/deps.js';
import { mockClient } from 'aws-sdk-client-mock';
import { eventually, newTenant, postLead, runCli, testStack } from '../support/stack.js';
import { receiverForFile } from '../support/receiver.js';
import { addEndpoint, updateEndpoint } from '../../../functions/core/delivery/endpoints.js';
import { listDeliveries } from '../../../functions/core/delivery/redeliver.js';
import { replayFanoutFailures } from '../../../functions/core/events/replay.js';
import { fannedOut, insertOf, streamsClient, type StreamPosition } from './stream-position.js';
import { deliveriesSettled } from './settled.js';

const receiver = receiverForFile();

/**
 * A fan-out failure queue of this file's own: `replay-failures` drains the whole queue, and the
 * stack's is shared with the suites running beside this one, so this file counts only what it parks.
 */
let own: Promise<{ deps: Deps; cli: typeof runCli; drop: () => Promise<void> }> | undefined;
function ownFailures() {
  own ??= (async () => {
    const { deps, info, stackFile } = await testStack();
    const name = `test-fanout-failures-${randomUUID()}`;
    const { QueueUrl } = await deps.sqs.send(new CreateQueueCommand({ QueueName: name }));
    const file = path.join(path.dirname(stackFile), `${name}.json`);
    writeFileSync(file, JSON.stringify({ ...info, queues: { ...info.queues, fanoutFailures: QueueUrl } }));
    return {
      deps: { ...deps, queues: { ...deps.queues, fanoutFailures: QueueUrl! } },
      cli: ((args, options) => runCli(args, { ...options, stackFile: file })) as typeof runCli,
      drop: async () => {
        await deps.sqs.send(new DeleteQueueCommand({ QueueUrl }));
        rmSync(file, { force: true });
      },
    };
  })();
  return own;
}
afterAll(async () => (await own)?.drop());

/** Describes the stream batch from `first` to `last` in the fan-out failure queue, as Lambda's on-failure destination does. */
async function parkBatch(first: StreamPosition, last: StreamPosition, batchSize = 1, shardId = first.shardId) {
  const { deps } = await ownFailures();
  await deps.sqs.send(new SendMessageCommand({
    QueueUrl: deps.queues.fanoutFailures,
    MessageBody: JSON.stringify({
      requestContext: { condition: 'RetryAttemptsExhausted', approximateInvokeCount: 11 },
      DDBStreamBatchInfo: { shardId, startSequenceNumber: first.sequenceNumber, endSequenceNumber: last.sequenceNumber, batchSize, streamArn: first.streamArn },
    }),
  }));
}

/** An organization whose leads the live fan-out saw before it had an endpoint, then one endpoint. */
async function missedLeads(names: string[], path: string) {
  const { deps } = await ownFailures();
  const tenant = await newTenant({ name: `Replay ${path}` });
  const clients: string[] = [];
  for (const name of names) clients.push(((await (await postLead(tenant.key, { name })).json()) as { id: string }).id);
  const positions = await Promise.all(clients.map((id) => insertOf(id)));
  await fannedOut(positions.at(-1)!); // the live fan-out has run, and found no endpoint
  const { endpoint, secret } = await addEndpoint(deps, tenant.organizationId, { url: 'http://127.0.0.1:9/x', events: 'client.created' });
  await updateEndpoint(deps, tenant.organizationId, endpoint.id, { url: receiver.script(path, secret) });
  expect(await listDeliveries(deps, tenant.organizationId)).toEqual([]);
  return { tenant, clients, positions };
}

describe('replaying failed fan-out batches', () => {
  it('fans a parked batch out again, and a second replay delivers nothing twice', async () => {
    const { deps } = await ownFailures();
    // The lead is fanned out while the organization has no endpoint: no delivery.
    const { tenant, clients: [clientId], positions: [position] } = await missedLeads(['Missed Event'], '/replay');

    const park = () => parkBatch(position, position);
    await park();
    const first = await (await ownFailures()).cli(['events', 'replay-failures']);
    expect(first.code).toBe(0);
    expect(first.json()).toMatchObject({ failed: 0 });
    expect(first.json<{ records: number }>().records).toBeGreaterThanOrEqual(1);
    const [got] = await eventually(async () => (receiver.on('/replay').length ? receiver.on('/replay') : undefined), { what: 'the replayed delivery' });
    expect(got.verifyError).toBeUndefined();
    expect(got.event).toMatchObject({ type: 'client.created', data: { object: { id: clientId } } });

    await park();
    expect((await (await ownFailures()).cli(['events', 'replay-failures'])).code).toBe(0);
    await deliveriesSettled(receiver, tenant.organizationId, '/replay');
    expect(receiver.on('/replay')).toHaveLength(1);
    expect(await listDeliveries(deps, tenant.organizationId)).toHaveLength(1);
  });

  it('reads on past empty GetRecords pages, as DynamoDB Streams returns them before a shard’s end', async () => {
    const { deps } = await ownFailures();
    const { tenant, clients, positions } = await missedLeads(['Gap One', 'Gap Two', 'Gap Three'], '/gaps');
    await parkBatch(positions[0], positions.at(-1)!, clients.length);
    // The real stream, one record a page, every page preceded by an empty one (DynamoDB Local never
    // answers empty before a shard's end; AWS may). Other suites' records in the range read as empty pages too.
    const real = await streamsClient();
    const streams = await streamsClient();
    const answeredEmpty = new Set<string>();
    mockClient(streams)
      .on(GetShardIteratorCommand).callsFake((input) => real.send(new GetShardIteratorCommand(input)))
      .on(GetRecordsCommand).callsFake(async (input: { ShardIterator: string }) => {
        if (!answeredEmpty.has(input.ShardIterator)) {
          answeredEmpty.add(input.ShardIterator);
          return { Records: [], NextShardIterator: input.ShardIterator };
        }
        const page = await real.send(new GetRecordsCommand({ ShardIterator: input.ShardIterator, Limit: 1 }));
        const ours = (page.Records ?? []).filter((r) => r.dynamodb?.Keys?.pk?.S === `ORG#${tenant.organizationId}`);
        return { Records: ours, NextShardIterator: page.NextShardIterator };
      });

    // Other suites' records between ours read as empty pages here, as many as the shared stack wrote
    // meanwhile: no bound on empty pages in a row, or a busy suite would end the read before our end.
    const result = await replayFanoutFailures(deps, streams, undefined, { emptyPauseMs: 0, maxEmptyPages: Number.MAX_SAFE_INTEGER });
    expect(result).toMatchObject({ records: clients.length, failed: 0 });
    expect(answeredEmpty.size).toBeGreaterThanOrEqual(clients.length);
    const got = await eventually(async () => (receiver.on('/gaps').length >= clients.length ? receiver.on('/gaps') : undefined), { what: 'every replayed delivery' });
    expect(got.map((r) => r.verifyError)).toEqual(clients.map(() => undefined));
    expect(got.map((r) => r.event!.data.object.id).sort()).toEqual([...clients].sort());
  });

  it('a batch older than the stream’s 24 h is reported and kept queued, and the other batches are still replayed', async () => {
    const { deps } = await ownFailures();
    const { clients: [clientId], positions: [position] } = await missedLeads(['After The Old One'], '/after-trimmed');
    await parkBatch(position, position, 1, 'shardId-trimmed');
    await parkBatch(position, position);
    const real = await streamsClient();
    const streams = await streamsClient();
    mockClient(streams)
      .on(GetShardIteratorCommand).callsFake((input: { ShardId: string }) => {
        if (input.ShardId === 'shardId-trimmed') throw new TrimmedDataAccessException({ message: 'Attempted to access data that was older than 24 hours', $metadata: {} });
        return real.send(new GetShardIteratorCommand(input as never));
      })
      .on(GetRecordsCommand).callsFake((input) => real.send(new GetRecordsCommand(input)));

    const result = await replayFanoutFailures(deps, streams, undefined, { emptyPauseMs: 0 });
    expect(result).toMatchObject({ batches: 2, failed: 1, trimmed: 1 });
    const [got] = await eventually(async () => (receiver.on('/after-trimmed').length ? receiver.on('/after-trimmed') : undefined), { what: 'the other batch’s delivery' });
    expect(got.event).toMatchObject({ type: 'client.created', data: { object: { id: clientId } } });

    // The old batch is still in the failure queue (the replay's last receive holds it in flight),
    // the other one is gone. Seen through fauxqs's inspection API; then removed, so later runs start clean.
    const { info } = await testStack();
    const res = await fetch(`${info.sqsEndpoint}/_fauxqs/queues/${deps.queues.fanoutFailures.split('/').at(-1)}`);
    const { messages } = (await res.json()) as { messages: { ready: { body: string }[]; inflight: { message: { body: string }; receiptHandle: string }[] } };
    const held = [...messages.ready.map((m) => ({ body: m.body })), ...messages.inflight.map((m) => ({ body: m.message.body, receiptHandle: m.receiptHandle }))];
    expect(held.map((m) => JSON.parse(m.body).DDBStreamBatchInfo.shardId)).toEqual(['shardId-trimmed']);
    await Promise.all(held.map((m) => 'receiptHandle' in m && deps.sqs.send(new DeleteMessageCommand({ QueueUrl: deps.queues.fanoutFailures, ReceiptHandle: m.receiptHandle as string }))));
  });
});
