/**
 * Retrying lost races (functions/core/platform/optimistic.ts) through the one retry helper: a step
 * that lost is read and tried again after a jittered wait, a step that keeps losing is answered 409
 * once RACE_ATTEMPTS tries and RACE_BUDGET_MS have passed, and any other error is thrown at once.
 */
import { describe, it, expect, jest, afterEach } from '@jest/globals';
import { LostRace, RACE_ATTEMPTS, RACE_BUDGET_MS, retryLostRaces } from '../../../functions/core/platform/optimistic.js';

afterEach(() => { jest.useRealTimers(); });

describe('retryLostRaces', () => {
  it('tries again after a lost race, and answers what the step answers', async () => {
    let tries = 0;
    await expect(retryLostRaces('The key', async () => {
      tries += 1;
      if (tries < 3) throw new LostRace('key slots');
      return 'written';
    })).resolves.toBe('written');
    expect(tries).toBe(3);
  });

  it('throws any other error at once', async () => {
    let tries = 0;
    await expect(retryLostRaces('The key', async () => { tries += 1; throw new Error('throttled'); })).rejects.toThrow('throttled');
    expect(tries).toBe(1);
  });

  it('answers 409 only after RACE_ATTEMPTS tries and RACE_BUDGET_MS', async () => {
    jest.useFakeTimers();
    const started = Date.now();
    let tries = 0;
    let settledAt = 0;
    const outcome = retryLostRaces('The key', async () => { tries += 1; throw new LostRace('key slots'); })
      .catch((error: unknown) => { settledAt = Date.now(); return error; });
    await jest.advanceTimersByTimeAsync(RACE_BUDGET_MS + 1_000);
    expect(await outcome).toMatchObject({ status: 409, message: expect.stringContaining('The key was changed by another request') });
    expect(tries).toBeGreaterThan(RACE_ATTEMPTS);
    expect(settledAt - started).toBeGreaterThanOrEqual(RACE_BUDGET_MS);
  });
});
