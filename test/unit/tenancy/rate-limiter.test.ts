/**
 * The rate limiter on the rate-window store's twin, on a clock the test moves (docs/decisions.md
 * "Rate limiter: closed 10 s sub-windows that never over-admit"): 100 a minute, the sliding count
 * across sub-windows, Retry-After, the close of a sub-window at the first check after it ends, one
 * round trip per warm check, failing open or closed, the daily cap. Moved here from
 * test/integration/intake/rate-limit.test.ts (see its header); the arithmetic alone is in
 * rate-limit.test.ts.
 */
import { describe, it, expect } from '@jest/globals';
import { checkRateLimit, reserveDailyCall, SUB_WINDOW_MS } from '../../../functions/core/tenancy/rate-limit.js';
import { givenTenancy } from '../../support/tenancy-deps.js';

/** A minute boundary (a whole number of sub-windows) to place checks from. */
const MINUTE = Date.parse('2026-11-26T09:00:00.000Z');

function limiter(at = MINUTE) {
  const t = givenTenancy({ at });
  const admitted = async (key: string, n: number, limit: number, deps = t.deps) => {
    let count = 0;
    for (let i = 0; i < n; i++) if ((await checkRateLimit(deps, key, limit)).allowed) count += 1;
    return count;
  };
  return { ...t, admitted };
}

describe('the per-key limit', () => {
  it('admits 100 in a minute, refuses the 101st with Retry-After, and spares another key', async () => {
    const t = limiter(MINUTE + 3_000);
    for (let i = 0; i < 100; i++) expect(await checkRateLimit(t.deps, 'key_a', 100)).toMatchObject({ allowed: true, limit: 100, remaining: 99 - i, resetSeconds: 7 });
    // The 100 of second 3 are counted until 61 s after that second began (a request is counted by its second).
    expect(await checkRateLimit(t.deps, 'key_a', 100)).toEqual({ allowed: false, limit: 100, remaining: 0, resetSeconds: 7, retryAfterSeconds: 61 });
    expect(await checkRateLimit(t.deps, 'key_b', 100)).toMatchObject({ allowed: true, remaining: 99 });
    t.now.ms += 60_000;
    expect((await checkRateLimit(t.deps, 'key_a', 100)).allowed).toBe(false);
    t.now.ms += 1_000;
    expect(await checkRateLimit(t.deps, 'key_a', 100)).toMatchObject({ allowed: true, remaining: 99 });
  });

  it('slides across sub-windows: what older sub-windows hold is spent, and frees as they age out, second by second', async () => {
    const t = limiter(MINUTE);
    // 30 in each of the first three sub-windows' first second (0 s, 10 s, 20 s).
    for (const at of [0, 10_000, 20_000]) {
      t.now.ms = MINUTE + at;
      expect(await t.admitted('key', 30, 100)).toBe(30);
    }
    t.now.ms = MINUTE + 30_000;
    expect((await checkRateLimit(t.deps, 'key', 100)).remaining).toBe(9);
    expect(await t.admitted('key', 20, 100)).toBe(9);
    // A second is counted until 60 s after its last millisecond: second 0 up to 60.998 s, second 10 up to 70.998 s.
    t.now.ms = MINUTE + 60_998;
    expect(await t.admitted('key', 1, 100)).toBe(0);
    t.now.ms = MINUTE + 60_999;
    expect(await t.admitted('key', 31, 100)).toBe(30);
    t.now.ms = MINUTE + 70_998;
    expect(await t.admitted('key', 1, 100)).toBe(0);
    t.now.ms = MINUTE + 70_999;
    expect(await t.admitted('key', 31, 100)).toBe(30);
  });

  it('refuses the first request of a new minute after a full previous one, and admits it 60 s after the full second', async () => {
    const t = limiter(MINUTE + 59_500); // the last second of a minute
    expect(await t.admitted('key', 10, 10)).toBe(10);
    t.now.ms = MINUTE + 60_000; // the first millisecond of the next minute
    const first = await checkRateLimit(t.deps, 'key', 10);
    expect(first).toMatchObject({ allowed: false, remaining: 0 });
    // Its full second (59 s–60 s) leaves the span 60 s after its last millisecond: 2 min − 1 ms.
    expect(first.retryAfterSeconds).toBe(60);
    t.now.ms = MINUTE + 60_000 + 58_999;
    expect(await t.admitted('key', 1, 10)).toBe(0);
    t.now.ms = MINUTE + 119_999;
    expect(await t.admitted('key', 12, 10)).toBe(10);
  });

  it('closes a sub-window at the first check after it ends: a write in flight (or from a clock behind) is counted in the open one', async () => {
    const t = limiter(MINUTE + 9_500);
    const behind = { ...t.deps, now: () => MINUTE + 9_900 }; // decided before the boundary, written after it
    expect(await t.admitted('key', 5, 10)).toBe(5);
    t.now.ms = MINUTE + 10_000; // the sub-window just ended: this check closes it, with 5
    expect(await t.admitted('key', 1, 10)).toBe(1);
    // The late checks find their sub-window closed and are counted in the open one: 4 fit, not 5.
    expect(await t.admitted('key', 5, 10, behind)).toBe(4);
    t.now.ms = MINUTE + 10_500;
    expect(await t.admitted('key', 5, 10)).toBe(0);
    const sub = MINUTE / SUB_WINDOW_MS;
    expect(t.windows.subWindows.get(`key#${sub}`)).toMatchObject({ count: 5, closed: true });
    expect(t.windows.subWindows.get(`key#${sub + 1}`)).toMatchObject({ count: 5, closed: false });
  });

  it('counts a check whose sub-window another container closed first in the next one (a lost race)', async () => {
    const t = limiter(MINUTE + 5_000);
    t.windows.faults.inject('countRequest', 'lost-race');
    expect(await checkRateLimit(t.deps, 'key', 10)).toMatchObject({ allowed: true });
    const sub = MINUTE / SUB_WINDOW_MS;
    expect(t.windows.subWindows.get(`key#${sub}`)).toMatchObject({ count: 0, closed: true });
    expect(t.windows.subWindows.get(`key#${sub + 1}`)).toMatchObject({ count: 1, slots: [1, 0, 0, 0, 0, 0, 0, 0, 0, 0] });
  });

  it('never admits more than the limit when many late checks race the close of their sub-window', async () => {
    const t = limiter();
    const at = (ms: number) => ({ ...t.deps, now: () => MINUTE + ms });
    const results = await Promise.all([
      ...Array.from({ length: 15 }, () => checkRateLimit(at(9_990), 'key', 10)), // the old sub-window's last moments
      ...Array.from({ length: 15 }, () => checkRateLimit(at(10_001), 'key', 10)), // the next one's first: these close the old one
    ]);
    expect(results.filter((r) => r.allowed)).toHaveLength(10);
    expect(results.every((r) => !r.failedOpen)).toBe(true);
  });

  it('never admits more than the limit in any 60 s for a caller sending from :45 on, four a second', async () => {
    const t = limiter();
    const times: number[] = [];
    for (let at = 45_000; at < 45_000 + 150_000; at += 250) {
      t.now.ms = MINUTE + at;
      if ((await checkRateLimit(t.deps, 'key', 20)).allowed) times.push(t.now.ms);
    }
    const most = Math.max(...times.map((s) => times.filter((u) => u >= s && u - s < 60_000).length));
    expect(most).toBe(20);
  });

  it('costs one round trip per check once the closed sub-windows are known, and none to refuse a full one', async () => {
    const t = limiter(MINUTE + 2_500);
    await checkRateLimit(t.deps, 'key', 3);
    t.windows.calls.length = 0;
    await checkRateLimit(t.deps, 'key', 3);
    await checkRateLimit(t.deps, 'key', 3);
    expect(t.windows.calls).toEqual(['countRequest', 'countRequest']);
    t.windows.calls.length = 0;
    expect((await checkRateLimit(t.deps, 'key', 3)).allowed).toBe(false);
    expect(t.windows.calls).toEqual([]);
  });
});

