/**
 * Isolation (docs/webhooks.md "Isolation") on the in-memory delivery core with a simulated clock:
 * one organization's receiver accepts connections and never answers, another's is healthy. The
 * healthy one gets everything; the hanging one never holds more than its bound of concurrent
 * requests; its circuit opens, and while open nothing is attempted (no attempt used), across a
 * restart (the queue's messages lost, pending deliveries queued again from their records); when it
 * half-opens one probe goes out, its success closes the circuit and every event arrives, with its
 * webhook-id, none failed. The circuit's minute open costs no real time here. (Moved from
 * delivery/isolation.test.ts, which keeps the scenario end to end on a stack of its own.)
 */
import { describe, it, expect, afterAll } from '@jest/globals';
import { testStack } from '../support/stack.js';
import { Receiver } from '../support/receiver.js';
import { HangingReceiver, ISOLATION_BOUND, isolationSettings } from '../support/hanging-receiver.js';
import { listEndpoints } from '../../../functions/core/delivery/endpoints.js';
import { clientCreated, DeliveryCore } from './support/delivery-core.js';
import { tenantAt } from './support/tenant.js';

const BOUND = ISOLATION_BOUND;
// A minute open (as long as the end-to-end stack's restart needed): simulated, it costs nothing.
const settings = {
  ...isolationSettings,
  circuitOpenSeconds: 60,
  circuitMaxOpenSeconds: 120,
};

const healthy = new Receiver();
let hanging: HangingReceiver;

afterAll(async () => {
  await healthy.stop();
  await hanging.stop();
});

describe('a hanging receiver (in-memory core, simulated clock)', () => {
  it('holds at most its bound, delays nobody else, is not attempted while its circuit is open (restart included), and gets everything once it answers', async () => {
    const c = new DeliveryCore((await testStack()).deps, settings);
    await healthy.start();
    hanging = await new HangingReceiver(c.now).start();
    const good = await tenantAt(c.deps, 'Healthy Co', (secret) => healthy.script('/core-ok', secret, { status: 204 }));
    const bad = await tenantAt(c.deps, 'Hanging Co', (secret) => { hanging.secret = secret; return hanging.url; });

    const total = 10;
    await c.publish(bad.endpoint, ...Array.from({ length: total }, (_, i) => clientCreated(bad.organizationId, `Hang ${i}`)));
    await c.publish(good.endpoint, ...Array.from({ length: total }, (_, i) => clientCreated(good.organizationId, `Fine ${i}`)));

    // The healthy organization's events all arrive while the other receiver hangs.
    await c.until(() => healthy.on('/core-ok').length >= total, { what: 'the healthy deliveries' });
    expect(healthy.on('/core-ok').every((r) => r.event && !r.verifyError)).toBe(true);

    // The circuit opens after the threshold's failures; the deliveries stay pending, not failed.
    const opened = await c.until(async () => {
      const [endpoint] = await listEndpoints(c.deps, bad.organizationId);
      return endpoint.circuit.state === 'open' ? endpoint.circuit : undefined;
    }, { what: 'the circuit to open' });
    const openUntil = Date.parse(opened.until!);

    // A restart while the circuit is open: the queue's messages are lost, pending deliveries queued again.
    expect(await c.restart()).toBe(total);
    expect((await listEndpoints(c.deps, bad.organizationId))[0].circuit).toEqual(opened); // the state is on the endpoint item

    // While open: nothing is sent to it and no attempt is used.
    const seenWhileOpen = hanging.requests.length;
    // Per delivery (one without a record yet has made no attempt: its first outcome writes the record).
    const attemptsWhileOpen = new Map((await c.deliveries(bad.organizationId)).map((d) => [d.id, d.attempts.length]));
    await c.until(() => c.now() >= openUntil - 1500, { what: 'the end of the open circuit' });
    expect(hanging.requests.length).toBe(seenWhileOpen);
    // Those held before their first attempt have no record yet (the first outcome writes it: queue.ts), or a parked one.
    const pending = await c.deliveries(bad.organizationId);
    expect(pending.length).toBeLessThanOrEqual(total);
    expect(pending.every((d) => d.status === 'pending')).toBe(true);
    expect(pending.map((d) => d.attempts.length)).toEqual(pending.map((d) => attemptsWhileOpen.get(d.id) ?? 0));
    expect([...attemptsWhileOpen.values()].reduce((a, b) => a + b, 0)).toBeLessThan(total); // most were never attempted

    // The receiver answers again: when the circuit half-opens, one probe goes first; its success closes it.
    hanging.healed = true;
    const delivered = await c.until(async () => {
      const list = await c.deliveries(bad.organizationId);
      return list.length === total && list.every((d) => d.status === 'delivered') ? list : undefined;
    }, { what: 'every delivery of the healed receiver' });
    const afterOpen = hanging.requests.slice(seenWhileOpen);
    expect(afterOpen[0].at).toBeGreaterThanOrEqual(openUntil - 50);
    expect(afterOpen.slice(1).every((r) => r.at >= afterOpen[0].answeredAt!)).toBe(true); // the probe alone, then the rest
    expect((await listEndpoints(c.deps, bad.organizationId))[0].circuit).toEqual({ state: 'closed' });

    // Every event arrived signed, with its webhook-id; no delivery used all its attempts.
    expect(new Set(hanging.requests.filter((r) => r.answeredAt && r.verified).map((r) => r.id))).toEqual(new Set(delivered.map((d) => d.payload.id)));
    expect(delivered.every((d) => d.attempts.length < 5)).toBe(true);
    // Never more than the bound at once at the hanging receiver (main lane and slow lane together).
    expect(hanging.maxOpen).toBeLessThanOrEqual(BOUND);
    expect(hanging.maxOpen).toBeGreaterThan(0);
  });
});
