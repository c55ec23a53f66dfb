/** The in-memory twin of the notices kept while the notices queue refused them (functions/core/notify/unqueued-notices-store.ts). */
import type { NoticeMessage } from '../../../functions/core/notify/notice.js';
import { piecesOf, placeOf, SET_ASIDE_PK, type UnqueuedNotices, type UnqueuedNoticesStore } from '../../../functions/core/notify/unqueued-notices-store.js';

interface Kept { notices: NoticeMessage[]; keptAt: number; tries: number; reason?: string }

export class MemoryUnqueuedNotices implements UnqueuedNoticesStore {
  /** By partition, then sort key (the table's order). */
  readonly partitions = new Map<string, Map<string, Kept>>();
  /** The next keep fails (the table too is unavailable). */
  failNext = false;

  /** Every kept piece's notices, waiting or set aside. */
  get items(): Map<string, NoticeMessage[]> {
    return new Map([...this.partitions].filter(([pk]) => pk !== SET_ASIDE_PK).flatMap(([pk, items]) => [...items].map(([sk, kept]) => [`${pk}|${sk}`, kept.notices] as const)));
  }

  get setAsideItems(): Kept[] {
    return [...this.partitions.get(SET_ASIDE_PK)?.values() ?? []];
  }

  private partition(pk: string): Map<string, Kept> {
    const items = this.partitions.get(pk) ?? new Map<string, Kept>();
    this.partitions.set(pk, items);
    return items;
  }

  private find(id: string): { items: Map<string, Kept>; sk: string } {
    const at = id.indexOf('|');
    return { items: this.partition(id.slice(0, at)), sk: id.slice(at + 1) };
  }

  async keep(notices: NoticeMessage[], now: number): Promise<void> {
    if (this.failNext) {
      this.failNext = false;
      throw new Error('table unavailable');
    }
    for (const piece of piecesOf(notices)) {
      const { pk, sk } = placeOf(piece);
      const items = this.partition(pk);
      if (!items.has(sk)) items.set(sk, { notices: structuredClone(piece), keptAt: now, tries: 0 });
    }
  }

  async waiting(partition: string, limit: number, after?: string): Promise<{ items: UnqueuedNotices[]; next?: string }> {
    const sorted = [...this.partition(partition)].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).filter(([sk]) => after === undefined || sk > after);
    const page = sorted.slice(0, limit);
    const items = page.map(([sk, kept]) => ({ id: `${partition}|${sk}`, notices: structuredClone(kept.notices), keptAt: kept.keptAt, tries: kept.tries }));
    return { items, ...(sorted.length > limit ? { next: page.at(-1)![0] } : {}) };
  }

  async forget(id: string): Promise<void> {
    const { items, sk } = this.find(id);
    items.delete(sk);
  }

  async failed(id: string): Promise<number> {
    const { items, sk } = this.find(id);
    const kept = items.get(sk);
    if (!kept) return 0;
    kept.tries += 1;
    return kept.tries;
  }

  async setAside(kept: UnqueuedNotices, reason: string): Promise<void> {
    const { items, sk } = this.find(kept.id);
    this.partition(SET_ASIDE_PK).set(sk, { notices: kept.notices, keptAt: kept.keptAt, tries: kept.tries, reason });
    items.delete(sk);
  }
}
