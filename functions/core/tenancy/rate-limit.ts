/**
 * Per-key rate limit (docs/decisions.md "Rate limiter: closed 10 s sub-windows that never over-admit"), also per client address
 * of a publishable key (the same algorithm on the key `<keyId>#ip#<address>`), and a publishable
 * key's daily cap.
 *
 * Closed sub-windows: time is cut into 10 s sub-windows, one item per key per sub-window holding its
 * count and its per-second counts. A request at `now` is admitted by one conditional UpdateItem on the
 * open sub-window: ADD 1 if it is not closed and its count < limit − (what the closed sub-windows hold
 * inside (now − 60 s, now]), the oldest one counted by the second. So no 60 s span ever holds more than
 * the limit, whatever the arrival pattern; the cost is that a request is counted up to 1 s longer than
 * 60 s (its second). The first check of a container after a boundary closes the sub-window that just
 * ended (one UpdateItem that sets `closed` and returns its final counts), so a write still in flight
 * fails its condition and is counted in the open sub-window instead; final counts are cached until
 * they age out, so a busy key costs one request per check plus one per 10 s.
 * The items are read and written through tenancy/rate-window-store.ts.
 */
import type { Deps } from '../platform/deps.js';
import { statePerStore } from '../platform/deps-port.js';
import type { Organization } from '../platform/model.js';
import { logger, metrics } from '../platform/observability.js';
import { DomainError } from '../platform/errors.js';
import { TtlCache } from '../platform/ttl-cache.js';
import { MetricUnit } from '@aws-lambda-powertools/metrics';
import { isIP } from 'node:net';
import { ipv6Bytes } from '../platform/ip-ranges.js';
import { injectedRateWindowStore, rateWindowStore, SLOTS, slotsOf, type RateWindowStore } from './rate-window-store.js';

export const WINDOW_MS = 60_000;
export const SUB_WINDOW_MS = 10_000;
const SLOT_MS = SUB_WINDOW_MS / SLOTS;
/** Closed sub-windows a 60 s span ending in the open one can reach: the five it covers and the one it cuts. */
const LOOKBACK = WINDOW_MS / SUB_WINDOW_MS;

export interface RateLimitState {
  allowed: boolean;
  limit: number;
  remaining: number;
  /** Seconds until the open sub-window ends (when closed counts next age out). */
  resetSeconds: number;
  /** When refused: seconds until a request would be admitted (≥ 1). */
  retryAfterSeconds?: number;
  /** True when the counter could not be reached and the request was admitted anyway. */
  failedOpen?: boolean;
}

export function rateLimitFor(deps: Deps, org: Organization): number {
  return org.rateLimitPerMinute ?? deps.config.planRateLimits[org.plan] ?? deps.config.defaultRateLimitPerMinute;
}

/** Per-second counts of sub-windows, by sub-window number (`floor(ms / 10 s)`). */
export type SubWindowCounts = Map<number, number[]>;

const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);

/**
 * Requests the known sub-windows hold that may lie in the 60 s span ending at `at`, (at − 60 s, at]:
 * a second counts whole when any millisecond of it is inside.
 */
export function countedAt(counts: SubWindowCounts, at: number): number {
  let total = 0;
  for (const [sub, slots] of counts) {
    slots.forEach((n, i) => {
      const start = sub * SUB_WINDOW_MS + i * SLOT_MS;
      if (start <= at && start + SLOT_MS - 1 > at - WINDOW_MS) total += n;
    });
  }
  return total;
}

/** Whole seconds until one more request fits: the first `s ≥ 1` with countedAt(now + s) < limit, if nothing else is admitted. */
export function secondsUntilAdmitted(limit: number, counts: SubWindowCounts, now: number): number {
  const longest = (WINDOW_MS + SUB_WINDOW_MS) / 1000 + 1;
  for (let s = 1; s < longest; s++) if (countedAt(counts, now + s * 1000) < limit) return s;
  return longest;
}

/**
 * How long after its end a sub-window may still take a write: one decided just before the boundary
 * and in flight (or sent from a container whose clock runs behind). The previous sub-window is closed
 * by the first check within this time after its end; an older one is read, and taken as final
 * (docs/decisions.md, the limiter's bound).
 */
