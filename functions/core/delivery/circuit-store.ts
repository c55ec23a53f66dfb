/**
 * The isolation of one endpoint from the others (docs/architecture.md#fair-delivery), around each attempt: the lane, the
 * circuit, the bound on attempts in flight. The circuit's state is kept on the endpoint item
 * (circuitFailures, circuitUntil, circuitOpens, circuitProbing, circuitSlowUntil) and read with
 * the endpoint through the per-container endpoint cache: a healthy endpoint's deliveries never
 * write it. It is written on a failed attempt (one ADD), on a state change (open, probe claimed,
 * close, slow mark) and on the first success after failures, each a named operation of the
 * endpoint store (endpoint-store.ts), which drops the container's cached endpoints as it writes.
 * What this container saw (failures here, slots) is its ContainerMemory. Decisions: circuit-breaker.ts.
 */
import { MetricUnit } from '@aws-lambda-powertools/metrics';
import type { Deps } from '../platform/deps.js';
import type { WebhookEndpoint } from '../platform/model.js';
import { logger, metrics } from '../platform/observability.js';
import { afterAttempt, gate, laneFor, openSeconds, reachesThreshold, type Gate, type Lane } from './circuit-breaker.js';
import { containerMemory } from './container-memory.js';
import { endpointStore } from './endpoint-store.js';
import { noticePaused } from './endpoint-notices.js';
import type { DeliveryRef } from './delivery-state.js';

/**
 * The circuit's gate, with the half-open probe claimed (one container wins it: the claim moves
 * `until` to the probe's deadline; the others park until then).
 */
async function claimGate(deps: Deps, endpoint: WebhookEndpoint): Promise<Gate> {
  const now = deps.now();
  const decided = gate(endpoint.circuit, now, deps.config);
  if (decided.kind !== 'probe') return decided;
  const claimed = await endpointStore(deps).claimProbe(endpoint, endpoint.circuit!.until!, new Date(decided.deadline).toISOString());
  if (!claimed) return { kind: 'park', until: decided.deadline, reason: 'circuit half-open: a probe is under way' };
  logger.info('circuit half-open: probing', { organizationId: endpoint.organizationId, endpointId: endpoint.id });
  return decided;
}

/**
 * What to do with a delivery instead of, or before, attempting it:
 * - `attempt`: POST it with `timeoutMs`, then release the slot and report (recordAttempt);
 * - `move`: not attempted here: re-queue it in the slow lane, now or (open circuit) at `until` (no attempt used);
 * - `park`: not attempted: re-schedule it at `until` in this lane (no attempt used).
 */
export type Admission =
  /** `probeDeadline`: the half-open probe's claim this attempt holds (epoch ms), when it is the probe. */
  | { kind: 'attempt'; probe: boolean; probeDeadline?: number; timeoutMs: number; release: () => void }
  | { kind: 'move'; reason: string; until?: number }
  | { kind: 'park'; until: number; reason: string };

/**
 * The isolation gate before an attempt in `lane`. Main lane: an unhealthy or slow endpoint moves
 * to the slow lane; a healthy one gets a slot and the short budget. Slow lane: the circuit (open:
 * park until it half-opens), then a slot (none within endpointBusyWaitMs: park for about one
 * time-out, when a hanging attempt has ended), then the probe's claim; the full time-out.
 */
export async function admitAttempt(deps: Deps, endpoint: WebhookEndpoint, lane: Lane): Promise<Admission> {
  const { config: settings } = deps;
  const { failedHere, slots } = containerMemory(deps);
  if (lane === 'main' && laneFor(endpoint.circuit, deps.now(), failedHere.has(endpoint.id)) === 'slow') {
    // An open circuit: straight to the slow lane's wait, not via a second hop.
    const open = gate(endpoint.circuit, deps.now(), settings);
    if (open.kind === 'park') return count({ kind: 'move', reason: open.reason, until: open.until }, 'DeliveriesDeferredByCircuit');
    return count({ kind: 'move', reason: 'the endpoint is failing or slow: attempted in the slow lane' }, 'DeliveriesMovedToSlowLane');
  }
  // Its attempts here have stalled (the oldest waits longer than slowSuspectMs and none ended
  // since): do not start another batch's on the main lane (a receiver that just began to hang
  // would hold them all).
  if (lane === 'main' && slots.stalledMs(endpoint.id, deps.now()) > settings.slowSuspectMs) {
    return count({ kind: 'move', reason: `attempts to this endpoint have had no answer for over ${settings.slowSuspectMs} ms: attempted in the slow lane` }, 'DeliveriesMovedToSlowLane');
  }
  if (lane === 'slow') {
    const first = gate(endpoint.circuit, deps.now(), settings);
    if (first.kind === 'park') return count({ kind: 'park', until: first.until, reason: first.reason }, 'DeliveriesDeferredByCircuit');
  }
  const release = await slots.acquire(endpoint.id, settings.maxInFlightPerEndpoint, settings.endpointBusyWaitMs, deps.now);
  if (!release) {
    const reason = `${settings.maxInFlightPerEndpoint} attempts to this endpoint already in flight`;
    if (lane === 'main') return count({ kind: 'move', reason }, 'DeliveriesMovedToSlowLane');
    return count({ kind: 'park', until: deps.now() + settings.deliveryTimeoutMs * (1 + Math.random() * 0.2), reason }, 'DeliveriesDeferredEndpointBusy');
  }
  if (lane === 'main') return { kind: 'attempt', probe: false, timeoutMs: Math.min(settings.slowLaneAfterMs, settings.deliveryTimeoutMs), release };
  const claimed = await claimGate(deps, endpoint).catch((error: unknown) => { release(); throw error; });
  if (claimed.kind === 'park') {
    release();
    return count({ kind: 'park', until: claimed.until, reason: claimed.reason }, 'DeliveriesDeferredByCircuit');
  }
  if (claimed.kind === 'probe') return { kind: 'attempt', probe: true, probeDeadline: claimed.deadline, timeoutMs: settings.deliveryTimeoutMs, release };
  return { kind: 'attempt', probe: false, timeoutMs: settings.deliveryTimeoutMs, release };
}

