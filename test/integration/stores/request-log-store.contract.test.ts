/**
 * The request log's store contract (functions/core/tenancy/request-log-store.ts): the same
 * behaviours against the requestLog table on DynamoDB Local and against the in-memory twin
 * (test/support/memory-request-log-store.ts): rows read back newest first as written, paged by
 * sort key (a read stopped at its limit says how far it went), a row past its TTL absent, another
 * organization's rows never seen, refused calls counted per key and minute.
 */
import { describe, it, expect } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import { testStack } from '../support/stack.js';
import { keys } from '../../../functions/core/platform/model.js';
import { dynamoRequestLogStore, type RequestLogStore, type StoredRequest } from '../../../functions/core/tenancy/request-log-store.js';
import { MemoryRequestLogStore } from '../../support/memory-request-log-store.js';

let nowMs = Date.parse('2026-11-26T09:00:00.000Z');
const clock = () => nowMs;

const implementations: [string, () => Promise<RequestLogStore>][] = [
  ['DynamoDB', async () => dynamoRequestLogStore({ ...(await testStack()).deps, now: clock })],
  ['in memory', async () => new MemoryRequestLogStore(clock)],
];

const newOrganization = () => `org_rl_${randomUUID().slice(0, 8)}`;
const row = (organizationId: string, n: number): StoredRequest => ({
  at: new Date(nowMs - 60_000 + n * 1000).toISOString(), requestId: `req_${n}`, organizationId, keyId: 'key_1', method: 'POST', route: '/api/webhook/leads', status: 201, latencyMs: 10 + n,
});
/** Every row of the organization (the whole range), and its sort key. */
const range: [string, string] = [keys.requestPrefix, `${keys.requestPrefix}\uffff`];
const skOf = (r: StoredRequest) => keys.request(r.organizationId!, r.at, r.requestId).sk;
/** Far ahead of the clock (epoch seconds). */
const kept = () => Math.floor(nowMs / 1000) + 86_400;

describe.each(implementations)('the request-log store (%s)', (_name, make) => {
  it('reads rows back as written, newest first, each with its sort key; never another organization’s', async () => {
    const store = await make();
    const org = newOrganization();
    const rows = [1, 2, 3].map((n) => row(org, n));
    for (const r of rows) await store.appendRequest(org, r, kept());
    await store.appendRequest(newOrganization(), row('org_other', 4), kept());
    const read = await store.newestRequests(org, range, 10);
    expect(read).toEqual({ rows: [...rows].reverse().map((r) => ({ sk: skOf(r), request: r })), complete: true });
    // A row's optional fields come back as written.
    const detailed = { ...row(org, 5), outcome: 'honeypot', clientId: 'cli_x', recordedOnClient: 201, status: 500 };
    await store.appendRequest(org, detailed, kept());
    expect((await store.newestRequests(org, range, 1)).rows).toEqual([{ sk: skOf(detailed), request: detailed }]);
  });

  it('pages by sort key: a read stopped at its limit says where, the next starts below it, the last is complete', async () => {
    const store = await make();
    const org = newOrganization();
    const rows = [1, 2, 3, 4, 5].map((n) => row(org, n));
    for (const r of rows) await store.appendRequest(org, r, kept());
    const first = await store.newestRequests(org, range, 2);
    expect(first.rows.map((r) => r.request.requestId)).toEqual(['req_5', 'req_4']);
    expect(first).toMatchObject({ complete: false, reached: skOf(rows[3]) });
    const second = await store.newestRequests(org, [range[0], `${skOf(rows[3]).slice(0, -1)}`], 2);
    expect(second.rows.map((r) => r.request.requestId)).toEqual(['req_3', 'req_2']);
    expect(second.complete).toBe(false);
    const third = await store.newestRequests(org, [range[0], `${skOf(rows[1]).slice(0, -1)}`], 2);
    expect(third).toEqual({ rows: [{ sk: skOf(rows[0]), request: rows[0] }], complete: true });
    // The lower bound holds too (a retention's start).
    expect((await store.newestRequests(org, [skOf(rows[2]), range[1]], 10)).rows.map((r) => r.request.requestId)).toEqual(['req_5', 'req_4', 'req_3']);
  });

  it('leaves out a row past its expiry (TTL), and still says how far the read went', async () => {
    const store = await make();
    const org = newOrganization();
    const [old, fresh] = [row(org, 1), row(org, 2)];
    await store.appendRequest(org, old, Math.floor(nowMs / 1000) + 5);
    await store.appendRequest(org, fresh, kept());
    expect((await store.newestRequests(org, range, 10)).rows).toHaveLength(2);
    nowMs += 6_000;
    expect(await store.newestRequests(org, range, 10)).toEqual({ rows: [{ sk: skOf(fresh), request: fresh }], complete: true });
    const stopped = await store.newestRequests(org, range, 2);
    expect(stopped).toMatchObject({ rows: [{ sk: skOf(fresh), request: fresh }] });
    if (!stopped.complete) expect(stopped.reached).toBe(skOf(old));
  });

  it('counts refused calls per key and minute, apart from the rows', async () => {
    const store = await make();
    const org = newOrganization();
    expect(await store.countRefusedCall(org, 'key_a', 100, kept())).toBe(1);
    expect(await store.countRefusedCall(org, 'key_a', 100, kept())).toBe(2);
    expect(await store.countRefusedCall(org, 'key_b', 100, kept())).toBe(1);
    expect(await store.countRefusedCall(org, 'key_a', 101, kept())).toBe(1);
    expect(await store.newestRequests(org, range, 10)).toEqual({ rows: [], complete: true });
  });
});

describe('the in-memory request-log store’s faults', () => {
  it('throttles a write once', async () => {
    const store = new MemoryRequestLogStore(clock);
    store.faults.inject('appendRequest', 'throttle');
    const org = newOrganization();
    await expect(store.appendRequest(org, row(org, 1), kept())).rejects.toMatchObject({ name: 'ProvisionedThroughputExceededException' });
    await store.appendRequest(org, row(org, 1), kept());
    expect((await store.newestRequests(org, range, 10)).rows).toHaveLength(1);
  });
});
