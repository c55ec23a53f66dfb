/** The retry schedule: 1 min, 10 min, 100 min, 12 h, ±10 % jitter, Retry-After within the cap. */
import { describe, it, expect } from '@jest/globals';
import fc from 'fast-check';
import { defaultSettings } from '../../../functions/core/settings.js';
import { MAX_VISIBILITY_SECONDS, parseRetryAfter, retryDelaySeconds } from '../../../functions/core/delivery/schedule.js';

const schedule = defaultSettings.retryScheduleSeconds;
const jitter = defaultSettings.retryJitter;

describe('retry delays', () => {
  it('default to 1 min, 10 min, 100 min and 12 h without jitter', () => {
    expect([1, 2, 3, 4].map((attempt) => retryDelaySeconds(attempt, { schedule, jitter, random: () => 0.5 }))).toEqual([60, 600, 6000, 43_200]);
  });

  it('stay within ±10 % and never pass SQS’s 12 h visibility limit', () => {
    fc.assert(fc.property(fc.integer({ min: 1, max: 4 }), fc.double({ min: 0, max: 0.9999, noNaN: true }), (attempt, r) => {
      const delay = retryDelaySeconds(attempt, { schedule, jitter, random: () => r });
      const base = schedule[attempt - 1];
      expect(delay).toBeGreaterThanOrEqual(Math.floor(base * 0.9));
      expect(delay).toBeLessThanOrEqual(Math.min(MAX_VISIBILITY_SECONDS, Math.ceil(base * 1.1)));
    }));
  });

  it('wait longer when the receiver asks (Retry-After), never shorter, never past the cap', () => {
    expect(retryDelaySeconds(1, { schedule, jitter: 0, retryAfterSeconds: 300 })).toBe(300);
    expect(retryDelaySeconds(2, { schedule, jitter: 0, retryAfterSeconds: 5 })).toBe(600);
    expect(retryDelaySeconds(1, { schedule, jitter: 0, retryAfterSeconds: 999_999 })).toBe(MAX_VISIBILITY_SECONDS);
  });

  it('read Retry-After as seconds or an HTTP date', () => {
    const now = Date.parse('2026-11-22T12:00:00Z');
    expect(parseRetryAfter('120', now)).toBe(120);
    expect(parseRetryAfter('Sun, 22 Nov 2026 12:02:00 GMT', now)).toBe(120);
    expect(parseRetryAfter('soon', now)).toBeUndefined();
    expect(parseRetryAfter(undefined, now)).toBeUndefined();
  });
});
