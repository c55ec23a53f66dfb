/** The circuit breaker's decisions (docs/architecture.md#fair-delivery) and the per-endpoint bound on attempts in flight. */
import { describe, it, expect } from '@jest/globals';
import { defaultConfig } from '../../../functions/core/platform/config.js';
import type { CircuitRecord } from '../../../functions/core/platform/model.js';
import {
  afterAttempt, circuitAttributes, circuitOf, circuitView, gate, laneFor, openSeconds, probeWindowMs, reachesThreshold,
} from '../../../functions/core/delivery/circuit-breaker.js';
import { laneOf } from '../../../functions/core/delivery/circuit-store.js';
import { EndpointSlots } from '../../../functions/core/delivery/endpoint-concurrency.js';

const settings = defaultConfig;
const t0 = Date.parse('2026-11-23T02:00:00.000Z');
const iso = (ms: number) => new Date(ms).toISOString();

/** Plays the stored state through a sequence of outcomes, as circuit-store.ts writes it. */
function play(circuit: CircuitRecord | undefined, ok: boolean, probe: boolean, now: number): CircuitRecord | undefined {
  const t = afterAttempt(circuit, { ok, probe, failedHere: false }, now, settings);
  if (t.kind === 'none') return circuit;
  if (t.kind === 'close') return undefined;
  if (t.kind === 'reopen') return { failures: circuit?.failures ?? 0, opens: t.opens, until: iso(t.until) };
  const failures = (circuit?.failures ?? 0) + 1;
  if (reachesThreshold(failures, settings) && !circuit?.until) return { failures, opens: 1, until: iso(now + openSeconds(1, settings) * 1000) };
  return { ...circuit, failures, opens: circuit?.opens ?? 0 };
}

describe('the circuit breaker', () => {
  it('stays closed and writes nothing while attempts succeed', () => {
    expect(gate(undefined, t0, settings)).toEqual({ kind: 'attempt' });
    expect(afterAttempt(undefined, { ok: true, probe: false, failedHere: false }, t0, settings)).toEqual({ kind: 'none' });
    expect(circuitView(undefined, t0)).toEqual({ state: 'closed' });
  });

  it(`opens after ${defaultConfig.circuitFailureThreshold} failures in a row, then parks deliveries until it half-opens`, () => {
    let c: CircuitRecord | undefined;
    for (let i = 1; i < settings.circuitFailureThreshold; i++) {
      c = play(c, false, false, t0 + i);
      expect(gate(c, t0 + i, settings)).toEqual({ kind: 'attempt' });
    }
    c = play(c, false, false, t0 + 10);
    const until = t0 + 10 + settings.circuitOpenSeconds * 1000;
    expect(c).toEqual({ failures: settings.circuitFailureThreshold, opens: 1, until: iso(until) });
    expect(circuitView(c, t0 + 11)).toEqual({ state: 'open', until: iso(until) });
    expect(gate(c, t0 + 11, settings)).toEqual({ kind: 'park', until, reason: `circuit open until ${iso(until)}` });
    // Due: one probe, which holds the circuit for its time-out and a margin.
    expect(gate(c, until, settings)).toEqual({ kind: 'probe', deadline: until + probeWindowMs(settings) });
    expect(circuitView(c, until)).toEqual({ state: 'half-open', until: iso(until) });
  });

  it('a success between failures starts the count again', () => {
    let c: CircuitRecord | undefined;
    for (let i = 1; i < settings.circuitFailureThreshold; i++) c = play(c, false, false, t0 + i);
    c = play(c, true, false, t0 + 100);
    expect(c).toBeUndefined();
    c = play(c, false, false, t0 + 200);
    expect(gate(c, t0 + 201, settings)).toEqual({ kind: 'attempt' });
  });

  it('a container that saw a failure clears the count on its next success, even if its cached copy shows none', () => {
    expect(afterAttempt(undefined, { ok: true, probe: false, failedHere: true }, t0, settings)).toEqual({ kind: 'close' });
  });

  it('parks everyone else while a claimed probe runs; the probe’s success closes the circuit', () => {
    const probing: CircuitRecord = { failures: 5, opens: 1, until: iso(t0 + 15_000), probing: true };
    expect(circuitView(probing, t0)).toEqual({ state: 'half-open', until: iso(t0 + 15_000) });
    expect(gate(probing, t0, settings)).toEqual({ kind: 'park', until: t0 + 15_000, reason: 'circuit half-open: a probe is under way' });
    expect(play(probing, true, true, t0 + 100)).toBeUndefined();
  });

  it('a failed probe re-opens the circuit for twice as long each time, up to the cap', () => {
    let c: CircuitRecord | undefined = { failures: 5, opens: 1, until: iso(t0), probing: true };
    const waits: number[] = [];
    for (let n = 0; n < 10; n++) {
      c = play(c, false, true, t0);
      waits.push((Date.parse(c!.until!) - t0) / 1000);
      expect(circuitView(c, t0 + 1).state).toBe('open');
    }
    expect(waits.slice(0, 4)).toEqual([60, 120, 240, 480]);
    expect(Math.max(...waits)).toBe(settings.circuitMaxOpenSeconds);
    expect(openSeconds(1, settings)).toBe(settings.circuitOpenSeconds);
  });

  it('a crashed probe is replaced: past its deadline the next delivery probes again', () => {
    const stale: CircuitRecord = { failures: 5, opens: 2, until: iso(t0), probing: true };
    expect(gate(stale, t0 + 1, settings)).toEqual({ kind: 'probe', deadline: t0 + 1 + probeWindowMs(settings) });
  });

  it('reads and writes the stored attributes both ways', () => {
    const c: CircuitRecord = { failures: 3, opens: 2, until: iso(t0), probing: true };
    expect(circuitOf(circuitAttributes(c))).toEqual(c);
    expect(circuitOf({})).toBeUndefined();
    expect(circuitAttributes(undefined)).toEqual({});
  });
});

