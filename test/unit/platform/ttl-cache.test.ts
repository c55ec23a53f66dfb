/** The in-container cache: expiry on the caller's clock, and one load for callers that miss together. */
import { describe, it, expect } from '@jest/globals';
import { TtlCache } from '../../../functions/core/platform/ttl-cache.js';

function deferred<T>() {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((r) => (resolve = r));
  return { promise, resolve };
}

describe('TtlCache', () => {
  it('callers that miss at the same time share one load, and its value is kept for the TTL', async () => {
    const cache = new TtlCache<string, number>(10);
    let loads = 0;
    const gate = deferred<number>();
    const load = () => (loads++, gate.promise);
    const all = Promise.all(Array.from({ length: 10 }, () => cache.getOrLoad('org', 0, 1_000, load)));
    gate.resolve(7);
    expect(await all).toEqual(Array(10).fill(7));
    expect(loads).toBe(1);
    expect(await cache.getOrLoad('org', 999, 1_000, async () => 8)).toBe(7);
    expect(await cache.getOrLoad('org', 1_000, 1_000, async () => 8)).toBe(8); // expired: loaded again
  });

  it('a load under way when the key is deleted is not joined, and does not overwrite the fresh value', async () => {
    const cache = new TtlCache<string, string>(10);
    const stale = deferred<string>();
    const first = cache.getOrLoad('org', 0, 1_000, () => stale.promise);
    cache.delete('org'); // changed in this container meanwhile
    expect(await cache.getOrLoad('org', 0, 1_000, async () => 'fresh')).toBe('fresh');
    stale.resolve('stale');
    expect(await first).toBe('stale');
    expect(cache.get('org', 1)?.value).toBe('fresh');
  });

  it('a failed load is not cached and not shared with later callers', async () => {
    const cache = new TtlCache<string, number>(10);
    await expect(cache.getOrLoad('org', 0, 1_000, async () => { throw new Error('throttled'); })).rejects.toThrow('throttled');
    expect(await cache.getOrLoad('org', 0, 1_000, async () => 3)).toBe(3);
  });
});
