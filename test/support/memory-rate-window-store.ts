/**
 * The rate limiter's store (functions/core/tenancy/rate-window-store.ts) in memory, on the clock it
 * is given: sub-window items (count, per-second counts, closed) and daily counters, each with its
 * TTL (an item past it is gone to every read and write, as DynamoDB's reads through the store see
 * it). Faults: a throttle on any operation; on countRequest, a failed condition (others filled the
 * sub-window first: refused) or a lost race (another container closed it first).
 * test/integration/stores/rate-window-store.contract.test.ts holds it to the DynamoDB store.
 */
import { SLOTS, type CountOutcome, type RateWindowStore } from '../../functions/core/tenancy/rate-window-store.js';
import { Faults, throttled } from './faults.js';

type Op = 'countRequest' | 'closeSubWindow' | 'readSubWindows' | 'reserveDailyCall' | 'releaseDailyCall';
interface SubWindowItem { count: number; slots: number[]; closed: boolean; expiresAt: number }

export class MemoryRateWindowStore implements RateWindowStore {
  readonly subWindows = new Map<string, SubWindowItem>();
  readonly daily = new Map<string, { count: number; expiresAt?: number }>();
  readonly faults = new Faults<Op>();
  /** Round trips made, by operation (a test may count them: a check costs one countRequest). */
  readonly calls: Op[] = [];

  constructor(private readonly now: () => number) {}

  private enter(op: Op): void {
    this.calls.push(op);
    if (this.faults.pending && this.faults.take(op) === 'throttle') throw throttled();
  }

  private fresh<T extends { expiresAt?: number }>(map: Map<string, T>, key: string): T | undefined {
    const item = map.get(key);
    if (item && item.expiresAt !== undefined && item.expiresAt * 1000 <= this.now()) {
      map.delete(key);
      return undefined;
    }
    return item;
  }

  private subWindow(windowKey: string, sub: number, expiresAt: number): SubWindowItem {
    const id = `${windowKey}#${sub}`;
    let item = this.fresh(this.subWindows, id);
    if (!item) this.subWindows.set(id, (item = { count: 0, slots: Array(SLOTS).fill(0), closed: false, expiresAt }));
    return item;
  }

  async countRequest(windowKey: string, sub: number, slot: number, threshold: number, expiresAt: number): Promise<CountOutcome> {
    this.calls.push('countRequest');
    const fault = this.faults.take('countRequest');
    if (fault === 'throttle') throw throttled();
    const item = this.subWindow(windowKey, sub, expiresAt);
    if (fault === 'lost-race') item.closed = true;
    if (item.closed) return { outcome: 'closed', slots: [...item.slots] };
    if (fault === 'failed-condition' || item.count >= threshold) return { outcome: 'full', slots: [...item.slots] };
    item.count += 1;
    item.slots[slot] += 1;
    return { outcome: 'counted', slots: [...item.slots] };
  }

  async closeSubWindow(windowKey: string, sub: number, expiresAt: number): Promise<number[]> {
    this.enter('closeSubWindow');
    const item = this.subWindow(windowKey, sub, expiresAt);
    item.closed = true;
    return [...item.slots];
  }

  async readSubWindows(windowKey: string, subs: number[]): Promise<Map<number, number[]>> {
    this.enter('readSubWindows');
    return new Map(subs.map((sub) => [sub, [...(this.fresh(this.subWindows, `${windowKey}#${sub}`)?.slots ?? Array(SLOTS).fill(0))]]));
  }

  async reserveDailyCall(keyId: string, day: string, cap: number, expiresAt: number): Promise<boolean> {
    this.enter('reserveDailyCall');
    const id = `${keyId}#${day}`;
    const item = this.fresh(this.daily, id) ?? { count: 0, expiresAt };
    if (item.count >= cap) return false;
    item.count += 1;
    item.expiresAt ??= expiresAt;
    this.daily.set(id, item);
    return true;
  }

  async releaseDailyCall(keyId: string, day: string): Promise<void> {
    this.enter('releaseDailyCall');
    const id = `${keyId}#${day}`;
    const item = this.fresh(this.daily, id) ?? { count: 0 };
    item.count -= 1;
    this.daily.set(id, item);
  }
}
