/**
 * Circuits and endpoint health as stories on the in-memory stores (docs/architecture.md#fair-delivery):
 * circuit-store.ts's gate and transitions, endpoints.ts's health marks and the container's cached
 * endpoints, run on the endpoints store's twin (test/support/memory-endpoint-store.ts, held to
 * DynamoDB's behaviour by test/integration/stores/endpoint-store.contract.test.ts) with a clock the
 * test moves. Containers are ContainerMemory objects over one shared store. What only the stack
 * shows (HTTP to a hanging receiver, the queues' lanes) stays in test/integration/delivery/isolation.test.ts.
 */
import { describe, it, expect, jest } from '@jest/globals';
import { defaultConfig, type Config } from '../../../functions/core/platform/config.js';
import type { Deps } from '../../../functions/core/platform/deps.js';
import type { EventPayload, WebhookEndpoint } from '../../../functions/core/platform/model.js';
import { logger, metrics } from '../../../functions/core/platform/observability.js';
import { retryLostRaces } from '../../../functions/core/platform/optimistic.js';
import { ContainerMemory, withContainerMemory } from '../../../functions/core/delivery/container-memory.js';
import { withEndpointStore } from '../../../functions/core/delivery/endpoint-store.js';
import { admitAttempt, markSlow, recordAttempt, releaseProbe, type Admission } from '../../../functions/core/delivery/circuit-store.js';
import { endpointsOf, getEndpoint, recordEndpointHealth, updateEndpoint } from '../../../functions/core/delivery/endpoints.js';
import { withDeliveryPorts } from '../../../functions/core/delivery/delivery-port.js';
import { recordDelivery } from '../../../functions/core/delivery/queue.js';
import { attemptDelivery } from '../../../functions/core/delivery/deliver.js';
import { takeRateSlot } from '../../../functions/core/delivery/delivery-throttle.js';
import { MemoryEndpointStore } from '../../support/memory-endpoint-store.js';
import { MemoryDeliveryQueue, MemoryDeliveryStore } from '../../integration/delivery-core/support/memory-delivery.js';

jest.spyOn(metrics, 'addMetric').mockImplementation(() => metrics);
jest.spyOn(logger, 'warn').mockImplementation(() => undefined);
jest.spyOn(logger, 'info').mockImplementation(() => undefined);

const T0 = Date.parse('2026-11-26T09:00:00.000Z');
const at = (ms: number) => new Date(ms).toISOString();

