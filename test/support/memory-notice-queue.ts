/** An in-memory notices queue (functions/core/notify/produce.ts): what producers enqueued, in order. */
import type { NoticeMessage } from '../../functions/core/notify/notice.js';
import type { NoticeQueue } from '../../functions/core/notify/produce.js';

export class MemoryNoticeQueue implements NoticeQueue {
  readonly messages: NoticeMessage[] = [];
  /** enqueue calls (the budget: one per stream batch). */
  calls = 0;
  /** The next enqueue fails (a queue outage). */
  failNext = false;
  /** Every enqueue fails while set (a longer outage). */
  failing = false;

  async enqueue(messages: NoticeMessage[]): Promise<void> {
    this.calls += 1;
    if (this.failNext || this.failing) {
      this.failNext = false;
      throw new Error('notices queue unavailable');
    }
    this.messages.push(...structuredClone(messages));
  }

  /** What a mailer sending each key once would send. */
  get unique(): NoticeMessage[] {
    const seen = new Set<string>();
    return this.messages.filter((m) => !seen.has(m.key) && seen.add(m.key));
  }
}
