/**
 * The statistics store's contract (functions/core/delivery/stats-store.ts): the same behaviours
 * against the deliveries table on DynamoDB Local and against the in-memory twin
 * (test/support/memory-stats-store.ts): counts added up across writes, read back by hour or day
 * within a range, zero counts never stored, an item past its TTL absent, another endpoint's or
 * organization's counts never seen.
 */
import { describe, it, expect } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import { testStack } from '../support/stack.js';
import { dynamoStatsStore, type StatsStore } from '../../../functions/core/delivery/stats-store.js';
import { emptyCounters, type DeliveryCounters } from '../../../functions/core/delivery/statistics.js';
import { MemoryStatsStore } from '../../support/memory-stats-store.js';

let nowMs = Date.parse('2026-11-29T09:30:00.000Z');
const clock = () => nowMs;

const implementations: [string, () => Promise<StatsStore>][] = [
  ['DynamoDB', async () => dynamoStatsStore({ ...(await testStack()).deps, now: clock })],
  ['in memory', async () => new MemoryStatsStore(clock)],
];

const newOrganization = () => `org_st_${randomUUID().slice(0, 8)}`;
const kept = () => Math.floor(nowMs / 1000) + 86_400;
const counters = (delivered: number, failed: number, retrying: number, latency: Record<number, number> = {}): DeliveryCounters => {
  const c = emptyCounters();
  Object.assign(c, { delivered, failed, retrying });
  for (const [i, n] of Object.entries(latency)) c.latency[Number(i)] = n;
  return c;
};

describe.each(implementations)('the statistics store (%s)', (_name, make) => {
  it('adds an endpoint’s counts across writes and reads them back by hour, within the range only', async () => {
    const store = await make();
    const org = newOrganization();
    await store.addDeliveryCounts([
      { organizationId: org, endpointId: 'ep_a', hour: '2026-11-29T08', counters: counters(2, 0, 1, { 0: 3 }) },
      { organizationId: org, endpointId: 'ep_b', hour: '2026-11-29T08', counters: counters(5, 5, 5) },
      { organizationId: newOrganization(), endpointId: 'ep_a', hour: '2026-11-29T08', counters: counters(7, 7, 7) },
    ], kept());
    await store.addDeliveryCounts([{ organizationId: org, endpointId: 'ep_a', hour: '2026-11-29T08', counters: counters(1, 1, 0, { 0: 1, 13: 1 }) }], kept());
    await store.addDeliveryCounts([{ organizationId: org, endpointId: 'ep_a', hour: '2026-11-29T09', counters: counters(4, 0, 0) }], kept());
    await store.addDeliveryCounts([{ organizationId: org, endpointId: 'ep_a', hour: '2026-11-29T10', counters: counters(9, 0, 0) }], kept());

    const read = await store.endpointHours(org, 'ep_a', ['2026-11-29T08', '2026-11-29T09']);
    expect([...read.keys()].sort()).toEqual(['2026-11-29T08', '2026-11-29T09']);
    expect(read.get('2026-11-29T08')).toEqual(counters(3, 1, 1, { 0: 4, 13: 1 }));
    expect(read.get('2026-11-29T09')).toEqual(counters(4, 0, 0));
    // An endpoint whose id begins like another's sees only its own.
    expect((await store.endpointHours(org, 'ep_', ['2026-11-29T08', '2026-11-29T09'])).size).toBe(0);
  });

  it('adds an organization’s leads per day and source; another organization’s are never seen', async () => {
    const store = await make();
    const org = newOrganization();
    await store.addLeadCounts([{ organizationId: org, day: '2026-11-28', counts: { lead_endpoint: 2 } }, { organizationId: newOrganization(), day: '2026-11-28', counts: { page_key: 9 } }], kept());
    await store.addLeadCounts([{ organizationId: org, day: '2026-11-28', counts: { lead_endpoint: 1, no_script_form: 1 } }, { organizationId: org, day: '2026-11-29', counts: { page_key: 3 } }], kept());
    const read = await store.leadDays(org, ['2026-10-31', '2026-11-29']);
    expect(Object.fromEntries(read)).toEqual({
      '2026-11-28': { lead_endpoint: 3, page_key: 0, no_script_form: 1 },
      '2026-11-29': { lead_endpoint: 0, page_key: 3, no_script_form: 0 },
    });
  });

  it('leaves out counts past their TTL', async () => {
    const store = await make();
    const org = newOrganization();
    await store.addLeadCounts([{ organizationId: org, day: '2026-11-20', counts: { lead_endpoint: 1 } }], Math.floor(nowMs / 1000) + 60);
    expect((await store.leadDays(org, ['2026-11-01', '2026-11-29'])).size).toBe(1);
    nowMs += 120_000;
    expect((await store.leadDays(org, ['2026-11-01', '2026-11-29'])).size).toBe(0);
  });
});