/** One endpoints store, a clock, and containers over them (each with its own memory). */
async function given(settings: Partial<Config> = {}) {
  const clock = { now: T0 };
  const endpoints = new MemoryEndpointStore();
  const deliveries = new MemoryDeliveryStore(() => clock.now);
  const queue = new MemoryDeliveryQueue(() => clock.now);
  const config: Config = { ...defaultConfig, circuitFailureThreshold: 3, circuitOpenSeconds: 30, circuitMaxOpenSeconds: 100, maxInFlightPerEndpoint: 4, endpointBusyWaitMs: 0, ...settings };
  const base = { now: () => clock.now, config, tables: {}, queues: {} } as unknown as Deps;
  const shared = withDeliveryPorts(withEndpointStore(base, endpoints), { store: deliveries, queue });
  const container = () => withContainerMemory(shared, new ContainerMemory());
  const endpoint: WebhookEndpoint = {
    id: 'ep_circuit', organizationId: 'org_circuit', url: 'https://receiver.example.com/hook', events: ['*'],
    secrets: [{ secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw', createdAt: at(T0) }], secretsVersion: 1, enabled: true, createdAt: at(T0), headers: {},
  };
  await retryLostRaces('given', () => endpoints.createEndpoint(endpoint, 10));
  const deps = container();
  /** The endpoint as stored now. */
  const stored = async () => (await getEndpoint(deps, endpoint.organizationId, endpoint.id))!;
  return { clock, endpoints, deliveries, deps, container, stored, endpoint };
}

/** An attempt admitted now, released at once (its slot given back), as deliver.ts does after the POST. */
async function admit(deps: Deps, endpoint: WebhookEndpoint, lane: 'main' | 'slow'): Promise<Admission> {
  const admission = await admitAttempt(deps, endpoint, lane);
  if (admission.kind === 'attempt') admission.release();
  return admission;
}

describe('an endpoint’s circuit', () => {
  it('opens at the threshold of failures in a row: the main lane moves its deliveries to the slow lane, which parks them until it half-opens', async () => {
    const { clock, deps, stored } = await given();
    for (let i = 0; i < 2; i++) await recordAttempt(deps, await stored(), { ok: false, probe: false, latencyMs: 10 });
    expect((await stored()).circuit).toEqual({ failures: 2, opens: 0 });
    // Failures counted: the slow lane already, the circuit still closed.
    expect(await admit(deps, await stored(), 'main')).toMatchObject({ kind: 'move', reason: expect.stringMatching(/failing or slow/) });
    expect(await admit(deps, await stored(), 'slow')).toMatchObject({ kind: 'attempt', probe: false });
    await recordAttempt(deps, await stored(), { ok: false, probe: false, latencyMs: 10 });
    const until = T0 + 30_000;
    expect((await stored()).circuit).toEqual({ failures: 3, opens: 1, until: at(until) });
    expect(await admit(deps, await stored(), 'main')).toEqual({ kind: 'move', reason: `circuit open until ${at(until)}`, until });
    clock.now += 10_000;
    expect(await admit(deps, await stored(), 'slow')).toEqual({ kind: 'park', until, reason: `circuit open until ${at(until)}` });
  });

  it('a late failure does not extend an open circuit', async () => {
    const { clock, deps, stored } = await given();
    for (let i = 0; i < 3; i++) await recordAttempt(deps, await stored(), { ok: false, probe: false, latencyMs: 10 });
    const opened = (await stored()).circuit!.until;
    clock.now += 5_000;
    // A failure of an attempt begun before the circuit opened (its copy of the endpoint still closed).
    await recordAttempt(deps, { ...(await stored()), circuit: { failures: 2, opens: 0 } }, { ok: false, probe: false, latencyMs: 10 });
    expect((await stored()).circuit).toMatchObject({ failures: 4, until: opened });
  });

  it('half-open: one container claims the probe; another parks until the probe’s deadline', async () => {
    const { clock, deps, container, stored } = await given();
    for (let i = 0; i < 3; i++) await recordAttempt(deps, await stored(), { ok: false, probe: false, latencyMs: 10 });
    clock.now = T0 + 30_000;
    const endpoint = await stored();
    const [a, b] = [container(), container()];
    const first = await admit(a, endpoint, 'slow');
    const deadline = clock.now + defaultConfig.deliveryTimeoutMs + 5_000;
    expect(first).toMatchObject({ kind: 'attempt', probe: true, probeDeadline: deadline });
    expect(await admit(b, endpoint, 'slow')).toEqual({ kind: 'park', until: deadline, reason: 'circuit half-open: a probe is under way' });
    expect((await stored()).circuit).toMatchObject({ until: at(deadline), probing: true });
  });

  it('a failed probe re-opens it for twice as long each time, capped; a successful one closes it and the main lane takes the endpoint back', async () => {
    const { clock, deps, stored } = await given();
    for (let i = 0; i < 3; i++) await recordAttempt(deps, await stored(), { ok: false, probe: false, latencyMs: 10 });
    const openings: number[] = [];
    for (let round = 0; round < 3; round++) {
      clock.now = Date.parse((await stored()).circuit!.until!);
      expect(await admit(deps, await stored(), 'slow')).toMatchObject({ kind: 'attempt', probe: true });
      await recordAttempt(deps, await stored(), { ok: false, probe: true, latencyMs: 10 });
      const circuit = (await stored()).circuit!;
      openings.push((Date.parse(circuit.until!) - clock.now) / 1000);
      expect(circuit.probing).toBeUndefined();
    }
    expect(openings).toEqual([60, 100, 100]); // 30 s doubled per failed probe, capped at circuitMaxOpenSeconds
    clock.now = Date.parse((await stored()).circuit!.until!);
    expect(await admit(deps, await stored(), 'slow')).toMatchObject({ kind: 'attempt', probe: true });
    await recordAttempt(deps, await stored(), { ok: true, probe: true, latencyMs: 10 });
    expect((await stored()).circuit).toBeUndefined();
    expect(await admit(deps, await stored(), 'main')).toMatchObject({ kind: 'attempt', probe: false, timeoutMs: defaultConfig.slowLaneAfterMs });
  });

  it('a probe given back (not attempted) half-opens the circuit again at once: the next delivery probes', async () => {
    const { clock, deps, stored } = await given();
    for (let i = 0; i < 3; i++) await recordAttempt(deps, await stored(), { ok: false, probe: false, latencyMs: 10 });
    clock.now = T0 + 30_000;
    const read = await stored(); // the copy the delivery was admitted with
    const claimed = await admit(deps, read, 'slow');
    expect(claimed).toMatchObject({ kind: 'attempt', probe: true });
    await releaseProbe(deps, read, (claimed as { probeDeadline: number }).probeDeadline);
    expect((await stored()).circuit).toEqual({ failures: 3, opens: 1, until: at(T0 + 30_000) });
    expect(await admit(deps, await stored(), 'slow')).toMatchObject({ kind: 'attempt', probe: true });
  });

  it('an answer slower than the main lane allows keeps the endpoint in the slow lane for the hold; a fast one brings it back', async () => {
    const { clock, deps, container, stored } = await given({ slowLaneAfterMs: 2000, slowLaneHoldSeconds: 300 });
    // A main-lane attempt cut off at its short budget: the endpoint is marked slow, once (the mark is not extended while it holds).
    await markSlow(deps, await stored());
    expect((await stored()).circuit).toEqual({ failures: 0, opens: 0, slowUntil: at(T0 + 300_000) });
    clock.now += 1000;
    await markSlow(deps, await stored());
    expect((await stored()).circuit!.slowUntil).toBe(at(T0 + 300_000));
    const elsewhere = container(); // another container reads the mark from the item
    expect(await admit(elsewhere, await stored(), 'main')).toMatchObject({ kind: 'move' });
    // A slow success in the slow lane keeps it there, for a hold from now; past it a fresh container attempts it on the main lane again.
    await recordAttempt(deps, await stored(), { ok: true, probe: false, latencyMs: 2500 });
    expect((await stored()).circuit).toEqual({ failures: 0, opens: 0, slowUntil: at(T0 + 301_000) });
    clock.now = T0 + 302_000;
    expect(await admit(container(), await stored(), 'main')).toMatchObject({ kind: 'attempt' });
    await recordAttempt(deps, await stored(), { ok: true, probe: false, latencyMs: 50 });
    expect((await stored()).circuit).toBeUndefined();
  });

  it('a healthy endpoint’s success writes nothing', async () => {
    const { deps, endpoints, stored } = await given();
    const calls = endpoints.calls.length;
    await recordAttempt(deps, await stored(), { ok: true, probe: false, latencyMs: 10 });
    expect(endpoints.calls.slice(calls)).toEqual(['getEndpoint']);
  });

  it('a circuit write drops this container’s cached endpoints at once; another container sees the change when its cache expires', async () => {
    const { clock, deps, container, stored, endpoint } = await given({ endpointCacheTtlSeconds: 30 });
    const other = container();
    expect((await endpointsOf(deps, endpoint.organizationId))[0].circuit).toBeUndefined();
    expect((await endpointsOf(other, endpoint.organizationId))[0].circuit).toBeUndefined();
    for (let i = 0; i < 3; i++) await recordAttempt(deps, await stored(), { ok: false, probe: false, latencyMs: 10 });
    expect((await endpointsOf(deps, endpoint.organizationId))[0].circuit).toMatchObject({ until: at(T0 + 30_000) });
    expect((await endpointsOf(other, endpoint.organizationId))[0].circuit).toBeUndefined();
    clock.now += 30_000;
    expect((await endpointsOf(other, endpoint.organizationId))[0].circuit).toMatchObject({ opens: 1 });
  });

  it('an endpoint throttled on its circuit write fails the attempt’s report (the message is received again), and the twin’s next write lands', async () => {
    const { deps, endpoints, stored } = await given();
    endpoints.inject('countFailure', 'throttle');
    await expect(recordAttempt(deps, await stored(), { ok: false, probe: false, latencyMs: 10 })).rejects.toMatchObject({ name: 'ThrottlingException' });
    await recordAttempt(deps, await stored(), { ok: false, probe: false, latencyMs: 10 });
    expect((await stored()).circuit).toEqual({ failures: 1, opens: 0 });
  });
});

describe('an endpoint’s health', () => {
  // Moved from test/integration/delivery/endpoints.test.ts (no HTTP, no queue: the endpoint item alone).
  it('disables an endpoint that has failed without a success for longer than the setting, and re-enabling clears it', async () => {
    const { clock, deps, stored, endpoint } = await given({ disableAfterFailingHours: 120 });
    await recordEndpointHealth(deps, await stored(), 'failed');
    const failing = await stored();
    expect(failing).toMatchObject({ enabled: true, failingSince: at(T0) });
    clock.now += 119 * 3_600_000;
    await recordEndpointHealth(deps, failing, 'failed');
    expect(await stored()).toMatchObject({ enabled: true, failingSince: at(T0) });
    clock.now = T0 + 6 * 86_400_000;
    await recordEndpointHealth(deps, failing, 'failed');
    expect(await stored()).toMatchObject({ enabled: false, disabledReason: `failing without a success since ${at(T0)}` });
    const enabled = await updateEndpoint(deps, endpoint.organizationId, endpoint.id, { enabled: true });
    expect(enabled).toMatchObject({ enabled: true });
    expect(enabled).not.toHaveProperty('failingSince');
    expect(await stored()).not.toHaveProperty('disabledReason');
  });

  it('a success clears the failing mark; a 410 Gone disables at once', async () => {
    const { clock, deps, stored } = await given();
    await recordEndpointHealth(deps, await stored(), 'failed');
    await recordEndpointHealth(deps, await stored(), 'ok');
    expect(await stored()).not.toHaveProperty('failingSince');
    clock.now += 1000;
    await recordEndpointHealth(deps, await stored(), 'gone');
    expect(await stored()).toMatchObject({ enabled: false, disabledReason: `the receiver answered 410 Gone at ${at(T0 + 1000)}` });
  });
});

describe('a half-open circuit and the rate limit', () => {
  // Moved from test/integration/delivery/endpoint-options.test.ts: the probe is refused before any POST.
  it('a probe refused by the rate limit gives its claim back: the next delivery probes at once', async () => {
    const { clock, deps, endpoints, stored, endpoint } = await given();
    const halfOpenSince = at(T0 - 1000);
    await endpoints.updateEndpoint(endpoint, { set: { rateLimitPerSecond: 1 }, remove: [] });
    (endpoints.items.get(`ORG#${endpoint.organizationId}\u0000ENDPOINT#${endpoint.id}`)!).circuitUntil = halfOpenSince;
    Object.assign(endpoints.items.get(`ORG#${endpoint.organizationId}\u0000ENDPOINT#${endpoint.id}`)!, { circuitOpens: 1, circuitFailures: 5 });
    const current = await stored();
    expect(await takeRateSlot(deps, current)).toBeUndefined(); // the endpoint's one lane is taken for a second
    const event = { id: 'evt_probe', type: 'client.updated', api_version: '2026-11-01', organization_id: endpoint.organizationId, timestamp: at(clock.now), data: { object: { id: 'cli_probe' } } } as unknown as EventPayload;
    const message = (await recordDelivery(deps, event, current))!;
    const outcome = await attemptDelivery(deps, message, { lane: 'slow' });
    expect(outcome).toMatchObject({ kind: 'deferred', reason: expect.stringMatching(/rate limit \(1 a second\)/) });
    // The claim moved circuitUntil to the probe's deadline and set circuitProbing; both are undone.
    expect((await stored()).circuit).toEqual({ failures: 5, opens: 1, until: halfOpenSince });
  });
});
