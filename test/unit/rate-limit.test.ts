/** The sliding-window arithmetic behind Retry-After (functions/core/tenancy/rate-limit.ts), as properties. */
import { describe, it, expect } from '@jest/globals';
import fc from 'fast-check';
import { secondsUntilAdmitted } from '../../functions/core/tenancy/rate-limit.js';

/** Would one more request be admitted at window-relative time `t` (minutes since this window began)? */
function admits(limit: number, prev: number, current: number, t: number): boolean {
  if (t < 1) return prev * (1 - t) + current + 1 <= limit + 1e-9;
  // Next window: this window's count is the previous one; nothing counted yet.
  return current * (1 - (t - 1)) + 1 <= limit + 1e-9;
}

describe('secondsUntilAdmitted', () => {
  it('never answers less than 1 s, and waiting that long admits a request', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 1000 }),
        fc.integer({ min: 0, max: 1000 }),
        fc.integer({ min: 0, max: 1000 }),
        fc.double({ min: 0, max: 0.999, noNaN: true }),
        (limit, prev, current, elapsed) => {
          const s = secondsUntilAdmitted(limit, prev, Math.min(current, limit), elapsed);
          expect(s).toBeGreaterThanOrEqual(1);
          expect(s).toBeLessThanOrEqual(120);
          expect(admits(limit, prev, Math.min(current, limit), elapsed + s / 60)).toBe(true);
        },
      ),
      { numRuns: 2000 },
    );
  });

  it('computes the wait for known cases', () => {
    // 100/min, 100 in the last window, 0 now, 30 s in: the estimate is 50, admits at once…
    expect(secondsUntilAdmitted(100, 100, 0, 0.5)).toBe(1);
    // …but with 50 already counted it waits until prev × (1 − e) ≤ 49, i.e. e = 0.51: 0.6 s → 1 s.
    expect(secondsUntilAdmitted(100, 100, 50, 0.5)).toBe(1);
    // 100 counted this window with 0 before, 10 s in: the next window starts in 50 s and this
    // window's 100 weigh until 1 % of it has passed (0.6 s more).
    expect(secondsUntilAdmitted(100, 0, 100, 10 / 60)).toBe(51);
  });
});
