/**
 * The request log's rows on the request-log store's twin, on a clock the test moves (docs/settings.md
 * "Request log"): recorded and read back newest first, page after page with the reader's cursor,
 * every row once; refused calls logged up to a bound per key and minute; retention; a failed write
 * never fails the request. The merge with the clients leads created (the other source) stays on
 * the stack: test/integration/settings/request-log-read.test.ts.
 */
import { describe, it, expect } from '@jest/globals';
import { MAX_REFUSED_LOGGED_PER_MINUTE, recordRequest, type RequestEntry } from '../../../functions/core/tenancy/request-log.js';
import { listRequestLog, listRequests, readRequestLog, type RequestLogPosition } from '../../../functions/core/settings/request-log-read.js';
import { givenTenancy, type Tenancy } from '../../support/tenancy-deps.js';

const entry = (organizationId: string, n: number, fields: Partial<RequestEntry> = {}): RequestEntry => ({
  requestId: `req_${n}`, organizationId, keyId: 'key_1', method: 'GET', route: '/api/webhook/leads', status: 200, latencyMs: n, ...fields,
});

/** Records `n` requests one second apart, from now on; the request ids newest first. */
async function given(t: Tenancy, organizationId: string, n: number): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 1; i <= n; i++) {
    await recordRequest(t.deps, entry(organizationId, i));
    ids.unshift(`req_${i}`);
    t.now.ms += 1000;
  }
  return ids;
}

async function allPages(t: Tenancy, organizationId: string, limit: number): Promise<string[]> {
  const ids: string[] = [];
  let before: RequestLogPosition | undefined;
  for (let pages = 0; pages < 100; pages++) {
    const page = await readRequestLog(t.deps, organizationId, { limit, before });
    expect(page.rows.length).toBeLessThanOrEqual(limit);
    ids.push(...page.rows.map((r) => r.requestId));
    if (!page.next) return ids;
    before = page.next;
  }
  throw new Error('more than 100 pages');
}

describe('the request log', () => {
  it('reads rows back as recorded, newest first, page after page, every row exactly once at any page size', async () => {
    const t = givenTenancy();
    const expected = await given(t, 'org_a', 7);
    await given(t, 'org_b', 3);
    for (const limit of [1, 2, 3, 7, 50]) expect(await allPages(t, 'org_a', limit)).toEqual(expected);
    expect((await listRequests(t.deps, 'org_a', { limit: 4 })).map((r) => r.requestId)).toEqual(expected.slice(0, 4));
    const [newest] = await listRequests(t.deps, 'org_a', { limit: 1 });
    expect(newest).toMatchObject({ requestId: 'req_7', method: 'GET', status: 200, latencyMs: 7, keyId: 'key_1', at: expect.any(String) });
    expect(newest).not.toHaveProperty('expiresAt');
  });

  it('writes no row for a created lead its client stands for, and a row when the answer was another', async () => {
    const t = givenTenancy();
    await recordRequest(t.deps, entry('org_a', 1, { method: 'POST', status: 201, recordedOnClient: 201 }));
    await recordRequest(t.deps, entry('org_a', 2, { method: 'POST', status: 500, recordedOnClient: 201 }));
    await recordRequest(t.deps, entry('', 3));
    expect((await listRequests(t.deps, 'org_a')).map((r) => [r.requestId, r.status])).toEqual([['req_2', 500]]);
  });

  it('logs a key’s refused calls up to the bound each minute, and only counts the rest', async () => {
    const t = givenTenancy({ at: Date.parse('2026-11-26T09:00:00.000Z') });
    for (let i = 0; i < MAX_REFUSED_LOGGED_PER_MINUTE + 5; i++) await recordRequest(t.deps, entry('org_a', i, { status: 401, keyId: 'key_revoked' }));
    await recordRequest(t.deps, entry('org_a', 100, { status: 401, keyId: 'key_other' }));
    expect((await listRequests(t.deps, 'org_a', { limit: 100 })).length).toBe(MAX_REFUSED_LOGGED_PER_MINUTE + 1);
    t.now.ms += 60_000;
    await recordRequest(t.deps, entry('org_a', 200, { status: 401, keyId: 'key_revoked' }));
    expect((await listRequests(t.deps, 'org_a', { limit: 100 })).map((r) => r.requestId)).toContain('req_200');
  });

  it('shows no row older than the retention, and pages to the end once they are gone', async () => {
    const t = givenTenancy({ config: { retentionDays: 1 } });
    await given(t, 'org_a', 3);
    t.now.ms += 12 * 3_600_000;
    const fresh = await given(t, 'org_a', 2);
    expect(await allPages(t, 'org_a', 2)).toHaveLength(5);
    t.now.ms += 12 * 3_600_000 - 1_000;
    expect(await allPages(t, 'org_a', 2)).toEqual(fresh);
    expect(await listRequestLog(t.deps, 'org_a', { limit: 10 })).toMatchObject({ more: false });
  });

  it('never fails the request when the row cannot be written', async () => {
    const t = givenTenancy();
    t.log.faults.inject('appendRequest', 'throttle');
    await expect(recordRequest(t.deps, entry('org_a', 1))).resolves.toBeUndefined();
    expect(await listRequests(t.deps, 'org_a')).toEqual([]);
  });
});
