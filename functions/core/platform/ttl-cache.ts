/**
 * The one in-container cache: entries expire at a time the caller gives (in its clock, which
 * tests may pin), and past `maxEntries` the oldest entry is dropped, so a flood of new keys costs
 * memory only up to the bound.
 */
export class TtlCache<K, V> {
  private readonly entries = new Map<K, { value: V; until: number }>();
  /** Loads under way: callers that miss at the same time share one (a batch of ten messages for one organization reads once, not ten times). */
  private readonly loading = new Map<K, Promise<V>>();
  constructor(private readonly maxEntries: number) {}

  /** The entry while it is fresh at `now` (its value may itself say "not found"); an expired one is dropped. */
  get(key: K, now: number): { value: V } | undefined {
    const entry = this.entries.get(key);
    if (entry && entry.until > now) return entry;
    if (entry) this.entries.delete(key);
    return undefined;
  }

  /** The fresh entry's value, else `load()`'s, kept for `ttlMs` from `now` (a "not found" is kept too). */
  async getOrLoad(key: K, now: number, ttlMs: number, load: () => Promise<V>): Promise<V> {
    const cached = this.get(key, now);
    if (cached) return cached.value;
    return this.load(key, now, ttlMs, load);
  }

  /** `load()`'s value, kept for `ttlMs` from `now`; joins a load of the same key already under way. */
  load(key: K, now: number, ttlMs: number, load: () => Promise<V>): Promise<V> {
    const running = this.loading.get(key);
    if (running) return running;
    const promise = load().then((value) => {
      if (this.loading.get(key) === promise) this.set(key, value, now + ttlMs); // not when deleted meanwhile
      return value;
    }).finally(() => {
      if (this.loading.get(key) === promise) this.loading.delete(key);
    });
    this.loading.set(key, promise);
    return promise;
  }

  set(key: K, value: V, until: number): void {
    this.entries.delete(key);
    if (this.entries.size >= this.maxEntries) this.entries.delete(this.entries.keys().next().value as K);
    this.entries.set(key, { value, until });
  }

  /** Drops the entry, and any load under way: the next caller reads afresh. */
  delete(key: K): void {
    this.entries.delete(key);
    this.loading.delete(key);
  }

  clear(): void {
    this.entries.clear();
    this.loading.clear();
  }

  get size(): number {
    return this.entries.size;
  }
}
