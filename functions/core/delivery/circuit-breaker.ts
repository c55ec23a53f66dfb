/**
 * A circuit breaker per webhook endpoint (DESIGN §16): after `circuitFailureThreshold` failed
 * attempts in a row (time-outs included) the endpoint's circuit opens, and its deliveries are
 * parked until the circuit's `until` instead of attempted: no POST, no attempt consumed. When
 * `until` passes, one delivery claims the probe (half-open); its success closes the circuit, its
 * failure re-opens it for twice as long (capped at circuitMaxOpenSeconds).
 *
 * This module decides (pure); circuit-store.ts keeps the state on the endpoint item.
 */
import type { Settings } from '../platform/settings.js';
import type { CircuitRecord, CircuitState } from '../platform/model.js';

export type CircuitSettings = Pick<Settings, 'circuitFailureThreshold' | 'circuitOpenSeconds' | 'circuitMaxOpenSeconds' | 'deliveryTimeoutMs'>;

/** What an operator sees (CLI, settings page): the state now and, unless closed, until when. */
export function circuitView(circuit: CircuitRecord | undefined, now: number): { state: CircuitState; until?: string } {
  if (!circuit?.until) return { state: 'closed' };
  if (circuit.probing || Date.parse(circuit.until) <= now) return { state: 'half-open', until: circuit.until };
  return { state: 'open', until: circuit.until };
}

/** Before an attempt: go ahead, go ahead as the half-open probe (claim it first), or park until a time (epoch ms). */
export type Gate =
  | { kind: 'attempt' }
  | { kind: 'probe'; deadline: number }
  | { kind: 'park'; until: number; reason: string };

/** How long a claimed probe holds the circuit: its attempt's time-out and a margin, so a crashed probe is replaced. */
export const probeWindowMs = (settings: Pick<Settings, 'deliveryTimeoutMs'>) => settings.deliveryTimeoutMs + 5_000;

export function gate(circuit: CircuitRecord | undefined, now: number, settings: Pick<Settings, 'deliveryTimeoutMs'>): Gate {
  if (!circuit?.until) return { kind: 'attempt' };
  const until = Date.parse(circuit.until);
  if (until > now) return { kind: 'park', until, reason: circuit.probing ? 'circuit half-open: a probe is under way' : `circuit open until ${circuit.until}` };
  return { kind: 'probe', deadline: now + probeWindowMs(settings) };
}

/** Seconds the circuit stays open after its `opens`-th opening in a row: doubles each time, capped. */
export function openSeconds(opens: number, settings: Pick<Settings, 'circuitOpenSeconds' | 'circuitMaxOpenSeconds'>): number {
  return Math.min(settings.circuitMaxOpenSeconds, settings.circuitOpenSeconds * 2 ** Math.max(0, opens - 1));
}

/** What an attempt's outcome does to the stored state. */
export type Transition =
  | { kind: 'none' }
  /** Success after failures, an open circuit or a probe: back to closed, counters cleared. */
  | { kind: 'close' }
  /** A failure while closed: count it (the write that reaches the threshold opens the circuit). */
  | { kind: 'count' }
  /** A failed probe: open again, for longer. */
  | { kind: 'reopen'; opens: number; until: number };

export function afterAttempt(circuit: CircuitRecord | undefined, outcome: { ok: boolean; probe: boolean; failedHere: boolean }, now: number, settings: CircuitSettings): Transition {
  if (outcome.ok) return outcome.probe || circuit?.until || (circuit?.failures ?? 0) > 0 || outcome.failedHere ? { kind: 'close' } : { kind: 'none' };
  if (outcome.probe) {
    const opens = (circuit?.opens ?? 1) + 1;
    return { kind: 'reopen', opens, until: now + openSeconds(opens, settings) * 1000 };
  }
  return { kind: 'count' };
}

/** Whether a failure count reached the threshold: the write that counted it opens the circuit. */
export const reachesThreshold = (failures: number, settings: Pick<Settings, 'circuitFailureThreshold'>) => failures >= settings.circuitFailureThreshold;

/** Stored attributes → the endpoint's circuit (undefined: closed with nothing counted). */
export function circuitOf(item: Record<string, unknown>): CircuitRecord | undefined {
  const failures = Number(item.circuitFailures ?? 0);
  if (!item.circuitUntil && !failures) return undefined;
  return {
    failures,
    opens: Number(item.circuitOpens ?? 0),
    ...(item.circuitUntil ? { until: item.circuitUntil as string } : {}),
    ...(item.circuitProbing ? { probing: true } : {}),
  };
}

/** The endpoint's circuit → its stored attributes (the inverse of circuitOf). */
export const circuitAttributes = (circuit: CircuitRecord | undefined): Record<string, unknown> => (circuit ? {
  ...(circuit.failures ? { circuitFailures: circuit.failures } : {}),
  ...(circuit.opens ? { circuitOpens: circuit.opens } : {}),
  ...(circuit.until ? { circuitUntil: circuit.until } : {}),
  ...(circuit.probing ? { circuitProbing: true } : {}),
} : {});
