/**
 * Per-key sliding-window rate limit (DESIGN §8), also per client address of a publishable key (§15:
 * the same algorithm on the key `<keyId>#ip#<address>`), and a publishable key's daily cap.
 * One item per key per minute holds that minute's
 * count; the estimate is `previous × (1 − elapsed) + current`. Admission is a single conditional
 * UpdateItem (ADD 1 if current < floor(limit − previous × (1 − elapsed))); the previous minute's
 * count is read once per key and cached until the minute ends.
 */
import { GetCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import type { Deps } from '../platform/deps.js';
import type { Organization } from '../platform/model.js';
import { logger, metrics } from '../platform/observability.js';
import { DomainError } from '../platform/errors.js';
import { TtlCache } from '../platform/ttl-cache.js';
import { MetricUnit } from '@aws-lambda-powertools/metrics';
import { isIP } from 'node:net';
import { ipv6Bytes } from '../platform/ip-ranges.js';

const WINDOW_MS = 60_000;

export interface RateLimitState {
  allowed: boolean;
  limit: number;
  remaining: number;
  /** Seconds until the current window ends. */
  resetSeconds: number;
  /** When refused: seconds until a request would be admitted (≥ 1). */
  retryAfterSeconds?: number;
  /** True when the counter could not be reached and the request was admitted anyway. */
  failedOpen?: boolean;
}

export function rateLimitFor(deps: Deps, org: Organization): number {
  return org.rateLimitPerMinute ?? deps.settings.planRateLimits[org.plan] ?? deps.settings.defaultRateLimitPerMinute;
}

const windowKey = (keyId: string, window: number) => ({ pk: `RL#${keyId}#${window}` });

/** Previous-window counts by key: fixed once that window is over, so cached for the whole minute. */
const previousCounts = new TtlCache<string, { window: number; count: number }>(50_000);

async function previousCount(deps: Deps, keyId: string, window: number): Promise<number> {
  const cached = previousCounts.get(keyId, deps.now());
  if (cached?.value.window === window) return cached.value.count;
  const { Item } = await deps.doc.send(new GetCommand({ TableName: deps.tables.rateWindows, Key: windowKey(keyId, window - 1) }));
  const count = Number(Item?.count ?? 0);
  previousCounts.set(keyId, { window, count }, (window + 1) * WINDOW_MS);
  return count;
}

/** Seconds until `prev × (1 − e) + current + 1 ≤ limit` holds again (this window or the next). */
export function secondsUntilAdmitted(limit: number, prev: number, current: number, elapsed: number): number {
  let seconds: number;
  if (current + 1 <= limit && prev > 0) {
    const e = 1 - (limit - current - 1) / prev; // still this window
    seconds = (e - elapsed) * 60;
  } else {
    // In the next window this window's count becomes the previous one.
    const e = current > 0 ? Math.max(0, 1 - (limit - 1) / current) : 0;
    seconds = (1 - elapsed + e) * 60;
  }
  return Math.max(1, Math.ceil(seconds));
}

export async function checkRateLimit(deps: Deps, keyId: string, limit: number): Promise<RateLimitState> {
  const now = deps.now();
  const window = Math.floor(now / WINDOW_MS);
  const elapsed = (now % WINDOW_MS) / WINDOW_MS;
  const resetSeconds = Math.max(1, Math.ceil((WINDOW_MS - (now % WINDOW_MS)) / 1000));
  try {
    const prev = await previousCount(deps, keyId, window);
    const threshold = Math.floor(limit - prev * (1 - elapsed));
    if (threshold <= 0) {
      return { allowed: false, limit, remaining: 0, resetSeconds, retryAfterSeconds: secondsUntilAdmitted(limit, prev, 0, elapsed) };
    }
    try {
      const { Attributes } = await deps.doc.send(new UpdateCommand({
        TableName: deps.tables.rateWindows,
        Key: windowKey(keyId, window),
        UpdateExpression: 'ADD #c :one SET expiresAt = if_not_exists(expiresAt, :ttl)',
        ConditionExpression: 'attribute_not_exists(#c) OR #c < :threshold',
        ExpressionAttributeNames: { '#c': 'count' },
        ExpressionAttributeValues: { ':one': 1, ':threshold': threshold, ':ttl': Math.floor(((window + 3) * WINDOW_MS) / 1000) },
        ReturnValues: 'UPDATED_NEW',
        ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
      }));
      return { allowed: true, limit, remaining: Math.max(0, threshold - Number(Attributes?.count ?? 1)), resetSeconds };
    } catch (error) {
      if (!(error instanceof ConditionalCheckFailedException)) throw error;
      const current = Number(error.Item?.count?.N ?? threshold);
      return { allowed: false, limit, remaining: 0, resetSeconds, retryAfterSeconds: secondsUntilAdmitted(limit, prev, current, elapsed) };
    }
  } catch (error) {
    // The counter is unreachable. Fail open (default) so an outage of the limiter is not an outage
    // of lead intake; the metric makes it visible. 'closed' refuses with 503 instead.
    // The key id only: an address window's key holds the client's address, which logs never carry.
    logger.warn('rate limit check failed', { keyId: keyId.split(ADDRESS_SEPARATOR)[0], error: (error as Error).name, mode: deps.settings.rateLimitFailMode });
    metrics.addMetric('RateLimitFailOpen', MetricUnit.Count, 1);
    if (deps.settings.rateLimitFailMode === 'closed') {
      throw new DomainError(503, 'rate-limit-unavailable', 'Service unavailable', 'The rate limiter is unavailable; retry shortly.', { headers: { 'Retry-After': '5' } });
    }
    return { allowed: true, limit, remaining: limit, resetSeconds, failedOpen: true };
  }
}

/** Headers every response of an identified key carries (IETF RateLimit draft + the X- variants). */
export function rateLimitHeaders(state: RateLimitState): Record<string, string> {
  return {
    'RateLimit-Policy': `${state.limit};w=60`,
    RateLimit: `limit=${state.limit}, remaining=${state.remaining}, reset=${state.resetSeconds}`,
    'X-RateLimit-Limit': String(state.limit),
    'X-RateLimit-Remaining': String(state.remaining),
    'X-RateLimit-Reset': String(state.resetSeconds),
  };
}

const ADDRESS_SEPARATOR = '#ip#';

/**
 * The address a per-address window counts, as `<keyId>#ip#<address>`: an IPv4 address as it is, an
 * IPv6 address by its /64 (one subscriber's LAN gets a whole /64, and rotating within it is free),
 * written as the first four groups. Anything unparsable counts under `unknown`, together.
 */
export function addressWindowKey(keyId: string, address: string | undefined): string {
  const ip = (address ?? '').trim().replace(/^::ffff:(?=\d+\.\d+\.\d+\.\d+$)/i, '');
  let part = 'unknown';
  if (isIP(ip) === 4) part = ip;
  else if (isIP(ip) === 6) {
    const bytes = ipv6Bytes(ip);
    const groups = [0, 2, 4, 6].map((i) => ((bytes[i] << 8) | bytes[i + 1]).toString(16));
    part = `${groups.join(':')}::/64`;
  }
  return `${keyId}${ADDRESS_SEPARATOR}${part}`;
}

/**
 * The per-client-address window of a publishable key (DESIGN §15): the same sliding window and its one
 * conditional write, per (key, address). A cold address costs one GetItem (the previous minute) and
 * one UpdateItem; a warm one (seen this minute by this container) only the UpdateItem.
 */
export function checkAddressRateLimit(deps: Deps, keyId: string, address: string | undefined, limit: number): Promise<RateLimitState> {
  return checkRateLimit(deps, addressWindowKey(keyId, address), limit);
}

/** The daily cap's counter of a key: one item per key per UTC day, gone two days later (TTL). */
const dailyKey = (keyId: string, day: string) => ({ pk: `CAP#${keyId}#${day}` });

export interface DailyReservation {
  allowed: boolean;
  /** When refused: seconds until the next UTC day. */
  retryAfterSeconds?: number;
  /** Gives the reserved call back (the lead was not created after all); never throws. */
  release(): Promise<void>;
}

/**
 * Reserves one of the key's `cap` billed calls of the UTC day, before the lead is created: one
 * conditional ADD, so concurrent requests never overshoot the cap; a request that then fails
 * releases its reservation. An unreachable counter follows rateLimitFailMode, as the windows do.
 */
export async function reserveDailyCall(deps: Deps, keyId: string, cap: number): Promise<DailyReservation> {
  const now = deps.now();
  const day = new Date(now).toISOString().slice(0, 10);
  const nextDay = (Math.floor(now / 86_400_000) + 1) * 86_400_000;
  const key = dailyKey(keyId, day);
  const release = async () => {
    try {
      await deps.doc.send(new UpdateCommand({ TableName: deps.tables.rateWindows, Key: key, UpdateExpression: 'ADD #c :minus', ExpressionAttributeNames: { '#c': 'count' }, ExpressionAttributeValues: { ':minus': -1 } }));
    } catch (error) {
      logger.warn('could not release a daily-cap reservation', { keyId, error: (error as Error).name });
    }
  };
  try {
    await deps.doc.send(new UpdateCommand({
      TableName: deps.tables.rateWindows,
      Key: key,
      UpdateExpression: 'ADD #c :one SET expiresAt = if_not_exists(expiresAt, :ttl)',
      ConditionExpression: 'attribute_not_exists(#c) OR #c < :cap',
      ExpressionAttributeNames: { '#c': 'count' },
      ExpressionAttributeValues: { ':one': 1, ':cap': cap, ':ttl': Math.floor(nextDay / 1000) + 86_400 },
    }));
    return { allowed: true, release };
  } catch (error) {
    if (error instanceof ConditionalCheckFailedException) {
      return { allowed: false, retryAfterSeconds: Math.max(1, Math.ceil((nextDay - now) / 1000)), release: async () => undefined };
    }
    logger.warn('daily cap check failed', { keyId, error: (error as Error).name, mode: deps.settings.rateLimitFailMode });
    metrics.addMetric('RateLimitFailOpen', MetricUnit.Count, 1);
    if (deps.settings.rateLimitFailMode === 'closed') {
      throw new DomainError(503, 'rate-limit-unavailable', 'Service unavailable', 'The rate limiter is unavailable; retry shortly.', { headers: { 'Retry-After': '5' } });
    }
    return { allowed: true, release: async () => undefined };
  }
}
