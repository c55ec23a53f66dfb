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
import { enqueueNotices, NoticesRefused, refusedForGood } from './notices-queue.js';
import { UNQUEUED_PARTITIONS, unqueuedNoticesPort, type UnqueuedNotices } from './unqueued-notices-store.js';

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

/** Refusals for good after which kept notices the queue refuses while it takes others are set aside (docs/operations.md "Unqueued notices"). */
export const MAX_REDRIVE_TRIES = 10;
/** How long one re-drive may go on (the sweeper runs every minute, its time-out 60 s). */
export const REDRIVE_BUDGET_MS = 20_000;
const PAGE = 25;

/** What a set-aside item says of its refusal: the queue's codes. */
const reasonOf = (error: unknown) => (error instanceof NoticesRefused ? [...new Set(error.codes)].join(', ') : (error as Error).name);

/**
 * Hands over what the notices queue refused earlier (the delivery sweeper, every minute), every
 * partition page by page until done or `deadline` (epoch ms; REDRIVE_BUDGET_MS from now by default),
 * starting at the next partition each minute (a run cut short by its deadline never starves the
 * last ones). Each kept item is tried on its own: one the queue refuses is left for the next minute,
 * never holding back the others. Only a refusal for good (notices-queue.ts refusedForGood: the
 * queue refused some notice for what it is) counts as a try (`tries`, one small write); an outage,
 * a throttle or the queue's own failure counts nothing, however long. An item refused for good
 * MAX_REDRIVE_TRIES times, the last while the queue took others in the same run, is set aside for
 * an operator (logged as an error with the queue's codes, `NoticesSetAside`). Emits the backlog
 * (`UnqueuedNoticesWaiting`, `UnqueuedNoticesOldestAgeSeconds`) for the alarm to watch, or, when the
 * kept items cannot be read, `NoticesRedriveFailed` (and throws). Answers how many notices went.
 */
export async function redriveUnqueuedNotices(deps: Deps, options: { deadline?: number } = {}): Promise<number> {
  try {
    return await redrive(deps, options);
  } catch (error) {
    // No backlog metric this run (the kept items could not be read): its own, for the alarm (NoticesRedriveFailed).
    metrics.addMetric('NoticesRedriveFailed', MetricUnit.Count, 1);
    throw error;
  }
}

async function redrive(deps: Deps, options: { deadline?: number }): Promise<number> {
  const store = unqueuedNoticesPort.of(deps);
  const deadline = options.deadline ?? deps.now() + REDRIVE_BUDGET_MS;
  let handed = 0;
  let handedItems = 0;
  const left: UnqueuedNotices[] = [];
  const refused: { kept: UnqueuedNotices; reason: string; forGood: boolean }[] = [];
  let complete = true;
  const first = Math.floor(deps.now() / 60_000) % UNQUEUED_PARTITIONS.length;
  for (const partition of [...UNQUEUED_PARTITIONS.slice(first), ...UNQUEUED_PARTITIONS.slice(0, first)]) {
    let after: string | undefined;
    do {
      if (deps.now() >= deadline) {
        complete = false;
        break;
      }
      const page = await store.waiting(partition, PAGE, after);
      after = page.next;
      await Promise.all(page.items.map(async (kept) => {
        try {
          await produceNotices(deps, kept.notices);
          await store.forget(kept.id);
          handed += kept.notices.length;
          handedItems += 1;
        } catch (error) {
          const forGood = refusedForGood(error);
          const tries = forGood ? await store.failed(kept.id).catch(() => kept.tries + 1) : kept.tries;
          const now = { ...kept, tries };
          left.push(now);
          refused.push({ kept: now, reason: reasonOf(error), forGood });
        }
      }));
    } while (after !== undefined);
    if (!complete) break;
  }
  // A piece the queue refuses for good while it takes others is the piece's fault, not an outage's.
  for (const { kept, reason } of refused.filter((r) => r.forGood && r.kept.tries >= MAX_REDRIVE_TRIES)) {
    const organizationId = kept.notices[0]?.organizationId;
    if (handedItems === 0) {
      logger.error('unqueued notices: still refused after many tries (the queue refuses all: kept)', { id: kept.id, organizationId, tries: kept.tries, reason });
      continue;
    }
    try {
      await store.setAside(kept, reason, deps.now());
      left.splice(left.indexOf(kept), 1);
      logger.error('unqueued notices: refused for good too often while others went, set aside for an operator', { id: kept.id, organizationId, count: kept.notices.length, tries: kept.tries, reason });
      metrics.addMetric('NoticesSetAside', MetricUnit.Count, kept.notices.length);
    } catch (error) {
      logger.warn('unqueued notices: could not be set aside, tried again next minute', { id: kept.id, error: (error as Error).name });
    }
  }
  if (refused.length) logger.warn('unqueued notices: some not re-driven, kept for the next minute', { items: refused.length });
  if (handed) logger.info('unqueued notices re-driven', { count: handed });
  // The backlog as this run saw it (a lower bound when the deadline came first).
  const oldest = Math.min(...left.map((k) => k.keptAt));
  metrics.addMetric('UnqueuedNoticesWaiting', MetricUnit.Count, left.length);
  metrics.addMetric('UnqueuedNoticesOldestAgeSeconds', MetricUnit.Seconds, left.length ? Math.max(0, Math.round((deps.now() - oldest) / 1000)) : 0);
  if (!complete) logger.warn('unqueued notices: the re-drive\'s time ran out, the rest next minute', { handed });
  return handed;
}
