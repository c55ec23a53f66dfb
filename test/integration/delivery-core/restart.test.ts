/**
 * Restarts on the in-memory delivery core: the stack stopped in the middle of delivering a burst
 * (attempts in flight: what they sent stays sent, their outcomes are never written) and started
 * again on the same records. Every event ends delivered, none lost; duplicates carry the same
 * webhook-id. A retry parked in the due index outlives a restart and goes out when due. (Moved from
 * events/restart.test.ts, which keeps a real kill of the whole stack in the middle of an import.)
 */
import { describe, it, expect } from '@jest/globals';
import { eventually, testStack } from '../support/stack.js';
import { receiverForFile } from '../support/receiver.js';
import { testSettings } from '../global-setup.js';
import { clientCreated, DeliveryCore } from './support/delivery-core.js';
import { tenantWithScript } from './support/tenant.js';

const receiver = receiverForFile();

/** The suite's settings; 40 attempts in flight to one endpoint, so a burst is one round of the pollers' concurrency. */
const core = async () => new DeliveryCore((await testStack()).deps, { ...testSettings, maxInFlightPerEndpoint: 40 });

describe('a restart in the middle of delivering (in-memory core)', () => {
  it('loses nothing: every event ends delivered, duplicates share their webhook-id', async () => {
    const c = await core();
    const t = await tenantWithScript(c.deps, receiver, '/core-restart', { status: 200, delayMs: 500 });
    const total = 100; // more than one round of the pollers' concurrency (40), each answer taking 500 ms
    const events = Array.from({ length: total }, (_, i) => clientCreated(t.organizationId, `Burst ${i}`));
    await c.publish(t.endpoint, ...events);
    const round = c.round();
    await eventually(async () => receiver.on('/core-restart').length >= 3, { what: 'the first deliveries' });
    expect(await c.restart()).toBe(total); // mid-round: nothing it attempted is recorded yet
    await round.catch(() => undefined);
    const before = receiver.on('/core-restart').length;
    expect(before).toBeLessThan(total);

    const delivered = await c.until(async () => {
      const list = await c.deliveries(t.organizationId);
      return list.length === total && list.every((d) => d.status === 'delivered') ? list : undefined;
    }, { what: 'every delivery' });
    const requests = receiver.on('/core-restart');
    expect(requests.every((r) => !r.verifyError)).toBe(true);
    expect(requests.length).toBeGreaterThan(total); // the round cut off sent some twice
    const ids = new Set(requests.map((r) => r.headers['webhook-id']));
    expect(ids).toEqual(new Set(events.map((e) => e.id)));
    expect(new Set(delivered.map((d) => d.payload.id))).toEqual(ids);
    // A duplicate is the same event again, never a different id for the same client.
    const clientsPerId = new Map<string, Set<unknown>>();
    for (const r of requests) clientsPerId.set(String(r.headers['webhook-id']), (clientsPerId.get(String(r.headers['webhook-id'])) ?? new Set()).add(r.event!.data.object.id));
    expect([...clientsPerId.values()].every((s) => s.size === 1)).toBe(true);
  });

  it('a retry parked in the due index (out of the queue) outlives a restart and goes out when due, with its webhook-id and attempt number', async () => {
    const c = await core();
    // Retry-After 6 s: longer than the test settings' queue delay (2 s), so the retry leaves the queue.
    const t = await tenantWithScript(c.deps, receiver, '/core-parked', { status: 503, headers: { 'Retry-After': '6' } }, { status: 204 });
    const event = clientCreated(t.organizationId, 'Parked Lead');
    await c.publish(t.endpoint, event);
    const [parked] = await c.until(async () => {
      const list = await c.deliveries(t.organizationId);
      return list[0]?.attempts.length === 1 && list[0].status === 'pending' ? list : undefined;
    }, { what: 'the first, failed attempt' });
    expect(await c.restart()).toBe(0); // the queue's messages are gone; the parked retry is in the store only

    const [delivered] = await c.until(async () => {
      const list = await c.deliveries(t.organizationId);
      return list[0]?.status === 'delivered' ? list : undefined;
    }, { what: 'the parked retry, delivered after the restart' });
    expect(delivered.attempts.map((a) => [a.attempt, a.statusCode])).toEqual([[1, 503], [2, 204]]);
    expect(Date.parse(delivered.attempts[1].at)).toBeGreaterThanOrEqual(Date.parse(parked.nextAttemptAt!));
    const requests = receiver.on('/core-parked');
    expect(requests.map((r) => r.headers['webhook-id'])).toEqual([event.id, event.id]);
    expect(requests.every((r) => !r.verifyError)).toBe(true);
  });
});