export const SETTLE_MS = 2_000;
/** Retries of a check whose sub-window was closed under it (its clock behind, or its write in flight). */
const MOVES = 3;

/**
 * What a container knows of the windows: closed sub-windows' final counts (kept until they age
 * out), the open sub-window's counts as last answered (a lower bound: they only grow, so a full one
 * is refused without a write), and reads under way (concurrent checks of one key at a sub-window's
 * start share one). Each bounded.
 */
class LimiterCaches {
  /** By `<keyId>#<sub>`. */
  readonly closedCounts = new TtlCache<string, number[]>(100_000);
  readonly openCounts = new TtlCache<string, { sub: number; slots: number[] }>(50_000);
  /** By `<keyId>#<open>`. */
  readonly reading = new Map<string, Promise<SubWindowCounts>>();
}

/** The container's caches; deps carrying a store of their own (withRateWindowStore: a test's twin) get caches of their own. */
const perStore = statePerStore<RateWindowStore, LimiterCaches>(() => new LimiterCaches(), injectedRateWindowStore);
const cachesOf = (deps: Deps): LimiterCaches => perStore.of(deps);

const keepClosed = (caches: LimiterCaches, keyId: string, sub: number, slots: number[]) => caches.closedCounts.set(`${keyId}#${sub}`, slots, (sub + LOOKBACK + 2) * SUB_WINDOW_MS);
const ttlOf = (sub: number) => Math.floor(((sub + LOOKBACK + 3) * SUB_WINDOW_MS) / 1000);

/** The closed sub-windows a check at sub-window `open` needs, for those not cached: the previous one closed, the others read. */
function closedSubWindows(deps: Deps, keyId: string, open: number): Promise<SubWindowCounts> {
  const { reading } = cachesOf(deps);
  const id = `${keyId}#${open}`;
  const running = reading.get(id);
  if (running) return running.then((counts) => new Map(counts));
  const read = readClosed(deps, keyId, open).finally(() => reading.delete(id));
  reading.set(id, read);
  return read.then((counts) => new Map(counts));
}

async function readClosed(deps: Deps, keyId: string, open: number): Promise<SubWindowCounts> {
  const caches = cachesOf(deps);
  const store = rateWindowStore(deps);
  const counts: SubWindowCounts = new Map();
  const missing: number[] = [];
  const now = deps.now();
  for (let sub = open - LOOKBACK; sub < open; sub++) {
    const cached = caches.closedCounts.get(`${keyId}#${sub}`, now);
    if (cached) counts.set(sub, cached.value);
    else missing.push(sub);
  }
  // The previous sub-window, ended less than SETTLE_MS ago, may still take a write: close it rather than read it.
  const previous = open - 1;
  const closing = missing.includes(previous) && now < open * SUB_WINDOW_MS + SETTLE_MS;
  const toRead = closing ? missing.filter((sub) => sub !== previous) : missing;
  const [closedNow, found] = await Promise.all([
    closing ? store.closeSubWindow(keyId, previous, ttlOf(previous)) : undefined,
    toRead.length ? store.readSubWindows(keyId, toRead) : new Map<number, number[]>(),
  ]);
  if (closedNow) {
    counts.set(previous, closedNow);
    keepClosed(caches, keyId, previous, closedNow);
  }
  for (const [sub, slots] of found) {
    counts.set(sub, slots);
    keepClosed(caches, keyId, sub, slots);
  }
  return counts;
}