describe('the lanes', () => {
  it('attempt a healthy endpoint in the main lane; failures, a circuit not closed or a slow mark send it to the slow lane', () => {
    expect(laneFor(undefined, t0, false)).toBe('main');
    expect(laneFor(undefined, t0, true)).toBe('slow'); // this container saw it fail or time out
    expect(laneFor({ failures: 1, opens: 0 }, t0, false)).toBe('slow');
    expect(laneFor({ failures: 5, opens: 1, until: iso(t0 - 1) }, t0, false)).toBe('slow');
    expect(laneFor({ failures: 0, opens: 0, slowUntil: iso(t0 + 1) }, t0, false)).toBe('slow');
    expect(laneFor({ failures: 0, opens: 0, slowUntil: iso(t0) }, t0, false)).toBe('main');
    expect(circuitView({ failures: 0, opens: 0, slowUntil: iso(t0 + 1) }, t0)).toEqual({ state: 'closed', slowLane: true });
  });

  it('a slow success keeps the endpoint in the slow lane (one write when that changes); a fast one takes it back', () => {
    const marked = { failures: 0, opens: 0, slowUntil: iso(t0 + 60_000) };
    expect(afterAttempt(marked, { ok: true, probe: false, failedHere: false, slow: true }, t0, settings)).toEqual({ kind: 'none' });
    expect(afterAttempt(undefined, { ok: true, probe: false, failedHere: false, slow: true }, t0, settings)).toEqual({ kind: 'close', slowUntil: t0 + settings.slowLaneHoldSeconds * 1000 });
    expect(afterAttempt({ failures: 5, opens: 1, until: iso(t0), probing: true }, { ok: true, probe: true, failedHere: false, slow: true }, t0, settings))
      .toEqual({ kind: 'close', slowUntil: t0 + settings.slowLaneHoldSeconds * 1000 });
    expect(afterAttempt(marked, { ok: true, probe: false, failedHere: false, slow: false }, t0, settings)).toEqual({ kind: 'close' });
  });

  it('tell the slow lane’s batches from the main lane’s by their event source', () => {
    const deps = { queues: { deliveryQueue: 'http://sqs.local:1/000000000000/crm-deliveryQueue', deliverySlowQueue: 'http://sqs.local:1/000000000000/crm-deliverySlowQueue' } } as never;
    expect(laneOf(deps, 'arn:aws:sqs:us-east-1:000000000000:crm-deliverySlowQueue')).toBe('slow');
    expect(laneOf(deps, 'arn:aws:sqs:us-east-1:000000000000:crm-deliveryQueue')).toBe('main');
    expect(laneOf(deps, undefined)).toBe('main');
  });
});

describe('attempts in flight per endpoint', () => {
  it('admits `bound` at once; one more waits for a slot, or gives up after the wait', async () => {
    const slots = new EndpointSlots();
    const releases = await Promise.all([slots.acquire('ep_a', 2, 0), slots.acquire('ep_a', 2, 0)]);
    expect(slots.inFlightTo('ep_a')).toBe(2);
    expect(await slots.acquire('ep_a', 2, 20)).toBeUndefined();
    // Another endpoint is not affected.
    const other = await slots.acquire('ep_b', 2, 0);
    expect(other).toBeDefined();
    other!();
    const waiter = slots.acquire('ep_a', 2, 1000);
    releases[0]!();
    const third = await waiter;
    expect(third).toBeDefined();
    expect(slots.inFlightTo('ep_a')).toBe(2);
    releases[1]!();
    third!();
    third!(); // releasing twice frees one slot only
    expect(slots.inFlightTo('ep_a')).toBe(0);
  });

  it('knows when attempts to an endpoint have stalled: the oldest in flight is old and none ended since (a slow receiver that answers never looks stalled)', async () => {
    const slots = new EndpointSlots();
    let clock = 1_000;
    const now = () => clock;
    const first = await slots.acquire('ep_c', 4, 0, now);
    clock = 1_400;
    const second = await slots.acquire('ep_c', 4, 0, now);
    clock = 1_700;
    expect(slots.stalledMs('ep_c', clock)).toBe(700);
    first!(); // an answer (or a time-out) at 1 700: not stalled, though the second has waited 300 ms
    expect(slots.stalledMs('ep_c', clock)).toBe(0);
    second!();
    clock = 2_000;
    const third = await slots.acquire('ep_c', 4, 0, now);
    clock = 2_900;
    expect(slots.stalledMs('ep_c', clock)).toBe(900); // nothing ended since the third started
    third!();
    expect(slots.stalledMs('ep_c', clock)).toBe(0);
  });
});
