/** The in-memory twin of the mailer's count of refused addresses (functions/core/notify/rejection-count-store.ts). */
import type { RejectionCountStore } from '../../../functions/core/notify/rejection-count-store.js';

export class MemoryRejectionCountStore implements RejectionCountStore {
  readonly windows = new Map<number, Set<string>>();
  /** Throws this many times first (a throttled write). */
  failures = 0;

  async countRefused(windowStart: number, addressKey: string): Promise<number> {
    if (this.failures-- > 0) throw Object.assign(new Error('throttled'), { name: 'ProvisionedThroughputExceededException' });
    const refused = this.windows.get(windowStart) ?? new Set<string>();
    this.windows.set(windowStart, refused.add(addressKey));
    return refused.size;
  }
}
