/**
 * A circuit breaker per webhook endpoint (docs/architecture.md#fair-delivery): after `circuitFailureThreshold` failed
 * attempts in a row (time-outs included) the endpoint's circuit opens, and its deliveries are
 * parked until the circuit's `until` instead of attempted: no POST, no attempt consumed. When
 * `until` passes, one delivery claims the probe (half-open); its success closes the circuit, its
 * failure re-opens it for twice as long (capped at circuitMaxOpenSeconds).
 *
 * Two lanes (two queues, topology.ts): the main lane attempts healthy endpoints with a short
 * budget (slowLaneAfterMs); an endpoint with failures counted, a circuit not closed, or marked slow
 * (an answer slower than the budget) is attempted in the slow lane only, with the full time-out and
 * a small concurrency of its own, so it can never occupy the healthy endpoints' concurrency.
 *
 * This module decides (pure); circuit-store.ts keeps the state on the endpoint item.
 */
import type { Config } from '../platform/config.js';
import type { CircuitRecord, CircuitState } from '../platform/model.js';
import { backoffMs } from '../platform/retry.js';

export type CircuitConfig = Pick<Config, 'circuitFailureThreshold' | 'circuitOpenSeconds' | 'circuitMaxOpenSeconds' | 'deliveryTimeoutMs' | 'slowLaneHoldSeconds'>;

/**
 * What an operator sees (CLI, settings page): the state now and, unless closed, until when. A
 * closed circuit says `slowLane` while the endpoint's deliveries are attempted apart (failures
 * counted or slow answers); an open or half-open one always is.
 */
export function circuitView(circuit: CircuitRecord | undefined, now: number): { state: CircuitState; until?: string; slowLane?: true } {
  if (!circuit?.until) return laneFor(circuit, now, false) === 'slow' ? { state: 'closed', slowLane: true } : { state: 'closed' };
  if (circuit.probing || Date.parse(circuit.until) <= now) return { state: 'half-open', until: circuit.until };
  return { state: 'open', until: circuit.until };
}

export type Lane = 'main' | 'slow';

/**
 * Where an endpoint's deliveries are attempted: the slow lane while it has failures counted, a
 * circuit not closed, or a slow mark not yet expired (or this container saw it fail or time out).
 */
export function laneFor(circuit: CircuitRecord | undefined, now: number, unhealthyHere: boolean): Lane {
  const slow = unhealthyHere || Boolean(circuit?.until) || (circuit?.failures ?? 0) > 0 || (circuit?.slowUntil !== undefined && Date.parse(circuit.slowUntil) > now);
  return slow ? 'slow' : 'main';
}

/** Before an attempt: go ahead, go ahead as the half-open probe (claim it first), or park until a time (epoch ms). */
export type Gate =
  | { kind: 'attempt' }
  | { kind: 'probe'; deadline: number }
  | { kind: 'park'; until: number; reason: string };

/** How long a claimed probe holds the circuit: its attempt's time-out and a margin, so a crashed probe is replaced. */
export const probeWindowMs = (settings: Pick<Config, 'deliveryTimeoutMs'>) => settings.deliveryTimeoutMs + 5_000;

export function gate(circuit: CircuitRecord | undefined, now: number, settings: Pick<Config, 'deliveryTimeoutMs'>): Gate {
  if (!circuit?.until) return { kind: 'attempt' };
  const until = Date.parse(circuit.until);
  if (until > now) return { kind: 'park', until, reason: circuit.probing ? 'circuit half-open: a probe is under way' : `circuit open until ${circuit.until}` };
  return { kind: 'probe', deadline: now + probeWindowMs(settings) };
}

/**
 * Seconds the circuit stays open after its `opens`-th opening in a row: doubles each time, capped.
 * Not a retry loop (its constants are configuration, not BACKOFFS), but the same shape without
 * jitter, so the same helper computes it.
 */
export function openSeconds(opens: number, settings: Pick<Config, 'circuitOpenSeconds' | 'circuitMaxOpenSeconds'>): number {
  return backoffMs(Math.max(0, opens - 1), { baseMs: settings.circuitOpenSeconds, capMs: settings.circuitMaxOpenSeconds, jitter: 'none' });
}

/** What an attempt's outcome does to the stored state. */
export type Transition =
  | { kind: 'none' }
  /** Success after failures, an open circuit or a probe, or a change of speed: back to closed, counters cleared; `slowUntil`: (still) slow. */
  | { kind: 'close'; slowUntil?: number }
  /** A failure while closed: count it (the write that reaches the threshold opens the circuit). */
  | { kind: 'count' }
  /** A failed probe: open again, for longer. */
  | { kind: 'reopen'; opens: number; until: number };

/**
 * `slow`: the answer came later than slowLaneAfterMs (only possible in the slow lane). A slow
 * success keeps the endpoint in the slow lane; a fast one takes it back to the main lane.
 */
export function afterAttempt(circuit: CircuitRecord | undefined, outcome: { ok: boolean; probe: boolean; failedHere: boolean; slow?: boolean }, now: number, settings: CircuitConfig): Transition {
  if (outcome.ok) {
    const unhealthy = outcome.probe || Boolean(circuit?.until) || (circuit?.failures ?? 0) > 0 || outcome.failedHere;
    const markedSlow = circuit?.slowUntil !== undefined && Date.parse(circuit.slowUntil) > now;
    if (outcome.slow) return unhealthy || !markedSlow ? { kind: 'close', slowUntil: now + settings.slowLaneHoldSeconds * 1000 } : { kind: 'none' };
    return unhealthy || circuit?.slowUntil ? { kind: 'close' } : { kind: 'none' };
  }
  if (outcome.probe) {
    const opens = (circuit?.opens ?? 1) + 1;
    return { kind: 'reopen', opens, until: now + openSeconds(opens, settings) * 1000 };
  }
  return { kind: 'count' };
}

/** Whether a failure count reached the threshold: the write that counted it opens the circuit. */
export const reachesThreshold = (failures: number, settings: Pick<Config, 'circuitFailureThreshold'>) => failures >= settings.circuitFailureThreshold;

/** Stored attributes → the endpoint's circuit (undefined: closed with nothing counted). */
export function circuitOf(item: Record<string, unknown>): CircuitRecord | undefined {
  const failures = Number(item.circuitFailures ?? 0);
  if (!item.circuitUntil && !failures && !item.circuitSlowUntil) return undefined;
  return {
    failures,
    opens: Number(item.circuitOpens ?? 0),
    ...(item.circuitUntil ? { until: item.circuitUntil as string } : {}),
    ...(item.circuitProbing ? { probing: true } : {}),
    ...(item.circuitSlowUntil ? { slowUntil: item.circuitSlowUntil as string } : {}),
  };
}

/** The endpoint's circuit → its stored attributes (the inverse of circuitOf). */
export const circuitAttributes = (circuit: CircuitRecord | undefined): Record<string, unknown> => (circuit ? {
  ...(circuit.failures ? { circuitFailures: circuit.failures } : {}),
  ...(circuit.opens ? { circuitOpens: circuit.opens } : {}),
  ...(circuit.until ? { circuitUntil: circuit.until } : {}),
  ...(circuit.probing ? { circuitProbing: true } : {}),
  ...(circuit.slowUntil ? { circuitSlowUntil: circuit.slowUntil } : {}),
} : {});
