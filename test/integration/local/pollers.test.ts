/**
 * The pollers that play Lambda's event-source mappings, on the suite's emulators with tables and
 * queues of their own: real stream records, real SQS messages.
 */
import { describe, it, expect, beforeAll, afterEach } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { DynamoDBStreamsClient, GetRecordsCommand } from '@aws-sdk/client-dynamodb-streams';
import { PutCommand } from '@aws-sdk/lib-dynamodb';
import { GetQueueAttributesCommand, ReceiveMessageCommand, SendMessageCommand } from '@aws-sdk/client-sqs';
import type { DynamoDBRecord, SQSRecord } from 'aws-lambda';
import { createTable, createQueue } from '../../../lib/local/provision.js';
import { StreamPoller, laneOf } from '../../../lib/local/stream-poller.js';
import { QueuePoller } from '../../../lib/local/queue-poller.js';
import { testStack, eventually, type TestStack } from '../support/stack.js';

let stack: TestStack;
let streams: DynamoDBStreamsClient;
const running: { stop(): Promise<void> }[] = [];

beforeAll(async () => {
  stack = await testStack();
  streams = new DynamoDBStreamsClient({ region: 'us-east-1', endpoint: stack.info.dynamodbEndpoint });
});
afterEach(async () => {
  await Promise.all(running.splice(0).map((p) => p.stop()));
});

async function givenStreamTable() {
  const name = `poller-test-${randomUUID().slice(0, 8)}`;
  const { streamArn } = await createTable(stack.deps.dynamodb, name, {
    envVar: 'UNUSED', partitionKey: { name: 'pk', type: 'S' }, sortKey: { name: 'sk', type: 'S' }, stream: 'NEW_AND_OLD_IMAGES',
  });
  const put = (i: number, pk = 'P') => stack.deps.doc.send(new PutCommand({ TableName: name, Item: { pk, sk: String(i).padStart(4, '0'), n: i } }));
  return { name, streamArn: streamArn!, put };
}

const nOf = (r: DynamoDBRecord) => Number(r.dynamodb!.NewImage!.n.N);
const pkOf = (r: DynamoDBRecord) => r.dynamodb!.Keys!.pk.S!;
/** `count` partition keys that hash to different lanes of `lanes` (the poller hashes the key's JSON, as Lambda hashes the key). */
function keysInDistinctLanes(count: number, lanes: number): string[] {
  const byLane = new Map<number, string>();
  for (let i = 0; byLane.size < count; i++) {
    const key = `ORG#${i}`;
    const lane = laneOf(JSON.stringify({ S: key }), lanes);
    if (!byLane.has(lane)) byLane.set(lane, key);
  }
  return [...byLane.values()];
}

function startStreamPoller(streamArn: string, handler: ConstructorParameters<typeof StreamPoller>[0]['handler'], extra: Partial<ConstructorParameters<typeof StreamPoller>[0]> = {}) {
  const poller = new StreamPoller({ streams, streamArn, handler, batchSize: 10, maxRetries: 3, bisectOnError: false, idleDelayMs: 50, ...extra });
  poller.start();
  running.push(poller);
  return poller;
}