describe('when the counter cannot be reached', () => {
  it('admits the request (fail-open) by default and says so', async () => {
    const t = limiter();
    t.windows.faults.inject('readSubWindows', 'throttle');
    await expect(checkRateLimit(t.deps, 'key', 100)).resolves.toMatchObject({ allowed: true, failedOpen: true, limit: 100, remaining: 100 });
    t.windows.faults.inject('countRequest', 'throttle');
    await expect(checkRateLimit(t.deps, 'key', 100)).resolves.toMatchObject({ allowed: true, failedOpen: true });
  });

  it('refuses with 503 and Retry-After when the stage is set to fail closed', async () => {
    const t = limiter();
    const closed = { ...t.deps, config: { ...t.deps.config, rateLimitFailMode: 'closed' as const } };
    t.windows.faults.inject('countRequest', 'throttle');
    await expect(checkRateLimit(closed, 'key', 100)).rejects.toMatchObject({ status: 503, extra: { headers: { 'Retry-After': '5' } } });
  });
});

describe('a publishable key’s daily cap', () => {
  it('reserves up to the cap, gives a released call back, and refuses until the next UTC day', async () => {
    const t = limiter(Date.parse('2026-11-26T23:59:00.000Z'));
    const first = await reserveDailyCall(t.deps, 'key', 2);
    expect(first.allowed).toBe(true);
    expect((await reserveDailyCall(t.deps, 'key', 2)).allowed).toBe(true);
    expect(await reserveDailyCall(t.deps, 'key', 2)).toMatchObject({ allowed: false, retryAfterSeconds: 60 });
    await first.release();
    expect((await reserveDailyCall(t.deps, 'key', 2)).allowed).toBe(true);
    t.now.ms += 60_000;
    expect((await reserveDailyCall(t.deps, 'key', 2)).allowed).toBe(true);
  });

  it('follows the fail mode when the counter cannot be reached', async () => {
    const t = limiter();
    t.windows.faults.inject('reserveDailyCall', 'throttle', 2);
    await expect(reserveDailyCall(t.deps, 'key', 1)).resolves.toMatchObject({ allowed: true });
    const closed = { ...t.deps, config: { ...t.deps.config, rateLimitFailMode: 'closed' as const } };
    await expect(reserveDailyCall(closed, 'key', 1)).rejects.toMatchObject({ status: 503 });
  });
});
