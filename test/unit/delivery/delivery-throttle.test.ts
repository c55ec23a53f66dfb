/**
 * The endpoint rate limit's deferral (docs/webhooks.md "Rate limit", docs/decisions.md "An
 * endpoint's rate limit: lanes, one conditional write"): a backlog drains at N a second with a
 * number of refusals near B·log2(B/N), not B²/2N, and never more than N admitted in any second.
 * A fake clock, a fake throttle item with DynamoDB's condition, and an SQS-like delayed queue
 * (whole-second delays, as sqs-delivery-queue.ts sends them).
 */
import { describe, it, expect, beforeEach, jest } from '@jest/globals';
import { defaultConfig } from '../../../functions/core/platform/config.js';
import type { Deps } from '../../../functions/core/platform/deps.js';
import type { WebhookEndpoint } from '../../../functions/core/platform/model.js';
import { takeRateSlot, throttleWaitMs } from '../../../functions/core/delivery/delivery-throttle.js';
import { ContainerMemory, withContainerMemory } from '../../../functions/core/delivery/container-memory.js';
import { withEndpointStore } from '../../../functions/core/delivery/endpoint-store.js';
import { logger, metrics } from '../../../functions/core/platform/observability.js';
import { MemoryEndpointStore } from '../../support/memory-endpoint-store.js';

const throttledMetric = jest.spyOn(metrics, 'addMetric').mockImplementation(() => metrics);
jest.spyOn(logger, 'warn').mockImplementation(() => undefined);

/** The endpoint store's twin (its throttle item evaluated as DynamoDB does), one container's memory, on `clock`. */
function fakeStore(clock: { now: number }) {
  const twin = new MemoryEndpointStore();
  const base = { now: () => clock.now, config: defaultConfig, tables: { endpoints: 'endpoints' } } as unknown as Deps;
  const store = { twin, get writes() { return twin.calls.filter((c) => c === 'claimThrottleLane').length; } };
  /** Deps of a container: the same one each call, or (`fresh`) a new one that knows nothing of the lanes. */
  let deps = withContainerMemory(withEndpointStore(base, twin), new ContainerMemory());
  const container = (fresh = false) => (fresh ? (deps = withContainerMemory(deps, new ContainerMemory())) : deps);
  return { store, get deps() { return deps; }, container };
}

const endpoint = (limit: number) => ({ id: 'ep_1', organizationId: 'org_1', rateLimitPerSecond: limit }) as WebhookEndpoint;

/**
 * Drains `backlog` deliveries queued at once through takeRateSlot, re-queued as deliverBatch does
 * (a delay of ceil(untilMs − now) seconds, the message's `throttled` count raised), with up to
 * 200 ms of receive latency. `blind`: every receive in a fresh container, which knows nothing of
 * the lanes (the worst case for writes; otherwise one container, which learns from its refusals).
 */
async function drain(backlog: number, limit: number, blind: boolean) {
  // The jitter (the test's and takeRateSlot's) from a seeded generator: the tail is a random
  // variable (1 run in ~50 drained past B/N + 900 s), and a check must give one answer per code.
  const random = jest.spyOn(Math, 'random').mockImplementation(mulberry32(backlog * 31 + limit));
  try {
    return await drainSeeded(backlog, limit, blind);
  } finally {
    random.mockRestore();
  }
}

/** A small seeded PRNG (mulberry32): uniform in [0, 1). */
function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

async function drainSeeded(backlog: number, limit: number, blind: boolean) {
  const clock = { now: Date.parse('2026-11-26T12:00:00.000Z') };
  const { store, container } = fakeStore(clock);
  const start = clock.now;
  const queue = Array.from({ length: backlog }, () => ({ dueMs: start + Math.floor(Math.random() * 200), throttled: 0 }));
  const admitted: number[] = [];
  let refusals = 0;
  while (queue.length > 0) {
    queue.sort((a, b) => a.dueMs - b.dueMs);
    const message = queue.shift()!;
    clock.now = Math.max(clock.now, message.dueMs);
    const throttled = await takeRateSlot(container(blind), endpoint(limit), message.throttled);
    if (!throttled) {
      admitted.push(clock.now);
      continue;
    }
    refusals += 1;
    const delayMs = Math.ceil(Math.max(0, throttled.untilMs - clock.now) / 1000) * 1000;
    expect(delayMs).toBeLessThanOrEqual(defaultConfig.queueDelayMaxSeconds * 1000);
    queue.push({ dueMs: clock.now + delayMs + Math.floor(Math.random() * 200), throttled: message.throttled + 1 });
  }
  admitted.sort((a, b) => a - b);
  const windows = admitted.slice(limit).map((t, i) => t - admitted[i]);
  if (process.env.THROTTLE_SIM_REPORT) console.log({ backlog, limit, blind, refusals, writes: store.writes, tookMs: admitted[admitted.length - 1] - start });
  return { refusals, writes: store.writes, admitted: admitted.length, shortestSpanOfNPlus1: Math.min(...windows), tookMs: admitted[admitted.length - 1] - start };
}

