/**
 * The rate limiter's store contract (functions/core/tenancy/rate-window-store.ts): the same
 * behaviours against the rateWindows table on DynamoDB Local and against the in-memory twin
 * (test/support/memory-rate-window-store.ts): a request is counted only below the threshold and
 * while its sub-window is open (one conditional write), a closed sub-window answers its final
 * counts, an expired item is absent, the daily counter never passes its cap. And the limiter on top
 * of either admits the same requests.
 */
import { describe, it, expect } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import { testStack } from '../support/stack.js';
import type { Deps } from '../../../functions/core/platform/deps.js';
import { dynamoRateWindowStore, withRateWindowStore, type RateWindowStore } from '../../../functions/core/tenancy/rate-window-store.js';
import { checkRateLimit, SUB_WINDOW_MS } from '../../../functions/core/tenancy/rate-limit.js';
import { MemoryRateWindowStore } from '../../support/memory-rate-window-store.js';

/** A clock the test moves: both implementations see the same time. */
let nowMs = 0;
const clock = () => nowMs;

interface Implementation { store: RateWindowStore; deps: Deps }
const implementations: [string, () => Promise<Implementation>][] = [
  ['DynamoDB', async () => {
    const { deps } = await testStack();
    const own = { ...deps, now: clock };
    return { store: dynamoRateWindowStore(own), deps: own };
  }],
  ['in memory', async () => {
    const { deps } = await testStack();
    const store = new MemoryRateWindowStore(clock);
    return { store, deps: withRateWindowStore({ ...deps, now: clock }, store) };
  }],
];

const windowKey = () => `key_rw_${randomUUID().slice(0, 8)}`;
/** An expiry far ahead of the clock (epoch seconds). */
const later = () => Math.floor(nowMs / 1000) + 3600;
const zeros = Array(10).fill(0);

