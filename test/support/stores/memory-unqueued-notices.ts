/** The in-memory twin of the notices kept while the notices queue refused them (functions/core/notify/unqueued-notices-store.ts). */
import type { NoticeMessage } from '../../../functions/core/notify/notice.js';
import type { UnqueuedNotices, UnqueuedNoticesStore } from '../../../functions/core/notify/unqueued-notices-store.js';

export class MemoryUnqueuedNotices implements UnqueuedNoticesStore {
  readonly items = new Map<string, NoticeMessage[]>();
  /** The next keep fails (the table too is unavailable). */
  failNext = false;

  async keep(notices: NoticeMessage[], now: number): Promise<void> {
    if (this.failNext) {
      this.failNext = false;
      throw new Error('table unavailable');
    }
    this.items.set(`${new Date(now).toISOString()}#${notices.map((n) => n.key).join(',')}`, structuredClone(notices));
  }

  async waiting(limit: number): Promise<UnqueuedNotices[]> {
    return [...this.items].sort(([a], [b]) => a.localeCompare(b)).slice(0, limit).map(([id, notices]) => ({ id, notices }));
  }

  async forget(id: string): Promise<void> {
    this.items.delete(id);
  }
}
