/**
 * Read-modify-write under concurrency (docs/decisions.md "Settings writes: versions and slot
 * items"): a change computed from a read is written with a condition on what was read (a version,
 * a count). When the condition fails, another writer won the race: the change is read again and
 * recomputed, a bounded number of times, then answered 409. Nothing is ever written over a newer
 * state.
 */
import { TransactionCanceledException, type CancellationReason } from '@aws-sdk/client-dynamodb';
import { conflict } from './errors.js';
import { MetricUnit } from '@aws-lambda-powertools/metrics';
import { metrics } from './observability.js';

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
 * wait between tries so the losers spread out; 409 once it has lost RACE_ATTEMPTS times and
 * RACE_BUDGET_MS have passed.
 */
export async function retryLostRaces<T>(what: string, step: () => Promise<T>): Promise<T> {
  const started = Date.now();
  for (let attempt = 1; ; attempt++) {
    try {
      return await step();
    } catch (error) {
      if (!(error instanceof LostRace)) throw error;
      metrics.addMetric('LostRaceRetries', MetricUnit.Count, 1);
      if (attempt >= RACE_ATTEMPTS && Date.now() - started >= RACE_BUDGET_MS) throw conflict(`${what} was changed by another request at the same time; nothing was written. Try again.`);
      await new Promise((r) => setTimeout(r, Math.random() * Math.min(200, 10 * 2 ** attempt)));
    }
  }
}

/** The per-item reasons of a cancelled transaction, or undefined when the error is not one. */
export const cancellationReasons = (error: unknown): CancellationReason[] | undefined =>
  error instanceof TransactionCanceledException ? error.CancellationReasons ?? [] : undefined;

/** A transaction cancelled only because another transaction touched the same item (real DynamoDB, not Local). */
export const isTransactionConflict = (reasons: CancellationReason[]) => reasons.some((r) => r.Code === 'TransactionConflict');
