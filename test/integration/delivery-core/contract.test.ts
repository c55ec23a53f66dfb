/**
 * The delivery port's contract (docs/decisions.md "The delivery core's port"): the same
 * behaviours run against the production implementation (the deliveries table on DynamoDB Local,
 * SQS on the fauxqs emulator) and the in-memory one the delivery core's tests use, and both must
 * leave the very same records. It pins each named transition's effect and the state it must leave
 * (a write that finds the record elsewhere changes nothing), the bounded attempt log, the due index,
 * the reads, the batch's delivered write (the record `delivered` makes, put whole), and the queue's
 * delays.
 */
import { describe, it, expect, beforeAll, afterAll } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import { CreateQueueCommand, DeleteMessageBatchCommand, DeleteQueueCommand, ReceiveMessageCommand } from '@aws-sdk/client-sqs';
import { testStack } from '../support/stack.js';
import type { Deps } from '../../../functions/core/platform/deps.js';
import { keys, type DeliveryAttempt, type DeliveryMessage } from '../../../functions/core/platform/model.js';
import { dynamoDeliveryStore } from '../../../functions/core/delivery/delivery-record.js';
import { sqsDeliveryQueue } from '../../../functions/core/delivery/sqs-delivery-queue.js';
import { deliveredRecord } from '../../../functions/core/delivery/batch-records.js';
import { dueKeys, type DeliveryQueue, type DeliveryStore, type StoredItem } from '../../../functions/core/delivery/delivery-state.js';
import { MAX_KEPT_ATTEMPTS } from '../../../functions/core/delivery/attempt-log.js';
import { MemoryDeliveryQueue, MemoryDeliveryStore } from './support/memory-delivery.js';

/** A fixed clock, the same for both: their records must be equal to the letter. */
let nowMs = Date.parse('2026-11-26T09:00:00.000Z');
const clock = () => nowMs;
const at = (ms: number) => new Date(ms).toISOString();

interface Implementation {
  store: DeliveryStore;
  queue: DeliveryQueue;
  /** The bodies of the delivery queue's messages visible now, received and deleted. */
  take(): Promise<DeliveryMessage[]>;
  /** Lets `ms` pass for the queue's delays. */
  wait(ms: number): Promise<void>;
}

let cleanup: (() => Promise<void>) | undefined;
afterAll(async () => cleanup?.());

async function dynamo(): Promise<Implementation> {
  const { deps } = await testStack();
  // A queue of the test's own: the suite's delivery queue is the local stack's pollers'.
  const { QueueUrl } = await deps.sqs.send(new CreateQueueCommand({ QueueName: `contract-${randomUUID().slice(0, 8)}` }));
  cleanup = async () => { await deps.sqs.send(new DeleteQueueCommand({ QueueUrl })); };
  const own: Deps = { ...deps, now: clock, queues: { ...deps.queues, deliveryQueue: QueueUrl! } };
  return {
    store: dynamoDeliveryStore(own),
    queue: sqsDeliveryQueue(own),
    async take() {
      const { Messages = [] } = await deps.sqs.send(new ReceiveMessageCommand({ QueueUrl, MaxNumberOfMessages: 10, WaitTimeSeconds: 0 }));
      if (Messages.length) await deps.sqs.send(new DeleteMessageBatchCommand({ QueueUrl, Entries: Messages.map((m, i) => ({ Id: String(i), ReceiptHandle: m.ReceiptHandle! })) }));
      return Messages.map((m) => JSON.parse(m.Body!) as DeliveryMessage);
    },
    wait: (ms) => new Promise((r) => setTimeout(r, ms)),
  };
}

async function memory(): Promise<Implementation> {
  let skew = 0;
  const queue = new MemoryDeliveryQueue(() => Date.now() + skew);
  return {
    store: new MemoryDeliveryStore(clock),
    queue,
    take: async () => queue.receive('deliveryQueue', 10, 60_000).map((m) => {
      queue.delete('deliveryQueue', m.receiptHandle);
      return JSON.parse(m.body) as DeliveryMessage;
    }),
    async wait(ms) { skew += ms; },
  };
}

/** One organization for the run (both stores start empty for it). */
const organizationId = `org_contract_${randomUUID().slice(0, 8)}`;
const deliveryId = (n: number) => `dlv_contract_${n}`;
const ref = (n: number) => ({ organizationId, deliveryId: deliveryId(n) });
const key = (n: number) => keys.delivery(organizationId, deliveryId(n));
const record = (n: number): StoredItem => ({
  ...key(n), ...keys.deliveryIndex(deliveryId(n)), entity: 'delivery', id: deliveryId(n), organizationId, endpointId: 'ep_contract', eventId: `evt_${n}`,
  eventType: 'client.created', status: 'pending', attempts: [], createdAt: at(nowMs), updatedAt: at(nowMs), expiresAt: Math.floor(nowMs / 1000) + 86_400,
});
const attempt = (n: number, statusCode = 500): DeliveryAttempt => ({ at: at(nowMs), attempt: n, latencyMs: 3, statusCode });
const park = (hours: number) => ({ untilMs: nowMs + hours * 3_600_000, round: nowMs - 1000 });

