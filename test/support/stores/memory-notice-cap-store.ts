/** The in-memory twin of the lead notices' cap counter (functions/core/notify/notice-cap-store.ts). */
import { logger } from '../../../functions/core/platform/observability.js';
import { NOTICE_CAP_FOLLOW_UP_TRIES, type LeadCount, type NoticeCapStore } from '../../../functions/core/notify/notice-cap-store.js';

export class MemoryNoticeCapStore implements NoticeCapStore {
  /** The window counters (`leads`, the claims) and each batch's answer (`batches`), as the table keeps them apart. */
  readonly items = new Map<string, { leads: number; batches: Map<string, number>; claims: number[] }>();
  /** Counter writes made (one per organization and window per stream batch is the budget). */
  writes = 0;
  /** The next count fails (the table refuses: throttled, or an item too large). */
  failNext = false;
  /** Calls that fail after a batch was counted (its answer's write, the claims' read; each try is one), as a throttled table fails them. */
  failFollowUps = 0;

  // expiresAt and cap optional: tests that only need a count (the mailer's) give neither; no cap tells every claim.
  async countLeadNotices(organizationId: string, windowStart: number, batch: string, count: number, _expiresAt?: number, cap = 0): Promise<LeadCount> {
    if (this.failNext) {
      this.failNext = false;
      throw new Error('rateWindows unavailable');
    }
    const key = `${organizationId}#${windowStart}`;
    const item = this.items.get(key) ?? { leads: 0, batches: new Map<string, number>(), claims: [] };
    this.items.set(key, item);
    if (!item.batches.has(batch)) {
      this.writes += 1;
      const before = item.leads;
      item.leads += count;
      // As the store does: each follow-up tried a few times, then the batch answered without claims.
      const givenUp = () => {
        logger.error('lead notices: the cap counter counted the batch but its answer or the claims failed, answered without claims', { organizationId, windowStart, leads: count, error: 'Error' });
        return { before, claims: [] };
      };
      if (!this.followUp()) return givenUp(); // the answer not kept: a retry counts the batch again
      item.batches.set(batch, before);
      if (before + count <= cap) return { before, claims: [] };
      return this.followUp() ? { before, claims: [...item.claims] } : givenUp();
    }
    return { before: item.batches.get(batch)!, claims: [...item.claims] };
  }

  /** Whether a follow-up call succeeds within its tries. */
  private followUp(): boolean {
    const failed = Math.min(this.failFollowUps, NOTICE_CAP_FOLLOW_UP_TRIES);
    this.failFollowUps -= failed;
    return failed < NOTICE_CAP_FOLLOW_UP_TRIES;
  }

  async claimSummary(organizationId: string, windowStart: number, round: number): Promise<{ upTo: number; from?: number } | undefined> {
    const item = this.items.get(`${organizationId}#${windowStart}`);
    if (!item) return undefined;
    // Rounds are claimed in order (round k + 1 exists only once round k is claimed).
    if (item.claims[round - 1] === undefined) item.claims[round - 1] = item.leads;
    return { upTo: item.claims[round - 1], ...(round > 1 ? { from: item.claims[round - 2] } : {}) };
  }
}
