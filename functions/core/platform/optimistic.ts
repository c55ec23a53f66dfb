/**
 * Read-modify-write under concurrency (docs/decisions.md "Settings writes: versions and slot
 * items"): a change computed from a read is written with a condition on what was read (a version,
 * a count). When the condition fails, another writer won the race: the change is read again and
 * recomputed, a bounded number of times, then answered 409. Nothing is ever written over a newer
 * state.
 */
import { conflict } from './errors.js';
import { MetricUnit } from '@aws-lambda-powertools/metrics';
import { metrics } from './observability.js';
import { BACKOFFS, retry } from './retry.js';


/** Thrown by a step whose conditional write lost to another writer: the step is read and tried again. */
export class LostRace extends Error {
  constructor(what: string) {
    super(`lost a race: ${what}`);
    this.name = 'LostRace';
  }
}

/** Attempts of a read-modify-write before the caller may get 409 (each re-reads). */
export const RACE_ATTEMPTS = 8;
/**
 * ...and the time it keeps trying past them. One item (a slot item, a secret list) takes one
 * winner per round: 40 admins' requests racing a bound of 25 need 25 rounds, so a count alone
 * answered 409 to some while there was still room whenever the rounds were slow (a loaded machine).
 */
export const RACE_BUDGET_MS = 5_000;

/**
 * Runs `step` (read, decide, conditional write) until it does not lose a race, with a jittered
 * wait between tries (BACKOFFS.lostRace) so the losers spread out; 409 once it has lost
 * RACE_ATTEMPTS times and RACE_BUDGET_MS have passed.
 */
export async function retryLostRaces<T>(what: string, step: () => Promise<T>): Promise<T> {
  try {
    return await retry(step, {
      backoff: BACKOFFS.lostRace,
      attempts: RACE_ATTEMPTS,
      budgetMs: RACE_BUDGET_MS,
      shouldRetry: (error) => error instanceof LostRace,
      onRetry: () => metrics.addMetric('LostRaceRetries', MetricUnit.Count, 1),
    });
  } catch (error) {
    if (error instanceof LostRace) throw conflict(`${what} was changed by another request at the same time; nothing was written. Try again.`);
    throw error;
  }
}
