/** The retry schedule: 1 min, 10 min, 100 min, 12 h, ±10 % jitter, Retry-After within the 12 h cap. */
import { describe, it, expect } from '@jest/globals';
import fc from 'fast-check';
import { defaultConfig, MAX_DELIVERY_ATTEMPTS, parseConfig } from '../../../functions/core/platform/config.js';
import { MAX_KEPT_ATTEMPTS } from '../../../functions/core/delivery/attempt-log.js';
import {
  deliveryAttempts, MAX_VISIBILITY_SECONDS, VISIBILITY_SAFETY_MARGIN_SECONDS, nextDelay, parseRetryAfter, receivedAtOf,
  retryDelaySeconds, visibilityLeftSeconds,
} from '../../../functions/core/delivery/schedule.js';

const middle = () => 0.5; // no jitter
const lowest = () => 0;
const highest = () => 0.999_999_999;

describe('retry delays', () => {
  it('default to 1 min, 10 min, 100 min and 12 h: 5 attempts in all', () => {
    expect([1, 2, 3, 4].map((attempt) => nextDelay(attempt, { random: middle }))).toEqual([60, 600, 6000, 43_200]);
    expect(nextDelay(5, { random: middle })).toBeUndefined();
    expect(deliveryAttempts(defaultConfig)).toBe(5);
  });

  it('match the production settings', () => {
    expect(defaultConfig.retryScheduleSeconds).toEqual([60, 600, 6000, 43_200]);
    expect(defaultConfig.retryJitter).toBe(0.1);
  });

  it('decide the attempts: one more than the schedule has delays, each delay used once', () => {
    const schedule = [1, 2, 3, 4, 5, 6, 7, 8];
    expect(deliveryAttempts({ retryScheduleSeconds: schedule })).toBe(9);
    expect(schedule.map((_, i) => nextDelay(i + 1, { schedule, jitter: 0 }))).toEqual(schedule);
    expect(nextDelay(9, { schedule, jitter: 0 })).toBeUndefined();
    expect(deliveryAttempts({ retryScheduleSeconds: [] })).toBe(1);
  });

  it('are refused past the attempts a delivery record can count (its attempt log keeps them all)', () => {
    expect(MAX_KEPT_ATTEMPTS).toBeGreaterThanOrEqual(MAX_DELIVERY_ATTEMPTS);
    expect(deliveryAttempts(parseConfig({ retryScheduleSeconds: Array(MAX_DELIVERY_ATTEMPTS - 1).fill(1) }))).toBe(MAX_DELIVERY_ATTEMPTS);
    expect(() => parseConfig({ retryScheduleSeconds: Array(MAX_DELIVERY_ATTEMPTS).fill(1) })).toThrow(/retryScheduleSeconds has at most 19 delays/);
  });

  it('jitter by at most ±10 %, reaching both ends', () => {
    expect([1, 2, 3, 4].map((attempt) => nextDelay(attempt, { random: lowest }))).toEqual([54, 540, 5400, 38_880]);
    expect([1, 2, 3, 4].map((attempt) => nextDelay(attempt, { random: highest }))).toEqual([66, 660, 6600, 43_200]);
  });

  it('stay within ±10 % of the schedule and never pass SQS’s 12 h visibility limit, whatever the random draw', () => {
    fc.assert(fc.property(fc.integer({ min: 1, max: 4 }), fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }), (attempt, r) => {
      const delay = nextDelay(attempt, { random: () => r })!;
      const base = defaultConfig.retryScheduleSeconds[attempt - 1];
      expect(Number.isInteger(delay)).toBe(true);
      expect(delay).toBeGreaterThanOrEqual(Math.round(base * 0.9));
      expect(delay).toBeLessThanOrEqual(Math.min(MAX_VISIBILITY_SECONDS, Math.round(base * 1.1)));
    }));
  });

  it('follow a configured (compressed) schedule and jitter', () => {
    const options = { schedule: [1, 2, 4], jitter: 0, random: highest };
    expect([1, 2, 3, 4].map((attempt) => nextDelay(attempt, options))).toEqual([1, 2, 4, undefined]);
    expect(nextDelay(0, options)).toBeUndefined();
  });

  it('wait longer when the receiver asks (Retry-After), never shorter, never past the cap', () => {
    expect(nextDelay(1, { random: middle, retryAfterSeconds: 300 })).toBe(300);
    expect(nextDelay(2, { random: middle, retryAfterSeconds: 5 })).toBe(600);
    expect(nextDelay(1, { random: middle, retryAfterSeconds: 999_999 })).toBe(MAX_VISIBILITY_SECONDS);
    expect(nextDelay(4, { random: middle, retryAfterSeconds: 0 })).toBe(MAX_VISIBILITY_SECONDS);
  });

  it('cannot be stretched into more attempts by Retry-After', () => {
    expect(nextDelay(5, { random: middle, retryAfterSeconds: 60 })).toBeUndefined();
  });

  it('keep the earlier retryDelaySeconds, which repeats the last delay past the end', () => {
    const options = { schedule: defaultConfig.retryScheduleSeconds, jitter: defaultConfig.retryJitter, random: middle };
    expect([1, 2, 3, 4, 5].map((attempt) => retryDelaySeconds(attempt, options))).toEqual([60, 600, 6000, 43_200, 43_200]);
    expect(retryDelaySeconds(1, { ...options, retryAfterSeconds: 90 })).toBe(90);
  });
});