/** The behaviours, on one implementation; returns every record it left, for the cross-check. */
async function behaviours(impl: Implementation): Promise<StoredItem[]> {
  const { store } = impl;
  await store.recorded([1, 2, 3, 4, 5, 6].map(record));
  expect(await store.getOne(key(1), { consistent: true })).toEqual(record(1));
  expect(await store.getOne(key(9))).toBeUndefined();
  expect((await store.get([key(1), key(2), key(9)], { projection: ['id', 'status'] })).map((i) => i.id).sort()).toEqual([deliveryId(1), deliveryId(2)]);
  expect(await store.keyOf(deliveryId(3))).toEqual(key(3));
  expect((await store.deliveriesOf(organizationId)).map((i) => i.id).sort()).toEqual([1, 2, 3, 4, 5, 6].map(deliveryId));

  // attempted, parked in the due index (a retry a day away), then unparked by the sweeper.
  nowMs += 1000;
  const due = dueKeys(deliveryId(1), park(24).untilMs);
  expect(await store.transition(ref(1), { to: 'attempted', attempt: attempt(1), nextAttemptAt: at(park(24).untilMs), park: park(24) })).toBe(true);
  expect(await store.getOne(key(1))).toMatchObject({ status: 'pending', attempts: [attempt(1)], nextAttemptAt: at(park(24).untilMs), ...due, dueRound: park(24).round, updatedAt: at(nowMs) });
  expect((await store.dueIn(due.duePk, park(24).untilMs, 10)).keys).toContainEqual({ ...key(1), dueAt: due.dueAt });
  expect((await store.dueIn(due.duePk, park(24).untilMs - 1, 10)).keys).not.toContainEqual(expect.objectContaining(key(1)));
  expect((await store.resumable()).map((i) => i.id)).not.toContain(deliveryId(1));
  expect(await store.transition(ref(1), { to: 'unparked', seenDueAt: due.dueAt - 1 })).toBe(false); // re-parked since: kept
  expect(await store.transition(ref(1), { to: 'unparked', seenDueAt: due.dueAt })).toBe(true);
  expect(await store.getOne(key(1))).not.toHaveProperty('duePk');

  // parked without an attempt (isolation), then delivered: out of the due index, the wait's traces gone.
  nowMs += 1000;
  expect(await store.transition(ref(2), { to: 'parked', park: { untilMs: nowMs + 3_600_000 }, reason: 'circuit open' })).toBe(true);
  expect(await store.getOne(key(2))).toMatchObject({ status: 'pending', attempts: [], deferredReason: 'circuit open', ...dueKeys(deliveryId(2), nowMs + 3_600_000) });
  expect(await store.transition(ref(2), { to: 'delivered', attempt: attempt(1, 204) })).toBe(true);
  const delivered = await store.getOne(key(2));
  expect(delivered).toMatchObject({ status: 'delivered', deliveredAt: at(nowMs), attempts: [attempt(1, 204)] });
  for (const gone of ['duePk', 'dueAt', 'deferredReason', 'nextAttemptAt']) expect(delivered).not.toHaveProperty(gone);

  // Leaving a delivered record: only a re-drive (or a delivered write) may.
  for (const t of [
    { to: 'attempted', attempt: attempt(2), nextAttemptAt: at(nowMs) }, { to: 'failed', reason: 'x' }, { to: 'skipped', reason: 'x' },
    { to: 'parked', park: { untilMs: nowMs }, reason: 'x' }, { to: 'dead-lettered', reason: 'x' },
  ] as const) expect(await store.transition(ref(2), t)).toBe(false);
  expect(await store.getOne(key(2))).toEqual(delivered);
  expect(await store.transition(ref(2), { to: 'delivered', attempt: attempt(2, 204), unlessDeliveredAt: String(delivered!.deliveredAt) })).toBe(false);

  // failed with a reason; dead-lettered only from pending; re-queued from anything but a missing record.
  nowMs += 1000;
  expect(await store.transition(ref(3), { to: 'failed', reason: 'no success after 5 attempts', attempt: attempt(5) })).toBe(true);
  expect(await store.transition(ref(3), { to: 'dead-lettered', reason: 'receives broke off' })).toBe(false);
  expect(await store.getOne(key(3))).toMatchObject({ status: 'failed', reason: 'no success after 5 attempts' });
  expect(await store.transition(ref(4), { to: 'dead-lettered', reason: 'receives broke off' })).toBe(true);
  expect(await store.getOne(key(4))).toMatchObject({ status: 'failed', reason: 'receives broke off' });
  expect(await store.transition(ref(5), { to: 'skipped', reason: 'endpoint disabled' })).toBe(true);
  nowMs += 1000;
  for (const n of [2, 3]) expect(await store.transition(ref(n), { to: 'requeued' })).toBe(true);
  expect(await store.getOne(key(3))).toMatchObject({ status: 'pending', redrivenAt: at(nowMs), queuedAt: at(nowMs) });
  expect(await store.getOne(key(3))).not.toHaveProperty('reason');
  expect(await store.transition(ref(9), { to: 'requeued' })).toBe(false);
  expect(await store.getOne(key(9))).toBeUndefined(); // no transition creates a record
  // (The table is the suite's: other tests' pending deliveries are in it too.)
  expect((await store.resumable()).filter((i) => i.organizationId === organizationId).map((i) => i.id).sort()).toEqual([1, 2, 3, 6].map(deliveryId));

  // The attempt log stays bounded: the most recent kept, the older ones counted.
  for (let n = 1; n <= MAX_KEPT_ATTEMPTS + 5; n++) await store.transition(ref(6), { to: 'attempted', attempt: attempt(n), nextAttemptAt: at(nowMs) });
  const bounded = await store.getOne(key(6));
  expect((bounded!.attempts as DeliveryAttempt[]).map((a) => a.attempt)).toEqual(Array.from({ length: MAX_KEPT_ATTEMPTS }, (_, i) => i + 6));
  expect(bounded!.olderAttempts).toBe(5);

  // A batch's delivered write: the record `delivered` makes of the read, put whole, is what the transition writes.
  const read = (await store.getOne(key(1), { consistent: true }))!;
  await store.deliveredInBatch([deliveredRecord(read as Parameters<typeof deliveredRecord>[0], attempt(2, 204), at(nowMs))]);
  const batchWritten = await store.getOne(key(1));
  await store.recorded([read]);
  expect(await store.transition(ref(1), { to: 'delivered', attempt: attempt(2, 204) })).toBe(true);
  expect(await store.getOne(key(1))).toEqual(batchWritten);

  return (await store.deliveriesOf(organizationId)).sort((a, b) => String(a.id).localeCompare(String(b.id)));
}

