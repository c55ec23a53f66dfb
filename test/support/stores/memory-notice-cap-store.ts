/** The in-memory twin of the lead notices' cap counter (functions/core/notify/notice-cap-store.ts). */
import type { LeadCount, NoticeCapStore } from '../../../functions/core/notify/notice-cap-store.js';

export class MemoryNoticeCapStore implements NoticeCapStore {
  readonly items = new Map<string, { leads: number; batches: Map<string, number>; claims: number[] }>();
  /** Writes made (one per organization and window per stream batch is the budget). */
  writes = 0;

  async countLeadNotices(organizationId: string, windowStart: number, batch: string, count: number): Promise<LeadCount> {
    this.writes += 1;
    const key = `${organizationId}#${windowStart}`;
    const item = this.items.get(key) ?? { leads: 0, batches: new Map<string, number>(), claims: [] };
    this.items.set(key, item);
    if (!item.batches.has(batch)) {
      item.batches.set(batch, item.leads);
      item.leads += count;
    }
    return { before: item.batches.get(batch)!, claims: [...item.claims] };
  }

  async claimSummary(organizationId: string, windowStart: number, round: number): Promise<{ upTo: number; from?: number } | undefined> {
    const item = this.items.get(`${organizationId}#${windowStart}`);
    if (!item) return undefined;
    // Rounds are claimed in order (round k + 1 exists only once round k is claimed).
    if (item.claims[round - 1] === undefined) item.claims[round - 1] = item.leads;
    return { upTo: item.claims[round - 1], ...(round > 1 ? { from: item.claims[round - 2] } : {}) };
  }
}
