/**
 * The closed sub-window arithmetic (functions/core/tenancy/rate-limit.ts) as properties: what a 60 s
 * span ending at a time holds, and the Retry-After computed from it.
 */
import { describe, it, expect } from '@jest/globals';
import fc from 'fast-check';
import { countedAt, secondsUntilAdmitted, SUB_WINDOW_MS, WINDOW_MS, type SubWindowCounts } from '../../../functions/core/tenancy/rate-limit.js';

const BASE = 1_000_000; // a sub-window number far from zero

/** Known counts: up to 8 sub-windows ending at `BASE`, each with per-second counts. */
const countsArb = fc.array(fc.array(fc.integer({ min: 0, max: 20 }), { minLength: 10, maxLength: 10 }), { minLength: 1, maxLength: 8 })
  .map((subs): SubWindowCounts => new Map(subs.map((slots, i) => [BASE - subs.length + 1 + i, slots])));

/** The exact number of requests in (at − 60 s, at] if each second's requests all came at its last millisecond (the worst case). */
function latestPossible(counts: SubWindowCounts, at: number): number {
  let n = 0;
  for (const [sub, slots] of counts) slots.forEach((c, i) => {
    const last = sub * SUB_WINDOW_MS + i * 1000 + 999;
    const first = sub * SUB_WINDOW_MS + i * 1000;
    if (first <= at && Math.min(last, at) > at - WINDOW_MS) n += c;
  });
  return n;
}

describe('countedAt', () => {
  it('never counts less than a 60 s span could hold', () => {
    fc.assert(fc.property(countsArb, fc.integer({ min: 0, max: 2 * SUB_WINDOW_MS - 1 }), (counts, offset) => {
      const at = BASE * SUB_WINDOW_MS + offset;
      expect(countedAt(counts, at)).toBeGreaterThanOrEqual(latestPossible(counts, at));
    }), { numRuns: 1000 });
  });

  it('counts a second whole while any millisecond of it is inside, and not after', () => {
    const counts: SubWindowCounts = new Map([[BASE, [5, 0, 0, 0, 0, 0, 0, 0, 0, 0]]]);
    const start = BASE * SUB_WINDOW_MS;
    expect(countedAt(counts, start + WINDOW_MS + 998)).toBe(5); // its last millisecond is 59.002 s before
    expect(countedAt(counts, start + WINDOW_MS + 999)).toBe(0); // exactly 60 s after its last millisecond
    expect(countedAt(counts, start - 1)).toBe(0); // not yet
  });
});

describe('secondsUntilAdmitted', () => {
  it('answers the first whole second at which one more request fits', () => {
    fc.assert(fc.property(countsArb, fc.integer({ min: 1, max: 300 }), fc.integer({ min: 0, max: SUB_WINDOW_MS - 1 }), (counts, limit, offset) => {
      const now = BASE * SUB_WINDOW_MS + offset;
      const s = secondsUntilAdmitted(limit, counts, now);
      expect(s).toBeGreaterThanOrEqual(1);
      expect(s).toBeLessThanOrEqual(71);
      expect(countedAt(counts, now + s * 1000)).toBeLessThan(limit);
      if (s > 1) expect(countedAt(counts, now + (s - 1) * 1000)).toBeGreaterThanOrEqual(limit);
    }), { numRuns: 1000 });
  });

  it('makes a full minute wait until its last second has left the span', () => {
    // 10 requests in the last second of a sub-window; asked 1 ms into the next one.
    const counts: SubWindowCounts = new Map([[BASE, [0, 0, 0, 0, 0, 0, 0, 0, 0, 10]]]);
    const now = (BASE + 1) * SUB_WINDOW_MS + 1;
    expect(secondsUntilAdmitted(10, counts, now)).toBe(60);
  });
});