describe('the visibility SQS still allows (its 12 h count from the receive)', () => {
  const receivedAt = Date.parse('2026-11-22T12:00:00Z');
  const at = (seconds: number) => receivedAt + seconds * 1000;

  it('is 12 h less the time since the receive and the safety margin, in whole seconds', () => {
    expect(VISIBILITY_SAFETY_MARGIN_SECONDS).toBe(300);
    expect(visibilityLeftSeconds(receivedAt, receivedAt)).toBe(43_200 - 300);
    expect(visibilityLeftSeconds(receivedAt, at(5))).toBe(43_200 - 5 - 300);
    expect(visibilityLeftSeconds(receivedAt, at(5.4))).toBe(43_200 - 6 - 300); // rounded down, never up
    expect(visibilityLeftSeconds(receivedAt, at(5), 0)).toBe(43_195);
  });

  it('is never negative, and a clock behind the receive counts as no time passed', () => {
    expect(visibilityLeftSeconds(receivedAt, at(43_000))).toBe(0);
    expect(visibilityLeftSeconds(receivedAt, at(-30))).toBe(43_200 - 300);
  });

  it('whatever the delay asked and the time passed, what is asked of SQS fits the limit', () => {
    fc.assert(fc.property(fc.integer({ min: 0, max: 10 * 60_000 }), fc.integer({ min: 0, max: 200_000 }), (elapsedMs, wanted) => {
      const asked = Math.min(wanted, visibilityLeftSeconds(receivedAt, receivedAt + elapsedMs));
      // Even a call to SQS landing a full margin later stays within the limit.
      expect(elapsedMs + (asked + VISIBILITY_SAFETY_MARGIN_SECONDS) * 1000).toBeLessThanOrEqual(MAX_VISIBILITY_SECONDS * 1000);
    }));
  });

  it('counts from the first receive when the record is one, else from the batch start', () => {
    const batch = at(2);
    expect(receivedAtOf({ ApproximateReceiveCount: '1', ApproximateFirstReceiveTimestamp: String(receivedAt) }, batch)).toBe(receivedAt);
    // A later receive's own time is not in the record: the first receive is hours older.
    expect(receivedAtOf({ ApproximateReceiveCount: '4', ApproximateFirstReceiveTimestamp: String(receivedAt) }, batch)).toBe(batch);
    expect(receivedAtOf({ ApproximateReceiveCount: '1', ApproximateFirstReceiveTimestamp: String(at(9)) }, batch)).toBe(batch); // skewed clock
    expect(receivedAtOf({}, batch)).toBe(batch);
  });
});

describe('reading Retry-After', () => {
  const now = Date.parse('2026-11-22T12:00:00Z');

  it('reads delta-seconds', () => {
    expect(parseRetryAfter('120', now)).toBe(120);
    expect(parseRetryAfter(' 0 ', now)).toBe(0);
  });

  it('reads an HTTP-date in all three forms, as GMT whatever the local time zone', () => {
    expect(parseRetryAfter('Sun, 22 Nov 2026 12:02:00 GMT', now)).toBe(120);
    expect(parseRetryAfter('Sunday, 22-Nov-26 12:02:00 GMT', now)).toBe(120);
    expect(parseRetryAfter('Sun Nov 22 12:02:00 2026', now)).toBe(120);
  });

  it('reads a date in the past as "now"', () => {
    expect(parseRetryAfter('Sun, 22 Nov 2026 11:00:00 GMT', now)).toBe(0);
  });

  it('ignores what it cannot read', () => {
    for (const value of [undefined, '', 'soon', '-5', '1.5', '12 minutes']) expect(parseRetryAfter(value, now)).toBeUndefined();
  });

  it('takes the first of repeated headers', () => {
    expect(parseRetryAfter(['30', '60'], now)).toBe(30);
  });
});