describe('the endpoint rate limit deferral', () => {
  beforeEach(() => { throttledMetric.mockClear(); });

  it('drains a backlog of 1,000 at 5 a second with about B·log2(B/N) refusals, never more than N in any second', async () => {
    const run = await drain(1000, 5, false);
    expect(run.admitted).toBe(1000);
    expect(throttledMetric.mock.calls.filter(([name]) => name === 'DeliveriesThrottled')).toHaveLength(run.refusals);
    expect(run.refusals).toBeLessThanOrEqual(12_000); // the first-free-lane deferral took ≈ B²/2N ≈ 100,000
    expect(run.writes).toBeLessThanOrEqual(run.refusals + 1000);
    expect(run.shortestSpanOfNPlus1).toBeGreaterThanOrEqual(1000);
    expect(run.tookMs).toBeLessThanOrEqual((1000 / 5 + 900) * 1000);
  });

  it('holds when every receive lands in a container that knows nothing of the lanes', async () => {
    const run = await drain(1000, 5, true);
    expect(run.admitted).toBe(1000);
    expect(run.writes).toBeLessThanOrEqual(12_000 + 1000);
    expect(run.shortestSpanOfNPlus1).toBeGreaterThanOrEqual(1000);
    // Blind containers also refuse when another lane is free: a longer tail, still bounded.
    expect(run.tookMs).toBeLessThanOrEqual((1000 / 5 + 2 * 900) * 1000);
  });

  it('spreads deliveries refused in the same second, wider with each refusal, within a queue delay', async () => {
    const clock = { now: 10_000 };
    const { deps } = fakeStore(clock);
    expect(await takeRateSlot(deps, endpoint(1))).toBeUndefined();
    const first = await Promise.all(Array.from({ length: 20 }, () => takeRateSlot(deps, endpoint(1), 0)));
    expect(new Set(first.map((t) => t!.untilMs)).size).toBeGreaterThan(1);
    for (const t of first) expect(t!.untilMs - clock.now).toBeLessThanOrEqual(1000 + 2000);
    expect(throttleWaitMs(3, defaultConfig, () => 0.999)).toBe(7992);
    expect(throttleWaitMs(30, defaultConfig, () => 0.999)).toBe(899_100);
    expect(throttleWaitMs(30, { queueDelayMaxSeconds: 60 }, () => 0.999)).toBe(59_940);
    const late = await takeRateSlot(deps, endpoint(1), 30);
    expect(late!.untilMs - clock.now).toBeLessThanOrEqual(defaultConfig.queueDelayMaxSeconds * 1000);
  });

  it('refuses without a write while this container knows every lane busy', async () => {
    const clock = { now: 50_000 };
    const { store, deps } = fakeStore(clock);
    expect(await takeRateSlot(deps, endpoint(2))).toBeUndefined();
    expect(await takeRateSlot(deps, endpoint(2))).toBeUndefined();
    const writes = store.writes;
    expect(await takeRateSlot(deps, endpoint(2))).toBeDefined();
    expect(store.writes).toBe(writes);
    clock.now += 1000;
    expect(await takeRateSlot(deps, endpoint(2))).toBeUndefined();
    expect(store.writes).toBe(writes + 1);
  });

  // Moved from test/integration/delivery/endpoint-options.test.ts: the lanes are the store's, the twin is held to DynamoDB's condition by the store's contract.
  it('the limit is shared by every container: one container takes the free lanes, a fresh one is then refused', async () => {
    const clock = { now: 200_000 };
    const { deps, container } = fakeStore(clock);
    const ep = endpoint(3);
    const taken = await Promise.all(Array.from({ length: 10 }, () => takeRateSlot(deps, ep)));
    expect(taken.filter((t) => t === undefined)).toHaveLength(3);
    // Each refused one waits for the first lane its refusal saw free, plus a random wait of up to 2 s (its first refusal).
    for (const t of taken.filter((x) => x !== undefined)) {
      expect(t!.untilMs).toBeGreaterThanOrEqual(clock.now);
      expect(t!.untilMs).toBeLessThanOrEqual(clock.now + 1000 + 2000);
      expect(t!.reason).toMatch(/rate limit \(3 a second\)/);
    }
    clock.now += 500;
    const another = container(true); // another container: it knows nothing of the lanes
    const other = await takeRateSlot(another, ep);
    expect(other?.untilMs).toBeGreaterThanOrEqual(200_000 + 1000);
    // A second after they were taken every lane is free again.
    clock.now = 201_000;
    expect(await takeRateSlot(another, ep)).toBeUndefined();
  });

  it('a throttled write (the item’s own write rate) is a jittered deferral, not an error', async () => {
    const clock = { now: 90_000 };
    for (const name of ['ThrottlingException', 'ProvisionedThroughputExceededException']) {
      const { store, deps } = fakeStore(clock);
      store.twin.inject('claimThrottleLane', Object.assign(new Error('Rate of requests exceeds the allowed throughput.'), { name }));
      const throttled = await takeRateSlot(deps, endpoint(5), 0);
      expect(throttled).toBeDefined();
      expect(throttled!.untilMs).toBeGreaterThanOrEqual(clock.now + 1000);
      expect(throttled!.reason).toMatch(new RegExp(`could not be checked \\(${name}\\).*no attempt used`));
      // The lane it did not take is free to this container again.
      expect(await takeRateSlot(deps, endpoint(5), 0)).toBeUndefined();
    }
    // Any other error is still one (the receive is retried and reported).
    const { store, deps } = fakeStore(clock);
    store.twin.inject('claimThrottleLane', Object.assign(new Error('boom'), { name: 'InternalServerError' }));
    await expect(takeRateSlot(deps, endpoint(5))).rejects.toThrow('boom');
  });
});
