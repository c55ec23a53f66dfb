/**
 * The per-key limit (closed sub-windows, docs/decisions.md) over HTTP: the 101st request inside a minute is a
 * 429 with a computed Retry-After, another key of the same organization is unaffected, every
 * response carries the rate-limit headers.
 * The limiter's arithmetic without HTTP runs on the rate-window store's twin
 * (test/unit/tenancy/rate-limiter.test.ts), moved from here: a full previous minute and its
 * Retry-After, the close of a sub-window at a boundary, late checks racing the close, a greedy
 * caller from :45, fail-open and fail-closed (503 with Retry-After). The store's conditions on
 * DynamoDB: test/integration/stores/rate-window-store.contract.test.ts.
 */
import { describe, it, expect } from '@jest/globals';
import { newTenant, testStack } from '../support/stack.js';
import { createApiKey } from '../../../functions/core/tenancy/api-keys.js';

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
});
