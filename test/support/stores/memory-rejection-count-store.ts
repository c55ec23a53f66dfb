/** The in-memory twin of the mailer's count of refused addresses (functions/core/notify/rejection-count-store.ts). */
import { REJECTION_WINDOW_CAP, REJECTION_WINDOW_MS, type RefusalCounts, type RejectionCountStore } from '../../../functions/core/notify/rejection-count-store.js';

export class MemoryRejectionCountStore implements RejectionCountStore {
  readonly windows = new Map<number, Set<string>>();
  /** The latches by scope: '' for every organization, else the organization's key. */
  readonly latches = new Map<string, number>();
  /** Throws this many times first (a throttled write). */
  failures = 0;

  async countRefused(windowStart: number, organizationKey: string, entry: string): Promise<RefusalCounts> {
    if (this.failures-- > 0) throw Object.assign(new Error('throttled'), { name: 'ProvisionedThroughputExceededException' });
    const refused = this.windows.get(windowStart) ?? new Set<string>();
    const full = refused.size >= REJECTION_WINDOW_CAP && !refused.has(entry);
    if (!full) this.windows.set(windowStart, refused.add(entry));
    return {
      current: [...refused], previous: [...(this.windows.get(windowStart - REJECTION_WINDOW_MS) ?? [])], full,
      trippedUntil: { all: this.latches.get(''), organization: this.latches.get(organizationKey) },
    };
  }

  async trip(scope: { organizationKey?: string }, until: number): Promise<void> {
    const key = scope.organizationKey ?? '';
    if ((this.latches.get(key) ?? -Infinity) < until) this.latches.set(key, until);
  }
}