async function queueBehaviours(impl: Implementation): Promise<void> {
  const message = (n: number): DeliveryMessage => ({ deliveryId: deliveryId(n), organizationId, endpointId: 'ep_contract', payload: { id: `evt_${n}` } as DeliveryMessage['payload'], round: n });
  // More than one SendMessageBatch's worth; one of them delayed 2 s.
  await impl.queue.send('deliveryQueue', Array.from({ length: 12 }, (_, i) => ({ message: message(i), delaySeconds: i === 11 ? 2 : 0 })));
  const seen: DeliveryMessage[] = [];
  for (let tries = 0; tries < 5; tries++) seen.push(...await impl.take());
  // Every undelayed one, once; the delayed one not before its time.
  expect(seen.map((m) => m.deliveryId).sort()).toEqual(Array.from({ length: 11 }, (_, i) => deliveryId(i)).sort());
  expect(seen.find((m) => m.deliveryId === deliveryId(3))).toEqual(message(3)); // whole, round included
  await impl.wait(2_100);
  const later: DeliveryMessage[] = [];
  for (let tries = 0; later.length === 0 && tries < 5; tries++) later.push(...await impl.take());
  expect(later).toEqual([message(11)]);
}

const left: Record<string, StoredItem[]> = {};
const implementations: [string, () => Promise<Implementation>][] = [['DynamoDB Local and fauxqs', dynamo], ['memory', memory]];

describe.each(implementations)('the delivery port on %s', (name, make) => {
  let impl: Implementation;
  beforeAll(async () => {
    impl = await make();
  });

  it('carries out each named transition only from the state it leaves, keeps the attempt log bounded, and reads what it wrote', async () => {
    nowMs = Date.parse('2026-11-26T09:00:00.000Z');
    left[name] = await behaviours(impl);
  });

  it('sends every message whole, in batches the queue takes, each after its delay', async () => {
    await queueBehaviours(impl);
  });
});

describe('both implementations', () => {
  it('leave the very same records', () => {
    expect(Object.keys(left)).toHaveLength(2);
    expect(left.memory).toEqual(left['DynamoDB Local and fauxqs']);
  });
});
