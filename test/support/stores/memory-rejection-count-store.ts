/** The in-memory twin of the mailer's count of refused addresses (functions/core/notify/rejection-count-store.ts). */
import { REJECTION_WINDOW_CAP, REJECTION_WINDOW_MS, type Latch, type RefusalCounts, type RejectionCountStore } from '../../../functions/core/notify/rejection-count-store.js';

export class MemoryRejectionCountStore implements RejectionCountStore {
  readonly windows = new Map<number, Set<string>>();
  /** The latches by scope: '' for every organization, else the organization's key. */
  readonly latches = new Map<string, number>();
  /** Each latch's entries, by scope as `latches`. */
  readonly latchEntries = new Map<string, Set<string>>();
  /** Throws this many times first (a throttled read). */
  failures = 0;

  async read(windowStart: number, organizationKey: string): Promise<RefusalCounts> {
    if (this.failures-- > 0) throw Object.assign(new Error('throttled'), { name: 'ProvisionedThroughputExceededException' });
    const latch = (key: string): Latch | undefined => {
      const until = this.latches.get(key);
      return until === undefined ? undefined : { until, refused: [...(this.latchEntries.get(key) ?? [])] };
    };
    return {
      current: [...(this.windows.get(windowStart) ?? [])], previous: [...(this.windows.get(windowStart - REJECTION_WINDOW_MS) ?? [])],
      latches: { all: latch(''), organization: latch(organizationKey) },
    };
  }

  async add(windowStart: number, entry: string): Promise<{ current: string[]; full: boolean }> {
    const refused = this.windows.get(windowStart) ?? new Set<string>();
    const full = refused.size >= REJECTION_WINDOW_CAP && !refused.has(entry);
    if (!full) this.windows.set(windowStart, refused.add(entry));
    return { current: [...refused], full };
  }

  async trip(scope: { organizationKey?: string }, until: number, entry: string, renew: boolean): Promise<void> {
    const key = scope.organizationKey ?? '';
    const later = (this.latches.get(key) ?? -Infinity) < until;
    if (later) this.latches.set(key, until);
    if (later && renew) this.latchEntries.set(key, new Set([entry]));
    else if (this.latches.has(key)) {
      const refused = this.latchEntries.get(key) ?? new Set<string>();
      if (refused.size < REJECTION_WINDOW_CAP) this.latchEntries.set(key, refused.add(entry));
    }
  }
}
