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
import { DeliveredWrites, readBatchRecords } from '../../../functions/core/delivery/batch-records.js';
import { withDeliveryPorts } from '../../../functions/core/delivery/delivery-port.js';
import { dueKeys, firstRecord, type DeliveryQueue, type DeliveryStore, type StoredItem } from '../../../functions/core/delivery/delivery-state.js';
import { MAX_KEPT_ATTEMPTS } from '../../../functions/core/delivery/attempt-log.js';
import { MemoryDeliveryQueue, MemoryDeliveryStore } from './support/memory-delivery.js';

/** A fixed clock, the same for both: their records must be equal to the letter. */
let nowMs = Date.parse('2026-11-26T09:00:00.000Z');
const clock = () => nowMs;
const at = (ms: number) => new Date(ms).toISOString();

interface Implementation {
  store: DeliveryStore;
  /** Deps whose delivery stage uses this store and queue. */
  deps: Deps;
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
    deps: own,
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
  const store = new MemoryDeliveryStore(clock);
  const { deps } = await testStack();
  return {
    store,
    queue,
    deps: withDeliveryPorts({ ...deps, now: clock }, { store, queue }),
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
const message = (n: number): DeliveryMessage => ({ deliveryId: deliveryId(n), organizationId, endpointId: 'ep_contract', payload: { id: `evt_${n}` } as DeliveryMessage['payload'], round: n });
/** Due times of this run's own (far before any real one, so no other test's entry is due by them). */
const dueBase = 1_000_000 + Math.floor(Math.random() * 1e6) * 1000;

/** The behaviours, on one implementation; returns every record it left, for the cross-check. */
async function behaviours(impl: Implementation): Promise<StoredItem[]> {
  const { store } = impl;
  await store.recorded([1, 2, 3, 4, 5, 6].map(record));
  expect(await store.getOne(key(1), { consistent: true })).toEqual(record(1));
  expect(await store.getOne(key(9))).toBeUndefined();
  expect((await store.get([key(1), key(2), key(9)], { projection: ['id', 'status'] })).map((i) => i.id).sort()).toEqual([deliveryId(1), deliveryId(2)]);
  expect(await store.keyOf(deliveryId(3))).toEqual(key(3));
  expect((await store.deliveriesOf(organizationId)).map((i) => i.id).sort()).toEqual([1, 2, 3, 4, 5, 6].map(deliveryId));

  // No record stored (the fan-out puts none while pending): the first outcome writes it whole; a
  // redelivery needs a stored one; a later `create` keeps what is stored.
  const first = firstRecord({ ...message(40), round: nowMs - 500, payload: { id: 'evt_40', type: 'client.created' } as DeliveryMessage['payload'] }, 30);
  expect(await store.transition(ref(40), { to: 'redelivered', create: first })).toBe(false);
  expect(await store.getOne(key(40))).toBeUndefined();
  expect(await store.transition(ref(40), { to: 'attempted', attempt: attempt(1), nextAttemptAt: at(nowMs), create: first })).toBe(true);
  expect(await store.getOne(key(40))).toEqual({ ...first, attempts: [attempt(1)], nextAttemptAt: at(nowMs), updatedAt: at(nowMs), version: 1 });
  expect(await store.transition(ref(40), { to: 'delivered', attempt: attempt(2, 204), create: { ...first, createdAt: 'not kept', eventType: 'not kept' } })).toBe(true);
  expect(await store.getOne(key(40))).toMatchObject({ createdAt: first.createdAt, eventType: 'client.created', status: 'delivered', attempts: [attempt(1), attempt(2, 204)], version: 2 });
  // Held on the queue before any attempt: the record written, showing why it waits.
  expect(await store.transition(ref(42), { to: 'held', untilMs: nowMs + 60_000, reason: 'circuit open', create: { ...first, ...key(42), id: deliveryId(42) } })).toBe(true);
  expect(await store.getOne(key(42))).toMatchObject({ status: 'pending', attempts: [], nextAttemptAt: at(nowMs + 60_000), deferredReason: 'circuit open', version: 1 });
  expect(await store.transition(ref(41), { to: 'attempted', attempt: attempt(1), nextAttemptAt: at(nowMs), ifVersion: 3, create: first })).toBe(false); // not what a new record is at

  // attempted, parked in the due index (a retry a day away), then unparked by the sweeper.
  nowMs += 1000;
  const due = dueKeys(deliveryId(1), park(24).untilMs);
  expect(await store.transition(ref(1), { to: 'attempted', attempt: attempt(1), nextAttemptAt: at(park(24).untilMs), park: park(24) })).toBe(true);
  expect(await store.getOne(key(1))).toMatchObject({ status: 'pending', attempts: [attempt(1)], nextAttemptAt: at(park(24).untilMs), ...due, dueRound: park(24).round, updatedAt: at(nowMs) });
  expect((await store.dueIn(due.duePk, park(24).untilMs, 10)).keys).toContainEqual({ ...key(1), dueAt: due.dueAt });
  expect((await store.dueIn(due.duePk, park(24).untilMs - 1, 10)).keys).not.toContainEqual(expect.objectContaining(key(1)));
  expect((await store.requeueable()).map((i) => i.id)).not.toContain(deliveryId(1));
  expect(await store.transition(ref(1), { to: 'unparked', seenDueAt: due.dueAt - 1, key: key(1) })).toBe(false); // re-parked since: kept
  // The stored key the sweeper read, not one rebuilt from the reference.
  expect(await store.transition({ organizationId: 'org_elsewhere', deliveryId: 'dlv_elsewhere' }, { to: 'unparked', seenDueAt: due.dueAt, key: key(1) })).toBe(true);
  expect(await store.getOne(key(1))).not.toHaveProperty('duePk');

  // parked without an attempt (isolation), then delivered: out of the due index, the wait's traces gone.
  nowMs += 1000;
  expect(await store.transition(ref(2), { to: 'parked', park: { untilMs: nowMs + 3_600_000 }, reason: 'circuit open' })).toBe(true);
  expect(await store.getOne(key(2))).toMatchObject({ status: 'pending', attempts: [], deferredReason: 'circuit open', ...dueKeys(deliveryId(2), nowMs + 3_600_000) });
  expect(await store.transition(ref(2), { to: 'delivered', attempt: attempt(1, 204) })).toBe(true);
  const delivered = await store.getOne(key(2));
  expect(delivered).toMatchObject({ status: 'delivered', deliveredAt: at(nowMs), attempts: [attempt(1, 204)] });
  for (const gone of ['duePk', 'dueAt', 'deferredReason', 'nextAttemptAt']) expect(delivered).not.toHaveProperty(gone);

  // Leaving a delivered record: only a redelivery (or a delivered write) may.
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
  for (const n of [2, 3]) expect(await store.transition(ref(n), { to: 'redelivered' })).toBe(true);
  expect(await store.getOne(key(3))).toMatchObject({ status: 'pending', redrivenAt: at(nowMs), queuedAt: at(nowMs) });
  expect(await store.getOne(key(3))).not.toHaveProperty('reason');
  expect(await store.transition(ref(9), { to: 'redelivered' })).toBe(false);
  expect(await store.getOne(key(9))).toBeUndefined(); // no transition without `create` creates a record
  // (The table is the suite's: other tests' pending deliveries are in it too.)
  expect((await store.requeueable()).filter((i) => i.organizationId === organizationId).map((i) => i.id).sort()).toEqual([1, 2, 3, 42, 6].map(deliveryId)); // 42: held, no attempt

  // The attempt log stays bounded: the most recent kept, the older ones counted.
  for (let n = 1; n <= MAX_KEPT_ATTEMPTS + 5; n++) await store.transition(ref(6), { to: 'attempted', attempt: attempt(n), nextAttemptAt: at(nowMs) });
  const bounded = await store.getOne(key(6));
  expect((bounded!.attempts as DeliveryAttempt[]).map((a) => a.attempt)).toEqual(Array.from({ length: MAX_KEPT_ATTEMPTS }, (_, i) => i + 6));
  expect(bounded!.olderAttempts).toBe(5);

  await missingRecords(store);
  await versionsAndRounds(store);
  await limits(store);
  await dueCap(store);
  await batchWrites(impl);

  return (await store.deliveriesOf(organizationId)).sort((a, b) => String(a.id).localeCompare(String(b.id)));
}

/** Every transition is refused on a missing record, and creates none (`#s <> :was` alone would hold on one). */
async function missingRecords(store: DeliveryStore): Promise<void> {
  for (const t of [
    { to: 'attempted', attempt: attempt(1), nextAttemptAt: at(nowMs) }, { to: 'delivered', attempt: attempt(1, 204) },
    { to: 'delivered', attempt: attempt(1, 204), unlessDeliveredAt: at(0) }, { to: 'delivered', attempt: attempt(1, 204), ifVersion: 0 },
    { to: 'failed', reason: 'x' }, { to: 'skipped', reason: 'x' }, { to: 'parked', park: park(1), reason: 'x' },
    { to: 'redelivered' }, { to: 'dead-lettered', reason: 'x' }, { to: 'unparked', seenDueAt: 1, key: key(9) },
  ] as const) expect(await store.transition(ref(9), t)).toBe(false);
  expect(await store.getOne(key(9))).toBeUndefined();
  // `delivered` unless that very write landed: goes ahead over another deliveredAt (or none).
  expect(await store.transition(ref(4), { to: 'delivered', attempt: attempt(2, 204), unlessDeliveredAt: at(0) })).toBe(true);
  expect(await store.getOne(key(4))).toMatchObject({ status: 'delivered', deliveredAt: at(nowMs) });
  // Parking leaves a pending record only (5 was skipped).
  expect(await store.transition(ref(5), { to: 'parked', park: park(1), reason: 'x' })).toBe(false);
}

/** Every transition adds 1 to the version (none stored: 0); `ifVersion` and `round` refuse a write made stale by another. */
async function versionsAndRounds(store: DeliveryStore): Promise<void> {
  nowMs += 1000;
  await store.recorded([record(7)]);
  const parking = { to: 'parked', park: park(1), reason: 'circuit open' } as const;
  expect(await store.transition(ref(7), { ...parking, ifVersion: 1 })).toBe(false);
  expect(await store.transition(ref(7), { ...parking, ifVersion: 0, round: nowMs })).toBe(true); // no version stored, never redelivered
  expect(await store.getOne(key(7))).toMatchObject({ version: 1, dueRound: park(1).round, deferredReason: 'circuit open' });
  expect(await store.transition(ref(7), { ...parking, ifVersion: 0 })).toBe(false);
  nowMs += 1000;
  expect(await store.transition(ref(7), { to: 'redelivered' })).toBe(true);
  // An outcome of the round before the redelivery lands on nothing; the new round's does.
  const earlier = nowMs - 1;
  for (const t of [
    { to: 'attempted', attempt: attempt(5), nextAttemptAt: at(nowMs) }, { to: 'failed', reason: 'no success after 5 attempts', attempt: attempt(5) },
    { to: 'skipped', reason: 'x' }, parking, { to: 'dead-lettered', reason: 'x' },
  ] as const) expect(await store.transition(ref(7), { ...t, round: earlier })).toBe(false);
  expect(await store.transition(ref(7), { to: 'attempted', attempt: attempt(1), nextAttemptAt: at(nowMs), round: nowMs, ifVersion: 2 })).toBe(true);
  expect(await store.getOne(key(7))).toMatchObject({ status: 'pending', version: 3, attempts: [attempt(1)], redrivenAt: at(nowMs) });
}

/** DynamoDB's bounds hold in both: a batch with a key twice, an item over 400 KB: refused, nothing written. */
async function limits(store: DeliveryStore): Promise<void> {
  await expect(store.recorded([record(8), record(8)])).rejects.toThrow();
  await expect(store.recorded([{ ...record(8), note: 'x'.repeat(410 * 1024) }])).rejects.toThrow();
  expect(await store.getOne(key(8))).toBeUndefined();
  await store.recorded(Array.from({ length: 30 }, (_, i) => record(100 + i))); // more than one call's 25
  expect(await store.get(Array.from({ length: 30 }, (_, i) => key(100 + i)))).toHaveLength(30);
}

/** `complete` says whether entries were left out: at exactly `cap` entries, none were. */
async function dueCap(store: DeliveryStore): Promise<void> {
  const ids = Array.from({ length: 16 }, (_, i) => 10 + i);
  await store.recorded(ids.map(record));
  for (const n of ids) expect(await store.transition(ref(n), { to: 'parked', park: { untilMs: dueBase + n }, reason: 'cap' })).toBe(true);
  const horizon = dueBase + 100;
  for (const shard of new Set(ids.map((n) => dueKeys(deliveryId(n), dueBase + n).duePk))) {
    const all = (await store.dueIn(shard, horizon, 1_000)).keys.length; // ours, and any a crashed run left
    expect(await store.dueIn(shard, horizon, all)).toMatchObject({ complete: true });
    expect((await store.dueIn(shard, horizon, all)).keys).toHaveLength(all);
    if (all > 1) expect(await store.dueIn(shard, horizon, all - 1)).toMatchObject({ complete: false });
  }
  for (const n of ids) expect(await store.transition(ref(n), { to: 'unparked', seenDueAt: dueBase + n, key: key(n) })).toBe(true);
}

/**
 * A batch's delivered write is conditional on the version it read: a record changed since (another
 * copy's failed attempt, then a redelivery) keeps both, the success appended after them.
 */
async function batchWrites(impl: Implementation): Promise<void> {
  const { store, deps } = impl;
  nowMs += 1000;
  await store.recorded([record(26), record(27)]);
  const reads = await readBatchRecords(deps, [message(26), message(27)]);
  const writes = new DeliveredWrites();
  const success = attempt(1, 204);
  const failure = attempt(1, 500);
  for (const n of [26, 27]) writes.add(message(n), reads.get(deliveryId(n))!, success);
  expect(await store.transition(ref(26), { to: 'attempted', attempt: failure, nextAttemptAt: at(nowMs + 60_000) })).toBe(true);
  nowMs += 1000;
  expect(await store.transition(ref(26), { to: 'redelivered' })).toBe(true);
  expect(await writes.flush(deps)).toEqual(new Set());
  expect(await store.getOne(key(26))).toMatchObject({ status: 'delivered', redrivenAt: at(nowMs), attempts: [failure, success], deliveredAt: success.at, version: 3 });
  expect(await store.getOne(key(27))).toMatchObject({ status: 'delivered', attempts: [success], deliveredAt: success.at, version: 1 });
}

async function queueBehaviours(impl: Implementation): Promise<void> {
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

  it('pages an organization’s records by creation, newest first, within a time range, event items left out', async () => {
    const org = `org_created_${randomUUID().slice(0, 8)}`;
    const created = (n: number, minute: number): StoredItem => ({ ...keys.delivery(org, `dlv_c${n}`), entity: 'delivery', id: `dlv_c${n}`, organizationId: org, status: 'pending', createdAt: `2026-11-26T09:0${minute}:00.000Z` });
    await impl.store.recorded([created(1, 1), created(2, 2), created(3, 3), created(4, 4), created(5, 5), { ...keys.event(org, 'evt_c'), entity: 'event' }]);
    const ids = (page: { keys: { sk: string }[] }) => page.keys.map((k) => k.sk.slice(keys.deliveryPrefix.length));
    const first = await impl.store.newestDeliveries(org, { limit: 2 });
    expect(ids(first)).toEqual(['dlv_c5', 'dlv_c4']);
    expect(first.next).toEqual({ ...keys.delivery(org, 'dlv_c4'), createdAt: '2026-11-26T09:04:00.000Z' });
    const second = await impl.store.newestDeliveries(org, { limit: 10, after: first.next });
    expect(ids(second)).toEqual(['dlv_c3', 'dlv_c2', 'dlv_c1']);
    expect(second.next).toBeUndefined();
    const ranged = await impl.store.newestDeliveries(org, { limit: 10, since: '2026-11-26T09:02:00.000Z', until: '2026-11-26T09:04:00.000Z' });
    expect(ids(ranged)).toEqual(['dlv_c4', 'dlv_c3', 'dlv_c2']);
    expect(ids(await impl.store.newestDeliveries(org, { limit: 10, since: '2026-11-26T09:04:00.000Z' }))).toEqual(['dlv_c5', 'dlv_c4']);
    expect(ids(await impl.store.newestDeliveries(org, { limit: 10, until: '2026-11-26T09:01:00.000Z' }))).toEqual(['dlv_c1']);
  });
});

describe('the attempt log’s trim on DynamoDB Local', () => {
  it('is best effort: a throttled trim leaves the attempt recorded once (the transition landed), and the next append trims', async () => {
    const { deps } = await testStack();
    let throttled = 0;
    // A throttled trim (an emulator never throttles): the second UpdateItem of an append fails.
    const doc = {
      send: (command: { input?: { UpdateExpression?: string } }) => {
        if (command.input?.UpdateExpression?.startsWith('REMOVE attempts[') && throttled++ === 0) {
          return Promise.reject(Object.assign(new Error('Rate of requests exceeds the allowed throughput'), { name: 'ProvisionedThroughputExceededException' }));
        }
        return deps.doc.send(command as Parameters<Deps['doc']['send']>[0]);
      },
    } as unknown as Deps['doc'];
    const store = dynamoDeliveryStore({ ...deps, doc, now: clock });
    const full = Array.from({ length: MAX_KEPT_ATTEMPTS }, (_, i) => attempt(i + 1));
    await store.recorded([{ ...record(50), attempts: full }]);
    expect(await store.transition(ref(50), { to: 'attempted', attempt: attempt(21), nextAttemptAt: at(nowMs) })).toBe(true);
    expect(throttled).toBe(1);
    const untrimmed = (await store.getOne(key(50), { consistent: true }))!;
    expect((untrimmed.attempts as DeliveryAttempt[]).map((a) => a.attempt)).toEqual([...full.map((a) => a.attempt), 21]);
    expect(await store.transition(ref(50), { to: 'attempted', attempt: attempt(22), nextAttemptAt: at(nowMs) })).toBe(true);
    const trimmed = (await store.getOne(key(50), { consistent: true }))!;
    expect((trimmed.attempts as DeliveryAttempt[]).map((a) => a.attempt)).toEqual(Array.from({ length: MAX_KEPT_ATTEMPTS }, (_, i) => i + 3));
    expect(trimmed.olderAttempts).toBe(2);
  });
});

describe('both implementations', () => {
  it('leave the very same records', () => {
    expect(Object.keys(left)).toHaveLength(2);
    expect(left.memory).toEqual(left['DynamoDB Local and fauxqs']);
  });
});