export async function checkRateLimit(deps: Deps, keyId: string, limit: number): Promise<RateLimitState> {
  const now = deps.now();
  const resetSeconds = Math.max(1, Math.ceil((Math.floor(now / SUB_WINDOW_MS + 1) * SUB_WINDOW_MS - now) / 1000));
  try {
    let open = Math.floor(now / SUB_WINDOW_MS);
    let at = now;
    const counts = await closedSubWindows(deps, keyId, open);
    for (let move = 0; move < MOVES; move++) {
      const outcome = await admit(deps, keyId, limit, counts, open, at);
      if (outcome !== 'closed') return { ...outcome, limit, resetSeconds };
      // Its sub-window was closed under it (this container's clock is behind, or the write was late):
      // counted in the next one, from its first millisecond.
      open += 1;
      at = open * SUB_WINDOW_MS;
    }
    throw new Error('rate limit sub-window closed repeatedly');
  } catch (error) {
    // The counter is unreachable. Fail open (default) so an outage of the limiter is not an outage
    // of lead intake; the metric makes it visible. 'closed' refuses with 503 instead.
    // The key id only: an address window's key holds the client's address, which logs never carry.
    logger.warn('rate limit check failed', { keyId: keyId.split(ADDRESS_SEPARATOR)[0], error: (error as Error).name, mode: deps.config.rateLimitFailMode });
    metrics.addMetric('RateLimitFailOpen', MetricUnit.Count, 1);
    if (deps.config.rateLimitFailMode === 'closed') {
      throw new DomainError(503, 'rate-limit-unavailable', 'Service unavailable', 'The rate limiter is unavailable; retry shortly.', { headers: { 'Retry-After': '5' } });
    }
    return { allowed: true, limit, remaining: limit, resetSeconds, failedOpen: true };
  }
}

/**
 * One conditional write on sub-window `open` for a check at `at`, given the closed sub-windows before
 * it (`counts`, completed with `open` itself when it turns out closed). 'closed' when it was.
 */
async function admit(deps: Deps, keyId: string, limit: number, counts: SubWindowCounts, open: number, at: number): Promise<Omit<RateLimitState, 'limit' | 'resetSeconds'> | 'closed'> {
  const slot = Math.floor((at % SUB_WINDOW_MS) / SLOT_MS);
  const threshold = limit - countedAt(counts, at);
  const refuse = (slots: number[]) => {
    const all = new Map(counts).set(open, slots);
    return { allowed: false, remaining: 0, retryAfterSeconds: secondsUntilAdmitted(limit, all, at) };
  };
  const caches = cachesOf(deps);
  const seen = caches.openCounts.get(keyId, at)?.value;
  const known = seen?.sub === open ? seen.slots : undefined;
  if (threshold <= 0 || (known && sum(known) >= threshold)) return refuse(known ?? slotsOf(undefined));
  const { outcome, slots } = await rateWindowStore(deps).countRequest(keyId, open, slot, threshold, ttlOf(open));
  if (outcome === 'closed') {
    counts.set(open, slots);
    keepClosed(caches, keyId, open, slots);
    return 'closed';
  }
  caches.openCounts.set(keyId, { sub: open, slots }, (open + 1) * SUB_WINDOW_MS);
  return outcome === 'counted' ? { allowed: true, remaining: Math.max(0, threshold - sum(slots)) } : refuse(slots);
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
 * The per-client-address window of a publishable key: the same closed sub-windows and their one
 * conditional write, per (key, address). A cold address costs one BatchGetItem (its closed
 * sub-windows, usually none) and one UpdateItem; a warm one only the UpdateItem.
 */
export function checkAddressRateLimit(deps: Deps, keyId: string, address: string | undefined, limit: number): Promise<RateLimitState> {
  return checkRateLimit(deps, addressWindowKey(keyId, address), limit);
}

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
  const store = rateWindowStore(deps);
  const release = async () => {
    try {
      await store.releaseDailyCall(keyId, day);
    } catch (error) {
      logger.warn('could not release a daily-cap reservation', { keyId, error: (error as Error).name });
    }
  };
  try {
    // The day's counter is gone (TTL) a day after the day ends.
    if (await store.reserveDailyCall(keyId, day, cap, Math.floor(nextDay / 1000) + 86_400)) return { allowed: true, release };
    return { allowed: false, retryAfterSeconds: Math.max(1, Math.ceil((nextDay - now) / 1000)), release: async () => undefined };
  } catch (error) {
    logger.warn('daily cap check failed', { keyId, error: (error as Error).name, mode: deps.config.rateLimitFailMode });
    metrics.addMetric('RateLimitFailOpen', MetricUnit.Count, 1);
    if (deps.config.rateLimitFailMode === 'closed') {
      throw new DomainError(503, 'rate-limit-unavailable', 'Service unavailable', 'The rate limiter is unavailable; retry shortly.', { headers: { 'Retry-After': '5' } });
    }
    return { allowed: true, release: async () => undefined };
  }
}
