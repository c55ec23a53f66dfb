/**
 * How a producer hands its notices over (docs/notifications.md "The notices"): to the notices queue,
 * never to a mail server, and never on a lead's request path. A producer collects what one run
 * decided (a stream batch's lead notices, a circuit that opened, a day's digest) and calls
 * `produceNotices` once. The queue's one producer is notices-queue.ts (`enqueueNotices`: batches of
 * 10 per SQS call); tests put an in-memory queue in its place (`noticeQueuePort.with`).
 */
import { MetricUnit } from '@aws-lambda-powertools/metrics';
import type { Deps } from '../platform/deps.js';
import { depsPort } from '../platform/deps-port.js';
import { logger, metrics } from '../platform/observability.js';
import { BACKOFFS, retry } from '../platform/retry.js';
import type { NoticeMessage } from './notice.js';
import { enqueueNotices } from './notices-queue.js';
import { unqueuedNoticesPort } from './unqueued-notices-store.js';

export interface NoticeQueue {
  enqueue(messages: NoticeMessage[]): Promise<void>;
}

export const noticeQueuePort = depsPort<NoticeQueue>('noticeQueue', (deps) => ({ enqueue: (messages) => enqueueNotices(deps, messages) }));

/** Hands the notices to the notices queue (nothing for none). */
export async function produceNotices(deps: Deps, messages: NoticeMessage[]): Promise<void> {
  if (messages.length) await noticeQueuePort.of(deps).enqueue(messages);
}

/**
 * Hands the notices over without ever failing the caller's own work (the fan-out's deliveries): the
 * queue is tried a few times, then the notices are kept as a record that the delivery sweeper
 * re-drives within a minute or so (redriveUnqueuedNotices). Throws only if that record cannot be
 * written either: then, and only then, are the notices in the caller's hands.
 */
export async function handOverNotices(deps: Deps, messages: NoticeMessage[]): Promise<void> {
  if (!messages.length) return;
  try {
    await retry(() => produceNotices(deps, messages), { backoff: BACKOFFS.noticeHandOver, attempts: 3, shouldRetry: () => true });
  } catch (error) {
    await unqueuedNoticesPort.of(deps).keep(messages, deps.now());
    logger.warn('notices not queued: kept for the sweeper to re-drive', { count: messages.length, error: (error as Error).name });
    metrics.addMetric('NoticesNotQueued', MetricUnit.Count, messages.length);
  }
}

/** Hands over what the notices queue refused earlier (the delivery sweeper, every minute); answers how many notices went. */
export async function redriveUnqueuedNotices(deps: Deps, limit = 100): Promise<number> {
  const store = unqueuedNoticesPort.of(deps);
  let handed = 0;
  for (const kept of await store.waiting(limit)) {
    await produceNotices(deps, kept.notices);
    await store.forget(kept.id);
    handed += kept.notices.length;
  }
  if (handed) logger.info('unqueued notices re-driven', { count: handed });
  return handed;
}
