/**
 * The per-key limit (closed sub-windows, docs/decisions.md) over HTTP: the 101st request inside a minute is a
 * 429 with a computed Retry-After, another key of the same organization is unaffected, every
 * response carries the rate-limit headers, and the DynamoDB-failure behaviour is explicit.
 */
import { describe, it, expect } from '@jest/globals';
import { newTenant, testStack } from '../support/stack.js';
import { createApiKey } from '../../../functions/core/tenancy/api-keys.js';
import { checkRateLimit } from '../../../functions/core/tenancy/rate-limit.js';
import { BatchGetCommand } from '@aws-sdk/lib-dynamodb';

/** Starts a burst early enough in a minute that it cannot straddle the window boundary. */
async function awayFromMinuteEnd(): Promise<void> {
  const left = 60_000 - (Date.now() % 60_000);
  if (left < 15_000) await new Promise((r) => setTimeout(r, left + 50));
}

describe('rate limiting per API key', () => {
  it('refuses the 101st request in a minute with 429 and Retry-After, sparing the organization’s other key', async () => {
    const { api, deps } = await testStack();
    const t = await newTenant({ plan: 'starter' }); // 100/min
    const other = await createApiKey(deps, t.organizationId, 'second form');
    await awayFromMinuteEnd();
    const get = (key: string) => api('/api/webhook/leads', { headers: { 'X-API-Key': key } });

    const statuses: number[] = [];
    for (let i = 0; i < 100; i += 10) statuses.push(...(await Promise.all(Array.from({ length: 10 }, async () => (await get(t.key)).status))));
    expect(statuses.every((s) => s === 200)).toBe(true);

    const refused = await get(t.key);
    expect(refused.status).toBe(429);
    expect(refused.headers.get('content-type')).toBe('application/problem+json');
    const retryAfter = Number(refused.headers.get('retry-after'));
    expect(Number.isInteger(retryAfter)).toBe(true);
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(120);
    expect(refused.headers.get('x-ratelimit-remaining')).toBe('0');
    expect(refused.headers.get('ratelimit-policy')).toBe('100;w=60');
    expect(refused.headers.get('access-control-expose-headers')).toContain('Retry-After');

    const spared = await get(other.key);
    expect(spared.status).toBe(200);
    expect(spared.headers.get('x-ratelimit-remaining')).toBe('99');
  });

  it('uses the organization’s override and puts the headers on every response', async () => {
    const { api } = await testStack();
    const t = await newTenant({ rateLimitPerMinute: 3 });
    await awayFromMinuteEnd();
    const seen = [];
    for (let i = 0; i < 4; i++) {
      const res = await api('/api/webhook/leads', { method: 'POST', headers: { 'X-API-Key': t.key, 'Content-Type': 'application/json' }, body: '{}' });
      seen.push([res.status, res.headers.get('x-ratelimit-limit'), res.headers.get('x-ratelimit-remaining'), res.headers.get('ratelimit')?.startsWith('limit=3,')]);
    }
    // Both methods count; a 422 still spends a request.
    expect(seen).toEqual([[422, '3', '2', true], [422, '3', '1', true], [422, '3', '0', true], [429, '3', '0', true]]);
  });

  it('refuses the first request of a new minute after a full previous one, and admits it 60 s after the full second', async () => {
    const { deps } = await testStack();
    const minute = Math.floor(Date.now() / 60_000) * 60_000 + 3_600_000; // a minute of its own, an hour ahead
    let now = minute + 59_500; // the last second of a minute
    const clocked = { ...deps, now: () => now };
    const key = `key_edge_${Math.random().toString(36).slice(2)}`;
    const admitted = async (n: number) => {
      let count = 0;
      for (let i = 0; i < n; i++) if ((await checkRateLimit(clocked, key, 10)).allowed) count += 1;
      return count;
    };
    expect(await admitted(10)).toBe(10); // the previous minute, full in its last second
    now = minute + 60_000; // the first millisecond of the next minute
    const first = await checkRateLimit(clocked, key, 10);
    expect(first).toMatchObject({ allowed: false, remaining: 0 });
    // Its full second (59 s–60 s) leaves the span 60 s after its last millisecond: 2 min − 1 ms.
    expect(first.retryAfterSeconds).toBe(60);
    now = minute + 60_000 + 58_999; // still within 60 s of the full second
    expect(await admitted(1)).toBe(0);
    now = minute + 119_999;
    expect(await admitted(12)).toBe(10);
  });

  it('closes a sub-window at the first check after it ends: a write in flight (or from a clock behind) is counted in the open one', async () => {
    const { deps } = await testStack();
    const minute = Math.floor(Date.now() / 60_000) * 60_000 + 5_400_000; // a minute of its own
    let now = minute + 9_500;
    const clocked = { ...deps, now: () => now };
    const behind = { ...deps, now: () => minute + 9_900 }; // decided before the boundary, written after it
    const key = `key_settle_${Math.random().toString(36).slice(2)}`;
    const admitted = async (d: typeof deps, n: number) => {
      let count = 0;
      for (let i = 0; i < n; i++) if ((await checkRateLimit(d, key, 10)).allowed) count += 1;
      return count;
    };
    expect(await admitted(clocked, 5)).toBe(5);
    now = minute + 10_000; // the sub-window just ended: this check closes it, with 5
    expect(await admitted(clocked, 1)).toBe(1);
    // The late checks find their sub-window closed and are counted in the open one: 4 fit, not 5.
    expect(await admitted(behind, 5)).toBe(4);
    now = minute + 10_500;
    expect(await admitted(clocked, 5)).toBe(0);
    const { Responses } = await deps.doc.send(new BatchGetCommand({ RequestItems: { [deps.tables.rateWindows]: { Keys: [0, 1].map((i) => ({ pk: `RLS#${key}#${(minute + 10_000 * i) / 10_000}` })), ConsistentRead: true } } }));
    const byPk = Object.fromEntries((Responses?.[deps.tables.rateWindows] ?? []).map((item) => [item.pk, item]));
    expect(byPk[`RLS#${key}#${minute / 10_000}`]).toMatchObject({ count: 5, closed: true });
    expect(byPk[`RLS#${key}#${minute / 10_000 + 1}`]).toMatchObject({ count: 5 });
    expect(byPk[`RLS#${key}#${minute / 10_000 + 1}`].closed).toBeUndefined();
  });

  it('never admits more than the limit when many late checks race the close of their sub-window', async () => {
    const { deps } = await testStack();
    const minute = Math.floor(Date.now() / 60_000) * 60_000 + 6_000_000;
    const key = `key_race_${Math.random().toString(36).slice(2)}`;
    const at = (ms: number) => ({ ...deps, now: () => minute + ms });
    const results = await Promise.all([
      ...Array.from({ length: 15 }, () => checkRateLimit(at(9_990), key, 10)), // the old sub-window's last moments
      ...Array.from({ length: 15 }, () => checkRateLimit(at(10_001), key, 10)), // the next one's first: these close the old one
    ]);
    expect(results.filter((r) => r.allowed)).toHaveLength(10);
    expect(results.every((r) => !r.failedOpen)).toBe(true);
  });

  it('never admits more than the limit in any 60 s for a caller sending from :45 on, four a second', async () => {
    const { deps } = await testStack();
    const minute = Math.floor(Date.now() / 60_000) * 60_000 + 7_200_000;
    let now = 0;
    const clocked = { ...deps, now: () => now };
    const key = `key_greedy_${Math.random().toString(36).slice(2)}`;
    const times: number[] = [];
    for (let t = 45_000; t < 45_000 + 150_000; t += 250) {
      now = minute + t;
      if ((await checkRateLimit(clocked, key, 20)).allowed) times.push(now);
    }
    const most = Math.max(...times.map((t) => times.filter((u) => u >= t && u - t < 60_000).length));
    expect(most).toBe(20);
  });

  describe('when the counter table cannot be reached', () => {
    it('admits the request (fail-open) by default and says so', async () => {
      const { deps } = await testStack();
      const broken = { ...deps, tables: { ...deps.tables, rateWindows: 'no-such-table' } };
      await expect(checkRateLimit(broken, 'key_x', 100)).resolves.toMatchObject({ allowed: true, failedOpen: true, limit: 100 });
    });

    it('refuses with 503 and Retry-After when the stage is set to fail closed', async () => {
      const { deps } = await testStack();
      const broken = { ...deps, tables: { ...deps.tables, rateWindows: 'no-such-table' }, config: { ...deps.config, rateLimitFailMode: 'closed' as const } };
      await expect(checkRateLimit(broken, 'key_x', 100)).rejects.toMatchObject({ status: 503, extra: { headers: { 'Retry-After': '5' } } });
    });
  });
});
