/** The in-memory twin of the lead notices' cap counter (functions/core/notify/notice-cap-store.ts). */
import type { NoticeCapStore } from '../../../functions/core/notify/notice-cap-store.js';

export class MemoryNoticeCapStore implements NoticeCapStore {
  readonly items = new Map<string, { leads: number; lastBatch: string; lastBefore: number }>();
  /** Writes made (one per organization per stream batch is the budget). */
  writes = 0;

  async countLeadNotices(organizationId: string, windowStart: number, batch: string, count: number): Promise<number> {
    this.writes += 1;
    const key = `${organizationId}#${windowStart}`;
    const item = this.items.get(key);
    if (item?.lastBatch === batch) return item.lastBefore;
    const before = item?.leads ?? 0;
    this.items.set(key, { leads: before + count, lastBatch: batch, lastBefore: before });
    return before;
  }
}