/**
 * Gives back a probe claimed but not attempted (the endpoint's rate limit refused it): the circuit
 * is half-open again at once, so the next delivery probes instead of every one parking until the
 * claim's deadline. Only this claim is undone (its deadline still stored).
 */
export async function releaseProbe(deps: Deps, endpoint: WebhookEndpoint, deadline: number): Promise<void> {
  await endpointStore(deps).releaseProbe(endpoint, new Date(deadline).toISOString(), endpoint.circuit?.until ?? new Date(deps.now()).toISOString());
}

function count<A extends Admission>(admission: A, metric: string): A {
  metrics.addMetric(metric, MetricUnit.Count, 1);
  return admission;
}

/**
 * A main-lane attempt that got no answer within its short budget (it was cut off: not an attempt,
 * the delivery moves to the slow lane): marks the endpoint slow, so its next deliveries go there
 * straight away (this container at once; the others when their endpoint cache refreshes).
 */
export async function markSlow(deps: Deps, endpoint: WebhookEndpoint): Promise<void> {
  containerMemory(deps).failedHere.add(endpoint.id);
  const now = deps.now();
  const slowUntil = new Date(now + deps.config.slowLaneHoldSeconds * 1000).toISOString();
  const marked = await endpointStore(deps).markSlow(endpoint, slowUntil, new Date(now).toISOString());
  if (marked) logger.warn('endpoint slower than the main lane allows: moved to the slow lane', { organizationId: endpoint.organizationId, endpointId: endpoint.id, until: slowUntil });
}

/**
 * After an attempt: records what it means for the circuit (no write for a success on a healthy
 * endpoint). `lastError`: what the failed attempt said, for the paused notice. `waiting`: this
 * attempt's delivery, when it will wait for a retry: the notice, produced with the write that
 * opens the circuit (the only one that may), counts it whether or not its record is written yet.
 */
export async function recordAttempt(deps: Deps, endpoint: WebhookEndpoint, outcome: { ok: boolean; probe: boolean; latencyMs: number; lastError?: string; waiting?: DeliveryRef }): Promise<void> {
  const now = deps.now();
  const { failedHere } = containerMemory(deps);
  const store = endpointStore(deps);
  const slow = outcome.latencyMs > deps.config.slowLaneAfterMs;
  const transition = afterAttempt(endpoint.circuit, { ok: outcome.ok, probe: outcome.probe, slow, failedHere: failedHere.has(endpoint.id) }, now, deps.config);
  if (transition.kind === 'none') return;
  if (transition.kind === 'close') {
    failedHere.delete(endpoint.id);
    const slowUntil = transition.slowUntil ? new Date(transition.slowUntil).toISOString() : undefined;
    await store.closeCircuit(endpoint, slowUntil);
    if (endpoint.circuit?.until) logger.info('circuit closed', { organizationId: endpoint.organizationId, endpointId: endpoint.id, slowLane: Boolean(slowUntil) });
    return;
  }
  failedHere.add(endpoint.id);
  if (transition.kind === 'reopen') {
    await store.reopenCircuit(endpoint, new Date(transition.until).toISOString(), transition.opens);
    metrics.addMetric('CircuitOpened', MetricUnit.Count, 1);
    logger.warn('circuit re-opened: the probe failed', { organizationId: endpoint.organizationId, endpointId: endpoint.id, until: new Date(transition.until).toISOString(), opens: transition.opens });
    return;
  }
  const failures = (await store.countFailure(endpoint)) ?? 0;
  if (!reachesThreshold(failures, deps.config)) return;
  const until = new Date(now + openSeconds(1, deps.config) * 1000).toISOString();
  // Only the write that finds the circuit closed opens it (a late failure does not extend an open one).
  const opened = await store.openCircuit(endpoint, until);
  if (opened) {
    metrics.addMetric('CircuitOpened', MetricUnit.Count, 1);
    logger.warn('circuit opened', { organizationId: endpoint.organizationId, endpointId: endpoint.id, failures, until });
    await noticePaused(deps, endpoint, { since: new Date(now).toISOString(), until, lastError: outcome.lastError, ...(outcome.waiting ? { waiting: outcome.waiting } : {}) });
  }
}

/** The lane a queue batch came from: its event source's ARN ends with the queue's name, as its URL does. */
export function laneOf(deps: Pick<Deps, 'queues'>, eventSourceArn: string | undefined): Lane {
  const slowName = deps.queues.deliverySlowQueue?.split('/').pop();
  return slowName && eventSourceArn?.split(':').pop() === slowName ? 'slow' : 'main';
}
