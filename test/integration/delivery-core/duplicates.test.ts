/**
 * A duplicate message of a delivery (at-least-once queues) whose attempt fails while another copy
 * delivers it: the failed attempt's transition finds the record delivered and writes nothing
 * (docs/data-model.md "The delivery record": attempted and failed leave anything but delivered),
 * so the record stays delivered and no retry is queued. Before the transitions were conditional,
 * the failed attempt turned the record back to pending and queued a retry.
 */
import { describe, it, expect, afterAll } from '@jest/globals';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { testStack } from '../support/stack.js';
import { clientCreated, DeliveryCore } from './support/delivery-core.js';
import { tenantAt } from './support/tenant.js';

let answer: (() => Promise<void>) | undefined;
const server = createServer((req, res) => {
  req.resume();
  req.on('end', () => void (answer?.() ?? Promise.resolve()).then(() => res.writeHead(500).end('boom')));
});
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

describe('a duplicate’s failed attempt after a delivery (in-memory core)', () => {
  it('leaves the record delivered and queues no retry', async () => {
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const c = new DeliveryCore((await testStack()).deps, { retryJitter: 0 });
    const t = await tenantAt(c.deps, 'Duplicate Co', () => `http://127.0.0.1:${(server.address() as AddressInfo).port}/dup`);
    const [message] = await c.publish(t.endpoint, clientCreated(t.organizationId));
    // While this copy's POST is out, another copy delivers it.
    answer = async () => {
      expect(await c.store.transition(message, { to: 'delivered', attempt: { at: new Date(c.now()).toISOString(), attempt: 1, latencyMs: 1, statusCode: 204 } })).toBe(true);
    };
    expect(await c.round()).toBe(1);
    const [record] = await c.deliveries(t.organizationId);
    expect(record).toMatchObject({ status: 'delivered', attempts: [expect.objectContaining({ statusCode: 204 })] });
    expect(record.nextAttemptAt).toBeUndefined();
    expect(c.queue.messages('deliveryQueue')).toEqual([]); // consumed, and no retry sent
    expect(c.store.writes.filter((w) => w === 'attempted')).toEqual([]);
  });
});
