/**
 * The per-key sliding-window limit (DESIGN §8) over HTTP: the 101st request inside a minute is a
 * 429 with a computed Retry-After, another key of the same organization is unaffected, every
 * response carries the rate-limit headers, and the DynamoDB-failure behaviour is explicit.
 */
import { describe, it, expect } from '@jest/globals';
import { newTenant, testStack } from '../support/stack.js';
import { createApiKey } from '../../../functions/core/tenancy/api-keys.js';
import { checkRateLimit } from '../../../functions/core/tenancy/rate-limit.js';

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

  it('slides: a full previous minute still counts early in the next one (not a fixed window)', async () => {
    const { deps } = await testStack();
    const minute = Math.floor(Date.now() / 60_000) * 60_000 + 3_600_000; // a minute of its own, an hour ahead
    let now = minute + 50_000;
    const clocked = { ...deps, now: () => now };
    const key = `key_slide_${Math.random().toString(36).slice(2)}`;
    const admitted = async (n: number) => {
      let count = 0;
      for (let i = 0; i < n; i++) if ((await checkRateLimit(clocked, key, 10)).allowed) count += 1;
      return count;
    };
    expect(await admitted(10)).toBe(10); // the previous minute, full
    now = minute + 60_000 + 6_000; // 10 % into the next minute: 10 × 0.9 = 9 still count
    expect(await admitted(5)).toBe(1);
    const refused = await checkRateLimit(clocked, key, 10);
    expect(refused).toMatchObject({ allowed: false, remaining: 0 });
    now = minute + 60_000 + 54_000; // 90 % in: 10 × 0.1 = 1 counts, plus the 1 admitted
    expect(await admitted(10)).toBe(8);
  });

  describe('when the counter table cannot be reached', () => {
    it('admits the request (fail-open) by default and says so', async () => {
      const { deps } = await testStack();
      const broken = { ...deps, tables: { ...deps.tables, rateWindows: 'no-such-table' } };
      await expect(checkRateLimit(broken, 'key_x', 100)).resolves.toMatchObject({ allowed: true, failedOpen: true, limit: 100 });
    });

    it('refuses with 503 and Retry-After when the stage is set to fail closed', async () => {
      const { deps } = await testStack();
      const broken = { ...deps, tables: { ...deps.tables, rateWindows: 'no-such-table' }, settings: { ...deps.settings, rateLimitFailMode: 'closed' as const } };
      await expect(checkRateLimit(broken, 'key_x', 100)).rejects.toMatchObject({ status: 503, extra: { headers: { 'Retry-After': '5' } } });
    });
  });
});