describe.each(implementations)('the rate-window store (%s)', (_name, make) => {
  it('counts a request below the threshold, in its second, and refuses at the threshold with the counts', async () => {
    nowMs = Date.now();
    const { store } = await make();
    const key = windowKey();
    expect(await store.countRequest(key, 7, 0, 3, later())).toEqual({ outcome: 'counted', slots: [1, 0, 0, 0, 0, 0, 0, 0, 0, 0] });
    expect(await store.countRequest(key, 7, 4, 3, later())).toEqual({ outcome: 'counted', slots: [1, 0, 0, 0, 1, 0, 0, 0, 0, 0] });
    expect(await store.countRequest(key, 7, 9, 3, later())).toEqual({ outcome: 'counted', slots: [1, 0, 0, 0, 1, 0, 0, 0, 0, 1] });
    // The boundary: a count equal to the threshold refuses, and the refusal writes nothing.
    expect(await store.countRequest(key, 7, 9, 3, later())).toEqual({ outcome: 'full', slots: [1, 0, 0, 0, 1, 0, 0, 0, 0, 1] });
    // A higher threshold (the closed sub-windows aged out) admits again.
    expect((await store.countRequest(key, 7, 9, 4, later())).outcome).toBe('counted');
    // A threshold of 1 on an empty sub-window admits one.
    expect((await store.countRequest(key, 8, 0, 1, later())).outcome).toBe('counted');
    expect((await store.countRequest(key, 8, 0, 1, later())).outcome).toBe('full');
    expect(await store.readSubWindows(key, [6, 7, 8])).toEqual(new Map([[6, zeros], [7, [1, 0, 0, 0, 1, 0, 0, 0, 0, 2]], [8, [1, ...zeros.slice(1)]]]));
  });

  it('closes a sub-window: its final counts answered, every later request refused as closed, with the counts', async () => {
    nowMs = Date.now();
    const { store } = await make();
    const key = windowKey();
    await store.countRequest(key, 3, 2, 10, later());
    expect(await store.closeSubWindow(key, 3, later())).toEqual([0, 0, 1, 0, 0, 0, 0, 0, 0, 0]);
    expect(await store.countRequest(key, 3, 5, 10, later())).toEqual({ outcome: 'closed', slots: [0, 0, 1, 0, 0, 0, 0, 0, 0, 0] });
    // Closing one never written: zeros, and closed all the same.
    expect(await store.closeSubWindow(key, 4, later())).toEqual(zeros);
    expect((await store.countRequest(key, 4, 0, 10, later())).outcome).toBe('closed');
    expect(await store.closeSubWindow(key, 3, later())).toEqual([0, 0, 1, 0, 0, 0, 0, 0, 0, 0]);
  });

  it('treats an item past its expiry (TTL) as absent', async () => {
    nowMs = Date.now();
    const { store } = await make();
    const key = windowKey();
    const soon = Math.floor(nowMs / 1000) + 5;
    await store.countRequest(key, 1, 0, 10, soon);
    await store.countRequest(key, 2, 0, 10, later());
    expect(await store.readSubWindows(key, [1, 2])).toEqual(new Map([[1, [1, ...zeros.slice(1)]], [2, [1, ...zeros.slice(1)]]]));
    nowMs += 6_000;
    expect(await store.readSubWindows(key, [1, 2])).toEqual(new Map([[1, zeros], [2, [1, ...zeros.slice(1)]]]));
  });

  it('reserves a key’s daily calls up to the cap, and a released one is free again', async () => {
    nowMs = Date.now();
    const { store } = await make();
    const key = windowKey();
    for (let i = 0; i < 3; i++) expect(await store.reserveDailyCall(key, '2026-11-26', 3, later())).toBe(true);
    expect(await store.reserveDailyCall(key, '2026-11-26', 3, later())).toBe(false);
    expect(await store.reserveDailyCall(key, '2026-11-27', 3, later())).toBe(true);
    await store.releaseDailyCall(key, '2026-11-26');
    expect(await store.reserveDailyCall(key, '2026-11-26', 3, later())).toBe(true);
    expect(await store.reserveDailyCall(key, '2026-11-26', 3, later())).toBe(false);
  });

  it('under the limiter, admits 100 a minute and refuses the 101st until its second has left the 60 s window', async () => {
    // Three seconds into a sub-window, a whole number of seconds.
    nowMs = (Math.floor(Date.now() / SUB_WINDOW_MS) + 1) * SUB_WINDOW_MS + 3_000;
    const { deps } = await make();
    const key = windowKey();
    for (let i = 0; i < 100; i++) expect(await checkRateLimit(deps, key, 100)).toMatchObject({ allowed: true, remaining: 99 - i });
    // Counted by the second: the 100 of second 3 leave the window 61 s later.
    expect(await checkRateLimit(deps, key, 100)).toEqual({ allowed: false, limit: 100, remaining: 0, resetSeconds: 7, retryAfterSeconds: 61 });
    nowMs += 60_000;
    expect((await checkRateLimit(deps, key, 100)).allowed).toBe(false);
    nowMs += 1_000;
    expect(await checkRateLimit(deps, key, 100)).toMatchObject({ allowed: true, remaining: 99 });
  });
});

describe('the in-memory rate-window store’s faults', () => {
  it('throttles; a failed condition refuses; a lost race finds the sub-window closed by another container', async () => {
    nowMs = 1_000_000;
    const store = new MemoryRateWindowStore(clock);
    store.faults.inject('countRequest', 'throttle');
    await expect(store.countRequest('k', 1, 0, 5, 10_000)).rejects.toMatchObject({ name: 'ProvisionedThroughputExceededException' });
    store.faults.inject('countRequest', 'failed-condition');
    expect((await store.countRequest('k', 1, 0, 5, 10_000)).outcome).toBe('full');
    expect((await store.countRequest('k', 1, 0, 5, 10_000)).outcome).toBe('counted');
    store.faults.inject('countRequest', 'lost-race');
    expect(await store.countRequest('k', 1, 0, 5, 10_000)).toEqual({ outcome: 'closed', slots: [1, ...zeros.slice(1)] });
  });
});
