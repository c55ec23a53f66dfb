/**
 * How a producer hands its notices over (docs/notifications.md "The notices"): to the notices queue,
 * never to a mail server, and never on a lead's request path. A producer collects what one run
 * decided (a stream batch's lead notices, a circuit that opened, a day's digest) and calls
 * `produceNotices` once. The queue's one producer is notices-queue.ts (`enqueueNotices`: batches of
 * 10 per SQS call); tests put an in-memory queue in its place (`noticeQueuePort.with`).
 */
import type { Deps } from '../platform/deps.js';
import { depsPort } from '../platform/deps-port.js';
import type { NoticeMessage } from './notice.js';
import { enqueueNotices } from './notices-queue.js';

export interface NoticeQueue {
  enqueue(messages: NoticeMessage[]): Promise<void>;
}

export const noticeQueuePort = depsPort<NoticeQueue>('noticeQueue', (deps) => ({ enqueue: (messages) => enqueueNotices(deps, messages) }));

/** Hands the notices to the notices queue (nothing for none). */
export async function produceNotices(deps: Deps, messages: NoticeMessage[]): Promise<void> {
  if (messages.length) await noticeQueuePort.of(deps).enqueue(messages);
}
