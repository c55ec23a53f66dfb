/**
 * The retry schedule (DESIGN §11): 5 attempts; delays 1 min, 10 min, 100 min, 12 h with ±10 %
 * jitter, capped at SQS's 12 h visibility maximum. A receiver's Retry-After (429/503) can push the
 * next attempt later, never earlier, and never past the cap.
 */
export const MAX_ATTEMPTS = 5;
export const MAX_VISIBILITY_SECONDS = 43_200;

/** Seconds to wait after failed attempt `attempt` (1-based) before the next one. */
export function retryDelaySeconds(attempt: number, options: { schedule: number[]; jitter: number; retryAfterSeconds?: number; random?: () => number }): number {
  const base = options.schedule[Math.min(attempt, options.schedule.length) - 1] ?? options.schedule.at(-1) ?? 60;
  const random = options.random ?? Math.random;
  const jittered = base * (1 + options.jitter * (2 * random() - 1));
  const wanted = Math.max(jittered, options.retryAfterSeconds ?? 0);
  return Math.min(MAX_VISIBILITY_SECONDS, Math.max(0, Math.round(wanted)));
}

/** A Retry-After header as seconds from `now`: delta-seconds or an HTTP date; undefined if unusable. */
export function parseRetryAfter(value: string | undefined, now: number): number | undefined {
  if (!value) return undefined;
  const trimmed = value.trim();
  if (/^\d+$/.test(trimmed)) return Number(trimmed);
  const at = Date.parse(trimmed);
  return Number.isNaN(at) ? undefined : Math.max(0, Math.ceil((at - now) / 1000));
}
