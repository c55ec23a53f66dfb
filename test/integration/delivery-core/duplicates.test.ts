/**
 * A duplicate message of a delivery (at-least-once queues) whose attempt fails while another copy
 * delivers it: the failed attempt's transition finds the record delivered and writes nothing
 * (docs/data-model.md "The delivery record": attempted and failed leave anything but delivered),
 * so the record stays delivered and no retry is queued. Before the transitions were conditional,
 * the failed attempt turned the record back to pending and queued a retry. Likewise an outcome of a
 * round a redelivery has ended since (pinned to its round), and one whose record is gone.
 */
import { describe, it, expect, afterAll, beforeAll } from '@jest/globals';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { testStack } from '../support/stack.js';
import { clientCreated, DeliveryCore } from './support/delivery-core.js';
import { deliverBatch } from '../../../functions/core/delivery/deliver.js';
import { redeliverDelivery } from '../../../functions/core/delivery/redeliver.js';
import { keys, type DeliveryMessage } from '../../../functions/core/platform/model.js';
import { tenantAt } from './support/tenant.js';
import { firstRecord } from '../../../functions/core/delivery/delivery-state.js';

/** The record a message's first outcome writes (the fan-out puts none while a delivery is pending). */
const created = (message: DeliveryMessage) => ({ create: firstRecord({ ...message, round: message.round! }, 30) });

let answer: (() => Promise<void>) | undefined;
const server = createServer((req, res) => {
  req.resume();
  req.on('end', () => void (answer?.() ?? Promise.resolve()).then(() => res.writeHead(500).end('boom')));
});
beforeAll(() => new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve)));
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

describe('a duplicate’s failed attempt after a delivery (in-memory core)', () => {
  it('leaves the record delivered and queues no retry', async () => {
    const c = new DeliveryCore((await testStack()).deps, { retryJitter: 0 });
    const t = await tenantAt(c.deps, 'Duplicate Co', () => `http://127.0.0.1:${(server.address() as AddressInfo).port}/dup`);
    const [message] = await c.publish(t.endpoint, clientCreated(t.organizationId));
    // While this copy's POST is out, another copy delivers it (its outcome writes the record this copy found missing).
    answer = async () => {
      expect(await c.store.transition(message, { to: 'delivered', attempt: { at: new Date(c.now()).toISOString(), attempt: 1, latencyMs: 1, statusCode: 204 }, ...created(message) })).toBe(true);
    };
    expect(await c.round()).toBe(1);
    const [record] = await c.deliveries(t.organizationId);
    expect(record).toMatchObject({ status: 'delivered', attempts: [expect.objectContaining({ statusCode: 204 })] });
    expect(record.nextAttemptAt).toBeUndefined();
    expect(c.queue.messages('deliveryQueue')).toEqual([]); // consumed, and no retry sent
    expect(c.store.writes.filter((w) => w === 'attempted')).toEqual([]);
  });
});

/** One received message, delivered through the delivery function's batch code; its outcome. */
const deliverOne = async (c: DeliveryCore, message: DeliveryMessage) =>
  (await deliverBatch(c.deps, [{ messageId: 'm1', receiptHandle: 'r1', body: JSON.stringify(message), receiveCount: 1 }]))[0];

describe('an outcome the record no longer takes (in-memory core)', () => {
  it('a redelivery while the old round’s last attempt is out: the failure lands on nothing, no dead-letter copy, the new round carries on', async () => {
    const c = new DeliveryCore((await testStack()).deps, { retryJitter: 0 });
    const t = await tenantAt(c.deps, 'Redrive Race Co', () => `http://127.0.0.1:${(server.address() as AddressInfo).port}/race`);
    const [message] = await c.publish(t.endpoint, clientCreated(t.organizationId));
    c.queue.clear();
    // Four attempts of its round failed already: the one received now is its last.
    for (let n = 1; n <= 4; n++) {
      expect(await c.store.transition(message, { to: 'attempted', attempt: { at: new Date(c.now()).toISOString(), attempt: n, latencyMs: 1, statusCode: 500 }, nextAttemptAt: new Date(c.now()).toISOString(), ...created(message) })).toBe(true);
    }
    c.advance(1000);
    answer = async () => { await redeliverDelivery(c.deps, message.deliveryId); };
    expect(await deliverOne(c, message)).toMatchObject({ kind: 'skipped', reason: 'superseded: redelivered since' });
    const [record] = await c.deliveries(t.organizationId);
    expect(record).toMatchObject({ status: 'pending', redrivenAt: expect.any(String) });
    expect(record.reason).toBeUndefined();
    expect(record.attempts).toHaveLength(4);
    expect(c.queue.messages('deliveryDlq')).toEqual([]);
    expect(c.queue.messages('deliveryQueue')).toEqual([expect.objectContaining({ deliveryId: message.deliveryId, round: expect.any(Number) })]);
  });

  it('a record gone while its attempt is out: told apart from a delivered one, and not written again', async () => {
    const c = new DeliveryCore((await testStack()).deps, { retryJitter: 0 });
    const t = await tenantAt(c.deps, 'Gone Record Co', () => `http://127.0.0.1:${(server.address() as AddressInfo).port}/gone`);
    const [message] = await c.publish(t.endpoint, clientCreated(t.organizationId));
    const key = keys.delivery(message.organizationId, message.deliveryId);
    await c.store.recorded([created(message).create]); // the attempt reads it; it is gone while the POST is out
    answer = async () => { c.store.items.delete(`${key.pk}\u0000${key.sk}`); };
    expect(await deliverOne(c, message)).toMatchObject({ kind: 'skipped', reason: 'no delivery record' });
    expect(await c.store.getOne(key)).toBeUndefined();
  });
});
