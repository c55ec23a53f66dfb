/**
 * How a producer hands its notices over (docs/notifications.md "Notices"): to the notices queue,
 * never to a mail server, and never on a lead's request path. A producer collects what one run
 * decided (a stream batch's lead notices, a circuit that opened, a day's digest) and calls
 * `produceNotices` once. The queue's own producer is the mailer stage's `enqueueNotice`; tests put
 * an in-memory queue in its place (`noticeQueuePort.with`).
 */
import type { Deps } from '../platform/deps.js';
import { depsPort } from '../platform/deps-port.js';
import { logger } from '../platform/observability.js';
import type { NoticeMessage } from './notice.js';

export interface NoticeQueue {
  enqueue(messages: NoticeMessage[]): Promise<void>;
}

function productionQueue(_deps: Deps): NoticeQueue {
  return {
    async enqueue(messages) {
      // Until the notices queue is bound here, a notice is logged (ids only), never lost silently.
      for (const m of messages) logger.info('notice produced', { organizationId: m.organizationId, kind: m.kind, key: m.key });
    },
  };
}

export const noticeQueuePort = depsPort<NoticeQueue>('noticeQueue', productionQueue);

/** Hands the notices to the notices queue (nothing for none). */
export async function produceNotices(deps: Deps, messages: NoticeMessage[]): Promise<void> {
  if (messages.length) await noticeQueuePort.of(deps).enqueue(messages);
}
