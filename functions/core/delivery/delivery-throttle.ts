/**
 * An endpoint's delivery rate limit (docs/webhooks.md "Rate limit"), shared by every delivery
 * container: at most N deliveries to the endpoint in any second. The endpoint's throttle item
 * (keys.endpointThrottle) has N lanes, `l0`…`l<N-1>`, each the time (epoch ms) it last admitted a
 * delivery. A delivery takes one lane with one conditional write: only if that lane last admitted
 * a second or more ago. Each lane admits at most one delivery a second, so N lanes at most N in
 * any second (a sliding window, not a fixed one: no burst of 2N across a window's edge). Nothing
 * is written for an endpoint without a limit.
 *
 * A refused delivery is deferred without an attempt (it throttles, it does not fail), past its
 * first lane's free time by a random wait in a window that doubles with each refusal of the same
 * delivery (DeliveryMessage.throttled), capped at a queue delay: a backlog spreads out instead of
 * waking together every second (docs/decisions.md "An endpoint's rate limit: lanes, one
 * conditional write"). A refused write answers the item as it was, so this container learns when
 * every lane is busy until, and refuses without writing until then. A throttled write (the item's
 * own write rate) is a deferral too, never a failed receive.
 */
import { MetricUnit } from '@aws-lambda-powertools/metrics';
import type { Deps } from '../platform/deps.js';
import type { WebhookEndpoint } from '../platform/model.js';
import { logger, metrics } from '../platform/observability.js';
import { backoffMs, BACKOFFS } from '../platform/retry.js';
import { containerMemory } from './container-memory.js';
import { endpointStore } from './endpoint-store.js';

const WINDOW_MS = 1000;
/** The largest deferral window: an SQS message delay (so a throttled delivery never leaves the queue). */
const MAX_WINDOW_SECONDS = BACKOFFS.throttleRefused.capMs / 1000;
/** Errors that mean the throttle item's write rate (or a transaction on it) refused the write, not the limit. */
const OVERLOADED = new Set(['ThrottlingException', 'ProvisionedThroughputExceededException', 'RequestLimitExceeded', 'TransactionConflictException']);

/** This container's view of the endpoint's lanes (all free when it knows nothing): its ContainerMemory's hint, where to try first. */
function seenLanes(lanesSeen: Map<string, number[]>, endpointId: string, limit: number): number[] {
  let seen = lanesSeen.get(endpointId);
  if (!seen || seen.length !== limit) lanesSeen.set(endpointId, (seen = Array.from({ length: limit }, () => Number.NEGATIVE_INFINITY)));
  return seen;
}

/**
 * The lane known to have admitted longest ago (so most likely free), marked taken here at once so
 * parallel attempts spread. Ties go to a random lane: containers that know nothing do not all write lane 0.
 */
function pickLane(seen: number[], now: number): number {
  const from = Math.floor(Math.random() * seen.length);
  let lane = from;
  for (let k = 1; k < seen.length; k += 1) {
    const i = (from + k) % seen.length;
    if (seen[i] < seen[lane]) lane = i;
  }
  seen[lane] = now;
  return lane;
}

/**
 * The random wait (ms) of a delivery refused for the `refusals`-th time in a row: full jitter over
 * 2^refusals seconds (BACKOFFS.throttleRefused), capped at the queue's largest delay. Not a retry
 * loop (the delivery waits as a delayed message), but the same shape, so the same helper.
 */
export function throttleWaitMs(refusals: number, config: Pick<Deps['config'], 'queueDelayMaxSeconds'>, random: () => number = Math.random): number {
  return Math.floor(backoffMs(Math.min(refusals, 10), { ...BACKOFFS.throttleRefused, capMs: maxWaitMs(config) }, random));
}

/** The longest a refused delivery waits: the queue's largest delay, so it stays one delayed message. */
const maxWaitMs = (config: Pick<Deps['config'], 'queueDelayMaxSeconds'>) => Math.min(MAX_WINDOW_SECONDS, config.queueDelayMaxSeconds) * 1000;

/** Undefined: the delivery may be attempted now. Otherwise: not before `untilMs`, and why. */
export type Throttled = { untilMs: number; reason: string } | undefined;

/**
 * Takes a lane of the endpoint's rate limit for one delivery: one conditional UpdateItem (none
 * without a limit, none while this container knows every lane busy). `refused`: how often this
 * delivery was refused before (DeliveryMessage.throttled), which widens its wait.
 */
export async function takeRateSlot(deps: Deps, endpoint: WebhookEndpoint, refused = 0): Promise<Throttled> {
  const limit = endpoint.rateLimitPerSecond;
  if (!limit) return undefined;
  const now = deps.now();
  const { lanesSeen } = containerMemory(deps);
  const seen = seenLanes(lanesSeen, endpoint.id, limit);
  const defer = (freeAt: number, why: string): Throttled => {
    metrics.addMetric('DeliveriesThrottled', MetricUnit.Count, 1);
    const untilMs = Math.min(now + maxWaitMs(deps.config), Math.max(now, freeAt) + throttleWaitMs(refused + 1, deps.config));
    return { untilMs, reason: `${why}: deferred, no attempt used` };
  };
  const reached = `the endpoint's rate limit (${limit} a second) is reached`;
  // Every lane known busy (the item's lanes only move forward): no write can succeed before the first frees.
  const firstFree = Math.min(...seen) + WINDOW_MS;
  if (firstFree > now) return defer(firstFree, reached);
  const lane = pickLane(seen, now);
  let claim;
  try {
    claim = await endpointStore(deps).claimThrottleLane(endpoint, { lane, lanes: limit, now, windowMs: WINDOW_MS });
  } catch (error) {
    if (!OVERLOADED.has((error as Error).name)) throw error;
    seen[lane] = Number.NEGATIVE_INFINITY; // not taken
    logger.warn('the rate limit write was throttled; the delivery is deferred', { organizationId: endpoint.organizationId, endpointId: endpoint.id, refused, error: (error as Error).name });
    return defer(now + WINDOW_MS, `the endpoint's rate limit could not be checked (${(error as Error).name})`);
  }
  if (claim.taken) return undefined;
  lanesSeen.set(endpoint.id, claim.lanes);
  return defer(Math.min(...claim.lanes) + WINDOW_MS, reached);
}
