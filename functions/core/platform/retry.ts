/**
 * The one retry helper (docs/decisions.md "One retry helper"): every retry loop of the domain
 * computes its waits here, with its constants named in BACKOFFS, so a reader compares them in one
 * place. Full jitter: a wait is uniform in [0, min(cap, base * 2^attempt)), so writers that lost
 * the same race spread out instead of retrying together. What each loop retries (a lost
 * condition, unprocessed items, a throttle) its `shouldRetry` says.
 */

export interface Backoff {
  /** The first retry's cap, doubled per attempt. */
  baseMs: number;
  /** No wait is longer than this. */
  capMs: number;
  /** 'full' draws the wait in [0, cap); 'none' waits the cap itself (a fixed, growing pause). */
  jitter?: 'full' | 'none';
}

/** Every backoff of the domain, by the loop that uses it. */
export const BACKOFFS = {
  /** A lead's conditional writes that lost to a concurrent lead of the same organization (intake). */
  leadWrite: { baseMs: 10, capMs: 400 },
  /** Rate-limit counters DynamoDB left unprocessed (throttling). */
  rateWindowUnprocessed: { baseMs: 10, capMs: 200 },
  /** A settings read-modify-write that lost its version check (platform/optimistic.ts). */
  lostRace: { baseMs: 10, capMs: 200 },
  /** Batch reads and writes of the deliveries table left unprocessed (throttling). */
  batchUnprocessed: { baseMs: 25, capMs: 1000, jitter: 'none' },
  /** A delivery the endpoint's rate limit refused again (delivery-throttle.ts): a queue delay, capped at SQS's 900 s. */
  throttleRefused: { baseMs: 1000, capMs: 900_000 },
  /** Empty stream pages while replaying a failed fan-out batch (events/replay.ts): ≤ 1 GetRecords a second beside the live reader. */
  replayEmptyPage: { baseMs: 1000, capMs: 8000, jitter: 'none' },
  /** A notice's sent mark after the e-mail left (notify/mailer.ts): lost, the address would get it again. */
  markSent: { baseMs: 50, capMs: 1000 },
  /** The cap counter's answer and claims after it counted a batch (notify/notice-cap-store.ts): the batch is counted, so these are not given up lightly. */
  noticeCapFollowUp: { baseMs: 25, capMs: 400 },
  /** A batch's notices the notices queue refused (notify/produce.ts handOverNotices): kept for the sweeper after a few tries. */
  noticeHandOver: { baseMs: 100, capMs: 1000 },
  /** Daily-digest jobs the digest queue refused (settings/digest-queue.ts): tried again within the run. */
  digestQueue: { baseMs: 200, capMs: 2000 },
} as const satisfies Record<string, Backoff>;

/** The wait before retry number `attempt` (1 = the first retry), in ms. */
export function backoffMs(attempt: number, backoff: Backoff, random: () => number = Math.random): number {
  const cap = Math.min(backoff.capMs, backoff.baseMs * 2 ** Math.min(Math.max(attempt, 0), 30));
  return backoff.jitter === 'none' ? cap : random() * cap;
}

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

export interface RetryOptions {
  backoff: Backoff;
  /** Tries in all (the first included); the last error is thrown after them. */
  attempts: number;
  /** Whether this error is worth another try; anything else is thrown at once. */
  shouldRetry: (error: unknown) => boolean;
  /** Keep trying past `attempts` until this much time has passed since the first try (ms). */
  budgetMs?: number;
  /** Called before each wait (a metric, a log line). */
  onRetry?: (error: unknown, attempt: number) => void;
  /** Injectable for tests: a clock and a sleep they control. */
  now?: () => number;
  wait?: (ms: number) => Promise<void>;
  random?: () => number;
}

/**
 * Runs `step` until it succeeds, throws what `shouldRetry` refuses, or has failed `attempts` times
 * (and `budgetMs` has passed, when set); waits `backoffMs` between tries.
 */
export async function retry<T>(step: (attempt: number) => Promise<T>, options: RetryOptions): Promise<T> {
  const now = options.now ?? Date.now;
  const wait = options.wait ?? sleep;
  const started = now();
  for (let attempt = 1; ; attempt++) {
    try {
      return await step(attempt);
    } catch (error) {
      if (!options.shouldRetry(error)) throw error;
      const outOfTries = attempt >= options.attempts && (options.budgetMs === undefined || now() - started >= options.budgetMs);
      if (outOfTries) throw error;
      options.onRetry?.(error, attempt);
      await wait(backoffMs(attempt, options.backoff, options.random));
    }
  }
}