describe('stream poller', () => {
  it('given 40 writes, the handler sees every record once, in write order, in batches of at most 10', async () => {
    const table = await givenStreamTable();
    for (let i = 0; i < 40; i++) await table.put(i);
    const seen: number[] = [];
    const sizes: number[] = [];
    startStreamPoller(table.streamArn, async (event) => {
      sizes.push(event.Records.length);
      seen.push(...event.Records.map(nOf));
    });
    await eventually(async () => seen.length >= 40, { what: '40 records' });
    expect(seen).toEqual([...Array(40).keys()]);
    expect(Math.max(...sizes)).toBeLessThanOrEqual(10);
  });

  it('polls an idle stream less and less often, and at the short pause again once records come', async () => {
    const table = await givenStreamTable();
    let reads = 0;
    const counting = { send: (command: Parameters<DynamoDBStreamsClient['send']>[0]) => (command instanceof GetRecordsCommand && reads++, streams.send(command as never)) } as DynamoDBStreamsClient;
    const seen: number[] = [];
    const pauses: number[] = [];
    let pausesBeforeRecords = -1;
    startStreamPoller(table.streamArn, async (event) => {
      pausesBeforeRecords = pauses.length;
      seen.push(...event.Records.map(nOf));
    }, { streams: counting, idleDelayMs: 20, idleGraceMs: 0, idleMaxDelayMs: 100, onIdlePause: (ms) => pauses.push(ms) });
    await new Promise((resolve) => setTimeout(resolve, 2_000)); // the window the read count is bounded over
    await eventually(async () => pauses.length >= 6, { what: 'six idle pauses' }); // a loaded machine may make fewer in 2 s
    expect(pauses.slice(0, 6)).toEqual([20, 40, 80, 100, 100, 100]);
    // About 20 reads in 2 s, where a fixed 20 ms pause made ~100.
    expect(reads).toBeLessThanOrEqual(30);
    await table.put(1);
    await eventually(async () => seen.includes(1), { what: 'the write' });
    expect(pauses[pausesBeforeRecords - 1]).toBe(100); // it was idle
    await eventually(async () => pauses.length > pausesBeforeRecords, { what: 'a pause after the records' });
    expect(pauses[pausesBeforeRecords]).toBe(20); // busy again: back to the short pause
  });

  it('keeps the short pause through a grace period, so a steady trickle of records is read at once', async () => {
    const table = await givenStreamTable();
    const pauses: number[] = [];
    startStreamPoller(table.streamArn, async () => undefined, { idleDelayMs: 20, idleGraceMs: 400, idleMaxDelayMs: 100, onIdlePause: (ms) => pauses.push(ms) });
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    const firstLonger = pauses.findIndex((ms) => ms > 20);
    expect(firstLonger).toBeGreaterThanOrEqual(3); // ~400 ms of 20 ms pauses (fewer when the machine is slow; 1 without a grace)
    expect(pauses.slice(firstLonger, firstLonger + 3)).toEqual([40, 80, 100]);
  });

  it('given a partial batch failure, the batch resumes at the failed record and earlier ones are not re-delivered', async () => {
    const table = await givenStreamTable();
    for (let i = 0; i < 6; i++) await table.put(i);
    const calls: number[][] = [];
    let failedOnce = false;
    startStreamPoller(table.streamArn, async (event) => {
      const ns = event.Records.map(nOf);
      calls.push(ns);
      const bad = event.Records.find((r) => nOf(r) === 3);
      if (bad && !failedOnce) {
        failedOnce = true;
        return { batchItemFailures: [{ itemIdentifier: bad.dynamodb!.SequenceNumber! }] };
      }
      return { batchItemFailures: [] };
    });
    await eventually(async () => calls.flat().filter((n) => n === 5).length >= 1 && failedOnce, { what: 'the retry' });
    expect(calls[0]).toEqual([0, 1, 2, 3, 4, 5]);
    expect(calls[1]).toEqual([3, 4, 5]);
    expect(calls.flat().filter((n) => n === 0)).toHaveLength(1);
  });

  it('given a record that always fails, it goes to the on-failure queue after the retries and later records still flow', async () => {
    const table = await givenStreamTable();
    const failures = await createQueue(stack.deps.sqs, `poller-failures-${randomUUID().slice(0, 8)}`, { envVar: 'X', visibilityTimeoutSeconds: 30, retentionDays: 1 });
    for (let i = 0; i < 4; i++) await table.put(i);
    const delivered: number[] = [];
    const errors: Error[] = [];
    let attemptsOn2 = 0;
    startStreamPoller(table.streamArn, async (event) => {
      for (const r of event.Records) {
        if (nOf(r) === 2) {
          attemptsOn2++;
          return { batchItemFailures: [{ itemIdentifier: r.dynamodb!.SequenceNumber! }] };
        }
        delivered.push(nOf(r));
      }
    }, { maxRetries: 2, bisectOnError: true, batchSize: 4, onFailure: { sqs: stack.deps.sqs, queueUrl: failures.url }, onError: (e) => errors.push(e as Error) });
    await eventually(async () => delivered.includes(3), { what: 'record 3 after the poisoned one' });
    expect(attemptsOn2).toBe(3); // first try + 2 retries
    const { Messages } = await stack.deps.sqs.send(new ReceiveMessageCommand({ QueueUrl: failures.url, WaitTimeSeconds: 1 }));
    const info = JSON.parse(Messages![0].Body!);
    expect(info.DDBStreamBatchInfo).toMatchObject({ batchSize: 1, streamArn: table.streamArn });
    // The handler logged nothing: the poller's line says which records were parked, and why.
    const seq = info.DDBStreamBatchInfo.startSequenceNumber;
    expect(errors.map((e) => e.message)).toEqual([
      `1 record(s) ${seq}..${seq} of shard ${info.DDBStreamBatchInfo.shardId} sent to the on-failure queue after 3 failed attempts: batchItemFailures from ${seq} (3 times)`,
    ]);
    expect(delivered.filter((n) => n < 2)).toEqual([0, 1]);
  });

  it('with a parallelization factor, each partition key keeps its order while different keys run at once', async () => {
    const table = await givenStreamTable();
    const keys = ['ORG#a', 'ORG#b', 'ORG#c', 'ORG#d', 'ORG#e', 'ORG#f'];
    for (let i = 0; i < 60; i++) await table.put(i, keys[i % keys.length]);
    const seen = new Map<string, number[]>();
    let inFlight = 0;
    let mostAtOnce = 0;
    const lanesPerBatch: number[] = [];
    startStreamPoller(table.streamArn, async (event) => {
      inFlight++;
      mostAtOnce = Math.max(mostAtOnce, inFlight);
      lanesPerBatch.push(new Set(event.Records.map((r) => laneOf(JSON.stringify(r.dynamodb!.Keys!.pk), 4))).size);
      await new Promise((r) => setTimeout(r, 30 + Math.random() * 50));
      for (const r of event.Records) seen.set(pkOf(r), [...(seen.get(pkOf(r)) ?? []), nOf(r)]);
      inFlight--;
    }, { parallelizationFactor: 4, batchSize: 3 });
    await eventually(async () => [...seen.values()].flat().length >= 60, { what: 'all 60 records' });
    for (const ns of seen.values()) {
      expect(ns).toHaveLength(10);
      expect(ns).toEqual(ns.slice().sort((a, b) => a - b)); // each key in write order
    }
    expect(new Set(lanesPerBatch)).toEqual(new Set([1])); // a batch holds one lane's keys
    expect([...seen.values()].flat().sort((a, b) => a - b)).toEqual([...Array(60).keys()]);
    expect(mostAtOnce).toBeGreaterThan(1);
    expect(mostAtOnce).toBeLessThanOrEqual(4);
  });

  it('with a parallelization factor, a key whose batches are slow holds only its own lane, and the checkpoint never passes its records', async () => {
    const table = await givenStreamTable();
    const [slow, quick] = keysInDistinctLanes(2, 10);
    const checkpointFile = path.join(mkdtempSync(path.join(tmpdir(), 'ckpt-')), 'checkpoint.json');
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    const order: string[] = [];
    const sequenceOf = new Map<number, string>();
    startStreamPoller(table.streamArn, async (event) => {
      for (const r of event.Records) sequenceOf.set(nOf(r), r.dynamodb!.SequenceNumber!);
      if (pkOf(event.Records[0]) === slow) await held;
      order.push(...event.Records.map((r) => `${pkOf(r)}:${nOf(r)}`));
    }, { parallelizationFactor: 10, checkpointFile });
    await table.put(0, slow);
    await table.put(1, quick);
    await table.put(2, quick);
    await eventually(async () => order.length === 2, { what: 'the quick key’s records, past the slow one' });
    expect(order).toEqual([`${quick}:1`, `${quick}:2`]);
    // Done past record 0 in another lane, but not record 0 itself: a restart now must run record 0 again.
    const { readFileSync } = await import('node:fs');
    const before = (() => { try { return Object.values(JSON.parse(readFileSync(checkpointFile, 'utf8')) as Record<string, string>); } catch { return []; } })();
    expect(before).not.toContain(sequenceOf.get(1));
    expect(before).not.toContain(sequenceOf.get(2));
    release();
    await eventually(async () => order.length === 3, { what: 'the slow key’s record' });
    await eventually(async () => Object.values(JSON.parse(readFileSync(checkpointFile, 'utf8')) as Record<string, string>).includes(sequenceOf.get(2)!), { what: 'the checkpoint past every record' });
  });

  it('given a restart, a new poller with the same checkpoint file resumes after the last processed record', async () => {
    const table = await givenStreamTable();
    const checkpointFile = path.join(mkdtempSync(path.join(tmpdir(), 'ckpt-')), 'checkpoint.json');
    for (let i = 0; i < 5; i++) await table.put(i);
    const first: number[] = [];
    const poller = startStreamPoller(table.streamArn, async (e) => void first.push(...e.Records.map(nOf)), { checkpointFile });
    await eventually(async () => first.length >= 5, { what: 'first five' });
    await poller.stop();
    for (let i = 5; i < 8; i++) await table.put(i);
    const second: number[] = [];
    startStreamPoller(table.streamArn, async (e) => void second.push(...e.Records.map(nOf)), { checkpointFile });
    await eventually(async () => second.length >= 3, { what: 'the three new records' });
    expect(second).toEqual([5, 6, 7]);
  });
});

