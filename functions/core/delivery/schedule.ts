/**
 * The retry schedule (docs/webhooks.md#answering-retries-and-failures): the configured delays
 * (settings.retryScheduleSeconds, defined with its default in platform/config.ts) are the waits
 * before attempts 2, 3, …, so a delivery makes one attempt more than the schedule has delays
 * (deliveryAttempts); the default's 1 min, 10 min, 100 min and 12 h make 5. Each delay has ±jitter
 * (settings.retryJitter; so retries of many deliveries that failed together spread out), never
 * more than 12 h. A retry does not wait in flight (docs/architecture.md#retries-and-dead-letters): up to
 * settings.queueDelayMaxSeconds it is a delayed message, longer it is parked in the due index
 * (deliver.ts, sweep.ts). visibilityLeftSeconds / receivedAtOf remain for code that still hides a
 * received message (the dead-letter passes in redeliver.ts, lib/local/sqs-strict.ts).
 *
 * Retry-After (from a 429 or 503) is honoured *within the schedule*: the next attempt waits
 * max(scheduled delay, Retry-After), capped at 12 h. A receiver can push an attempt later, never
 * earlier, and cannot add attempts; one asking for more than 12 h is retried at 12 h.
 */
import { defaultConfig } from '../platform/config.js';

export { deliveryAttempts } from '../platform/config.js';

/** SQS ChangeMessageVisibility's maximum (12 h). */
export const MAX_VISIBILITY_SECONDS = 43_200;
/**
 * Kept back from the time a message may still stay invisible: covers the gap between SQS's receive
 * and the batch handler's start (we never see the receive itself), the attempt's own duration and
 * clock skew. The last retry then comes after at most 11 h 55 min instead of 12 h.
 */
export const VISIBILITY_SAFETY_MARGIN_SECONDS = 300;

/**
 * The most a ChangeMessageVisibility may ask for now (whole seconds, never negative). SQS counts
 * its 12 h from the message's receive, not from the call: asking 43 200 s a few seconds after the
 * receive is refused with InvalidParameterValue.
 */
export function visibilityLeftSeconds(receivedAt: number, now: number, marginSeconds = VISIBILITY_SAFETY_MARGIN_SECONDS): number {
  const elapsed = Math.max(0, now - receivedAt) / 1000;
  return Math.max(0, Math.floor(MAX_VISIBILITY_SECONDS - elapsed - marginSeconds));
}

/**
 * When the message being handled was (at the earliest) received, in epoch ms. A first receive
 * carries its own time (ApproximateFirstReceiveTimestamp); a later one does not, so the batch's
 * start stands for it (the margin above covers the event-source mapping's lag).
 */
export function receivedAtOf(attributes: { ApproximateReceiveCount?: string; ApproximateFirstReceiveTimestamp?: string }, batchStartedAt: number): number {
  const first = Number(attributes.ApproximateFirstReceiveTimestamp);
  return Number(attributes.ApproximateReceiveCount ?? 1) <= 1 && Number.isFinite(first) && first > 0 ? Math.min(first, batchStartedAt) : batchStartedAt;
}

export interface DelayOptions {
  /** Delays before attempts 2, 3, ... in seconds (settings.retryScheduleSeconds). */
  schedule?: readonly number[];
  /** Relative jitter: 0.1 means ±10 % (settings.retryJitter). */
  jitter?: number;
  /** A parsed Retry-After, in seconds (see parseRetryAfter). */
  retryAfterSeconds?: number;
  /** Uniform in [0, 1); injectable so tests can pin the jitter. */
  random?: () => number;
}

function jittered(base: number, jitter: number, random: () => number, retryAfterSeconds?: number): number {
  const scheduled = base * (1 + jitter * (2 * random() - 1));
  const wanted = Math.max(scheduled, retryAfterSeconds ?? 0);
  // SQS takes whole seconds.
  return Math.min(MAX_VISIBILITY_SECONDS, Math.max(0, Math.round(wanted)));
}

/**
 * Seconds to wait after failed attempt `attempt` (1-based) before the next one, or undefined when
 * that was the last attempt the schedule allows (schedule.length + 1 attempts in all).
 */
export function nextDelay(attempt: number, options: DelayOptions = {}): number | undefined {
  const schedule = options.schedule ?? defaultConfig.retryScheduleSeconds;
  if (!Number.isInteger(attempt) || attempt < 1 || attempt > schedule.length) return undefined;
  return jittered(schedule[attempt - 1], options.jitter ?? defaultConfig.retryJitter, options.random ?? Math.random, options.retryAfterSeconds);
}

/**
 * Like nextDelay but always a number: past the end of the schedule it repeats the last delay.
 * (deliver.ts decides exhaustion itself from deliveryAttempts, so it never asks past the end.)
 */
export function retryDelaySeconds(attempt: number, options: DelayOptions & { schedule: readonly number[]; jitter: number }): number {
  const { schedule } = options;
  const base = schedule[Math.min(Math.max(attempt, 1), schedule.length) - 1] ?? defaultConfig.retryScheduleSeconds[0];
  return jittered(base, options.jitter, options.random ?? Math.random, options.retryAfterSeconds);
}

/**
 * A Retry-After header as whole seconds from `now` (epoch ms): delta-seconds (`120`) or an
 * HTTP-date (`Wed, 21 Oct 2026 07:28:00 GMT`, also the obsolete RFC 850 and asctime forms); a date
 * in the past is 0. Undefined when absent or unreadable.
 */
export function parseRetryAfter(value: string | string[] | undefined, now: number): number | undefined {
  const raw = Array.isArray(value) ? value[0] : value;
  if (raw === undefined) return undefined;
  const trimmed = raw.trim();
  if (/^\d+$/.test(trimmed)) return Number(trimmed);
  // An HTTP-date always names a weekday and a month; this keeps Date.parse from reading `1.5` or `-3` as dates.
  if (!/^(mon|tue|wed|thu|fri|sat|sun)[a-z]*,?\s/i.test(trimmed)) return undefined;
  // HTTP-dates are GMT; asctime's form does not say so, and Date.parse would read it as local time.
  const at = Date.parse(/\b(gmt|utc)$/i.test(trimmed) ? trimmed : `${trimmed} GMT`);
  return Number.isNaN(at) ? undefined : Math.max(0, Math.ceil((at - now) / 1000));
}
