/**
 * Retries on their schedule, run on the in-memory delivery core (support/delivery-core.ts) with
 * the production schedule (60 s, 10 min, 100 min, 12 h): the simulated clock jumps over the waits.
 * Each retry keeps the webhook-id; a receiver's Retry-After pushes a retry later; a wait past the
 * queue's delay leaves the queue for the due index and the sweeper sends it when due; the fifth
 * failure exhausts the delivery and its message goes to the dead-letter queue, fresh.
 * (Moved from the end-to-end delivery/delivery.test.ts, where each of these waited in real time.)
 */
import { describe, it, expect } from '@jest/globals';
import { testStack } from '../support/stack.js';
import { receiverForFile } from '../support/receiver.js';
import { defaultConfig } from '../../../functions/core/platform/config.js';
import { MAX_VISIBILITY_SECONDS } from '../../../functions/core/delivery/schedule.js';
import { keys, type DeliveryRecord } from '../../../functions/core/platform/model.js';
import { clientCreated, DeliveryCore } from './support/delivery-core.js';
import { tenantWithScript } from './support/tenant.js';

const receiver = receiverForFile();

/** The production schedule and queue delay, no jitter (the clock is simulated; HTTP is real). */
async function core(): Promise<DeliveryCore> {
  const { deps } = await testStack();
  return new DeliveryCore(deps, {
    retryScheduleSeconds: defaultConfig.retryScheduleSeconds, retryJitter: 0, queueDelayMaxSeconds: defaultConfig.queueDelayMaxSeconds,
    dueSweepLookaheadSeconds: defaultConfig.dueSweepLookaheadSeconds, circuitFailureThreshold: 100,
  });
}

/** `actual` is `expected` give or take the attempt's own time (its record is written after the POST). */
function about(actual: number, expected: number): void {
  expect(actual - expected).toBeGreaterThanOrEqual(0);
  expect(actual - expected).toBeLessThan(5_000);
}
const gaps = (d: DeliveryRecord) => d.attempts.slice(1).map((a, i) => Date.parse(a.at) - Date.parse(d.attempts[i].at));
const one = (c: DeliveryCore, organizationId: string, done: (d: DeliveryRecord) => boolean) =>
  c.until(async () => { const [d] = await c.deliveries(organizationId); return d && done(d) ? d : undefined; }, { what: 'the delivery' });

describe('the retry schedule (in-memory core, simulated clock)', () => {
  it('retries a 500 after the schedule’s first wait and keeps the webhook-id', async () => {
    const c = await core();
    const t = await tenantWithScript(c.deps, receiver, '/core-flaky', { status: 500, body: 'boom' }, { status: 200 });
    const event = clientCreated(t.organizationId, 'Retry Me');
    await c.publish(t.endpoint, event);
    const delivery = await one(c, t.organizationId, (d) => d.status === 'delivered');
    expect(delivery.attempts.map((a) => [a.attempt, a.statusCode])).toEqual([[1, 500], [2, 200]]);
    expect(delivery.attempts[0].responseBody).toBe('boom');
    about(gaps(delivery)[0], 60_000);
    const requests = receiver.on('/core-flaky');
    expect(requests.map((r) => r.headers['webhook-id'])).toEqual([event.id, event.id]);
    expect(requests.every((r) => !r.verifyError)).toBe(true);
  });

  it('honours Retry-After past the schedule, and a wait longer than a queue delay parks the retry in the due index until the sweeper sends it', async () => {
    const c = await core();
    const t = await tenantWithScript(c.deps, receiver, '/core-busy', { status: 429, headers: { 'Retry-After': '1800' } }, { status: 204 });
    await c.publish(t.endpoint, clientCreated(t.organizationId));
    const parked = await one(c, t.organizationId, (d) => d.attempts.length === 1);
    about(Date.parse(parked.nextAttemptAt!) - Date.parse(parked.attempts[0].at), 1_800_000);
    // Out of the queue (neither ready nor delayed): in the due index.
    expect(c.queue.messages('deliveryQueue')).toEqual([]);
    const key = keys.delivery(t.organizationId, parked.id);
    const [stored] = await c.store.get([key]);
    expect((await c.store.dueIn(String(stored.duePk), Infinity, 10)).keys).toEqual([{ ...key, dueAt: Date.parse(parked.nextAttemptAt!) }]);
    const delivered = await one(c, t.organizationId, (d) => d.status === 'delivered');
    about(gaps(delivered)[0], 1_800_000);
    expect((await c.store.get([key]))[0].duePk).toBeUndefined();
  });

  it('a retry due in 12 h (a day asked for) waits in the due index and goes out as attempt 5 with the same webhook-id; the fifth failure exhausts a delivery, whose message goes to the dead-letter queue fresh', async () => {
    const c = await core();
    const t = await tenantWithScript(c.deps, receiver, '/core-long-wait',
      { status: 503 }, { status: 503 }, { status: 503 }, { status: 429, headers: { 'Retry-After': '86400' } }, { status: 204 });
    const event = clientCreated(t.organizationId);
    await c.publish(t.endpoint, event);
    const fourth = await one(c, t.organizationId, (d) => d.attempts.length === 4);
    const wait = Date.parse(fourth.nextAttemptAt!) - Date.parse(fourth.attempts[3].at);
    about(wait, MAX_VISIBILITY_SECONDS * 1000); // asked for a day; a wait is capped at 12 h
    expect(c.queue.messages('deliveryQueue')).toEqual([]);
    const done = await one(c, t.organizationId, (d) => d.status === 'delivered');
    expect(done.attempts.map((x) => [x.attempt, x.statusCode])).toEqual([[1, 503], [2, 503], [3, 503], [4, 429], [5, 204]]);
    // Each wait as scheduled (the last one the 12 h cap), give or take the attempts' own time.
    const scheduled = [60_000, 600_000, 6_000_000, MAX_VISIBILITY_SECONDS * 1000];
    gaps(done).forEach((gap, i) => about(gap, scheduled[i]));
    expect(new Set(receiver.on('/core-long-wait').map((r) => r.headers['webhook-id']))).toEqual(new Set([event.id]));

    const down = await tenantWithScript(c.deps, receiver, '/core-down', { status: 503 });
    const lost = clientCreated(down.organizationId);
    await c.publish(down.endpoint, lost);
    const failed = await one(c, down.organizationId, (d) => d.status === 'failed');
    expect(failed.attempts.map((x) => x.attempt)).toEqual([1, 2, 3, 4, 5]);
    expect(failed.reason).toMatch(/5 attempts/);
    const [dead] = c.queue.messages('deliveryDlq');
    expect(dead).toMatchObject({ deliveryId: failed.id, payload: { id: lost.id } });
    expect(dead.round).toBeGreaterThanOrEqual(Date.parse(failed.attempts[4].at)); // a new round when moved back
    expect(receiver.on('/core-down')).toHaveLength(5);
  });
});
