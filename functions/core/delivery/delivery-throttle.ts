/**
 * An endpoint's delivery rate limit (docs/webhooks.md "Rate limit"), shared by every delivery
 * container: at most N deliveries to the endpoint in any second. The endpoint's throttle item
 * (keys.endpointThrottle) has N lanes, `l0`…`l<N-1>`, each the time (epoch ms) it last admitted a
 * delivery. A delivery takes one lane with one conditional write: only if that lane last admitted
 * a second or more ago. Each lane admits at most one delivery a second, so N lanes at most N in
 * any second (a sliding window, not a fixed one: no burst of 2N across a window's edge). A
 * refused write answers the item as it was, so the delivery is deferred until its first lane
 * frees, without an attempt (it throttles, it does not fail), and this container learns which
 * lane to try next. Nothing is written for an endpoint without a limit.
 */
import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { MetricUnit } from '@aws-lambda-powertools/metrics';
import type { Deps } from '../platform/deps.js';
import { keys, type WebhookEndpoint } from '../platform/model.js';
import { metrics } from '../platform/observability.js';

const WINDOW_MS = 1000;

/** What this container last knew of each endpoint's lanes: where to try first (a hint; the write decides). */
const lanesSeen = new Map<string, number[]>();
/** Forgets the hints: what a fresh process starts with. */
export const forgetThrottles = () => lanesSeen.clear();

/** The lane known to have admitted longest ago (so most likely free), marked taken here at once so parallel attempts spread. */
function pickLane(endpointId: string, limit: number, now: number): number {
  let seen = lanesSeen.get(endpointId);
  if (!seen || seen.length !== limit) lanesSeen.set(endpointId, (seen = Array.from({ length: limit }, () => 0)));
  let lane = 0;
  for (let i = 1; i < limit; i += 1) if (seen[i] < seen[lane]) lane = i;
  seen[lane] = now;
  return lane;
}

/** Undefined: the delivery may be attempted now. Otherwise: not before `untilMs`, and why. */
export type Throttled = { untilMs: number; reason: string } | undefined;

/** Takes a lane of the endpoint's rate limit for one delivery: one conditional UpdateItem, none without a limit. */
export async function takeRateSlot(deps: Deps, endpoint: WebhookEndpoint): Promise<Throttled> {
  const limit = endpoint.rateLimitPerSecond;
  if (!limit) return undefined;
  const now = deps.now();
  const lane = pickLane(endpoint.id, limit, now);
  try {
    await deps.doc.send(new UpdateCommand({
      TableName: deps.tables.endpoints,
      Key: keys.endpointThrottle(endpoint.organizationId, endpoint.id),
      UpdateExpression: 'SET #l = :now',
      ConditionExpression: 'attribute_not_exists(#l) OR #l <= :free',
      ExpressionAttributeNames: { '#l': `l${lane}` },
      ExpressionAttributeValues: { ':now': now, ':free': now - WINDOW_MS },
      ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
    }));
    return undefined;
  } catch (error) {
    if (!(error instanceof ConditionalCheckFailedException)) throw error;
    const item = error.Item ? unmarshall(error.Item) : {};
    const lanes = Array.from({ length: limit }, (_, i) => Number(item[`l${i}`] ?? 0));
    lanesSeen.set(endpoint.id, lanes);
    metrics.addMetric('DeliveriesThrottled', MetricUnit.Count, 1);
    return { untilMs: Math.max(now, Math.min(...lanes) + WINDOW_MS), reason: `the endpoint's rate limit (${limit} a second) is reached: deferred, no attempt used` };
  }
}