describe('queue poller', () => {
  async function givenQueueWithDlq() {
    const id = randomUUID().slice(0, 8);
    const dlq = await createQueue(stack.deps.sqs, `poller-dlq-${id}`, { envVar: 'X', visibilityTimeoutSeconds: 30, retentionDays: 1 });
    // Visibility 0: a failed message is offered again at once, so five receives take milliseconds.
    const queue = await createQueue(stack.deps.sqs, `poller-q-${id}`, { envVar: 'X', visibilityTimeoutSeconds: 0, retentionDays: 1, deadLetter: { queue: 'dlq', maxReceiveCount: 5 } }, dlq.arn);
    return { queue, dlq };
  }
  const count = async (url: string) =>
    Number((await stack.deps.sqs.send(new GetQueueAttributesCommand({ QueueUrl: url, AttributeNames: ['ApproximateNumberOfMessages', 'ApproximateNumberOfMessagesNotVisible'] }))).Attributes!.ApproximateNumberOfMessages);

  function startQueuePoller(queue: { url: string; arn: string }, handler: ConstructorParameters<typeof QueuePoller>[0]['handler']) {
    const poller = new QueuePoller({ sqs: stack.deps.sqs, queueUrl: queue.url, queueArn: queue.arn, handler, batchSize: 10 });
    poller.start();
    running.push(poller);
    return poller;
  }

  it('given a message the handler accepts, it is delivered once and deleted', async () => {
    const { queue } = await givenQueueWithDlq();
    await stack.deps.sqs.send(new SendMessageCommand({ QueueUrl: queue.url, MessageBody: '{"hello":1}' }));
    const seen: SQSRecord[] = [];
    const poller = startQueuePoller(queue, async (e) => void seen.push(...e.Records));
    await eventually(async () => seen.length === 1, { what: 'the message' });
    await poller.stop();
    expect(seen[0]).toMatchObject({ body: '{"hello":1}', eventSource: 'aws:sqs', eventSourceARN: queue.arn });
    expect(await count(queue.url)).toBe(0);
  });

  it('given a message that always fails, it reaches the dead-letter queue after exactly 5 receives with the same MessageId', async () => {
    const { queue, dlq } = await givenQueueWithDlq();
    const { MessageId } = await stack.deps.sqs.send(new SendMessageCommand({ QueueUrl: queue.url, MessageBody: 'poison' }));
    const receiveCounts: number[] = [];
    startQueuePoller(queue, async (e) => ({
      batchItemFailures: e.Records.map((r) => (receiveCounts.push(Number(r.attributes.ApproximateReceiveCount)), { itemIdentifier: r.messageId })),
    }));
    const parked = await eventually(async () => {
      const { Messages } = await stack.deps.sqs.send(new ReceiveMessageCommand({ QueueUrl: dlq.url, WaitTimeSeconds: 1 }));
      return Messages?.[0];
    }, { what: 'the message in the DLQ' });
    expect(parked.MessageId).toBe(MessageId);
    expect(parked.Body).toBe('poison');
    expect(receiveCounts).toEqual([1, 2, 3, 4, 5]);
  });

  it('given a batch where one message fails, only that one is offered again', async () => {
    const { queue } = await givenQueueWithDlq();
    for (const body of ['a', 'b', 'c']) await stack.deps.sqs.send(new SendMessageCommand({ QueueUrl: queue.url, MessageBody: body }));
    const seen: string[] = [];
    startQueuePoller(queue, async (e) => {
      seen.push(...e.Records.map((r) => r.body));
      const b = e.Records.find((r) => r.body === 'b' && r.attributes.ApproximateReceiveCount === '1');
      return { batchItemFailures: b ? [{ itemIdentifier: b.messageId }] : [] };
    });
    await eventually(async () => seen.filter((b) => b === 'b').length === 2, { what: 'b again' });
    expect(seen.filter((b) => b === 'a')).toHaveLength(1);
    expect(seen.filter((b) => b === 'c')).toHaveLength(1);
  });
});
