/**
 * The statistics' arithmetic and recording (functions/core/delivery/statistics.ts,
 * record-statistics.ts, events/lead-statistics.ts) on the in-memory store with a clock the test
 * controls: a batch writes once per endpoint-hour or organization-day, the windows' buckets add up
 * what was recorded, percentiles come from the buckets, and a failed write loses counts, not work.
 */
import { describe, it, expect } from '@jest/globals';
import { endpointStats, hourOf, latencyBucket, leadStats, percentile, successRate, windowHours, emptyCounters, LATENCY_BUCKETS } from '../../../functions/core/delivery/statistics.js';
import { recordDeliveryOutcomes, recordNewLeads } from '../../../functions/core/delivery/record-statistics.js';
import { statsPort } from '../../../functions/core/delivery/stats-store.js';
import { newLeadsOf } from '../../../functions/core/events/lead-statistics.js';
import { outcomesOf } from '../../../functions/core/events/delivery-outcomes.js';
import type { StreamChange } from '../../../functions/core/events/stream-changes.js';
import { MemoryStatsStore } from '../../support/memory-stats-store.js';
import { memoryStores } from '../../support/stores/memory-deps.js';

const setup = (now = '2026-11-29T10:15:00.000Z') => {
  const { deps, clock } = memoryStores({ now });
  const store = new MemoryStatsStore(clock.now);
  return { deps: statsPort.with(deps, store), store, clock };
};

describe('statistics arithmetic', () => {
  it('puts a latency in the first bucket whose bound holds it, and past every bound in the last', () => {
    expect(latencyBucket(0)).toBe(0);
    expect(latencyBucket(50)).toBe(0);
    expect(latencyBucket(51)).toBe(1);
    expect(latencyBucket(15_000)).toBe(LATENCY_BUCKETS - 2);
    expect(latencyBucket(60_000)).toBe(LATENCY_BUCKETS - 1);
  });

  it('answers a percentile as the bound of the bucket holding that rank, null without samples', () => {
    const latency = new Array(LATENCY_BUCKETS).fill(0);
    expect(percentile(latency, 0.5)).toBeNull();
    latency[0] = 50; // ≤ 50 ms
    latency[4] = 45; // ≤ 500 ms
    latency[9] = 5; // ≤ 3 s
    expect(percentile(latency, 0.5)).toBe(50);
    expect(percentile(latency, 0.95)).toBe(500);
    expect(percentile(latency, 0.96)).toBe(3_000);
    latency[LATENCY_BUCKETS - 1] = 1000;
    expect(percentile(latency, 0.95)).toBe(15_000);
  });

  it('rates success over what ended, null when nothing did', () => {
    expect(successRate({ delivered: 0, failed: 0 })).toBeNull();
    expect(successRate({ delivered: 2, failed: 1 })).toBe(0.6667);
  });

  it('gives 24 hourly buckets ending with the current hour, and 7 daily ones (today so far) summing the hours', () => {
    const now = Date.parse('2026-11-29T10:15:00.000Z');
    expect(windowHours('24h', now)).toHaveLength(24);
    expect(windowHours('24h', now).at(-1)).toBe('2026-11-29T10');
    expect(windowHours('24h', now)[0]).toBe('2026-11-28T11');
    const c = emptyCounters();
    c.delivered = 3;
    const byHour = new Map([['2026-11-29T10', c], ['2026-11-29T09', { ...emptyCounters(), failed: 1 }], ['2026-11-20T10', { ...emptyCounters(), delivered: 100 }]]);
    const day = endpointStats('24h', now, byHour);
    expect(day.buckets).toHaveLength(24);
    expect(day.buckets.at(-1)).toMatchObject({ start: '2026-11-29T10:00:00.000Z', delivered: 3 });
    expect(day.totals).toEqual({ delivered: 3, failed: 1, retrying: 0, success_rate: 0.75 });
    const week = endpointStats('7d', now, byHour);
    expect(week.buckets.map((b) => b.start)).toEqual(['23', '24', '25', '26', '27', '28', '29'].map((d) => `2026-11-${d}T00:00:00.000Z`));
    expect(week.buckets.at(-1)).toMatchObject({ delivered: 3, failed: 1 });
    // Outside the window (the 20th) counts nothing.
    expect(week.totals.delivered).toBe(3);
  });

  it('gives 30 daily lead buckets with every source, zero where none came', () => {
    const stats = leadStats(Date.parse('2026-11-29T10:15:00.000Z'), new Map([['2026-11-29', { lead_endpoint: 2, page_key: 1, no_script_form: 0 }]]));
    expect(stats.buckets).toHaveLength(30);
    expect(stats.buckets[0]).toEqual({ start: '2026-10-31T00:00:00.000Z', by_source: { lead_endpoint: 0, page_key: 0, no_script_form: 0 } });
    expect(stats.totals.leads).toBe(3);
  });
});

describe('recording a batch', () => {
  it('writes once per endpoint and hour, whatever the batch holds', async () => {
    const { deps, store, clock } = setup();
    const at = clock.now();
    await recordDeliveryOutcomes(deps, [
      { organizationId: 'org_1', endpointId: 'ep_a', at, count: 'delivered', latencyMs: 40 },
      { organizationId: 'org_1', endpointId: 'ep_a', at, count: 'retrying', latencyMs: 900 },
      { organizationId: 'org_1', endpointId: 'ep_a', at, count: 'failed', latencyMs: 20_000 },
      { organizationId: 'org_1', endpointId: 'ep_b', at, count: 'delivered', latencyMs: 120 },
    ]);
    expect(store.writes).toBe(2);
    const a = (await store.endpointHours('org_1', 'ep_a', ['2026-11-29T10', '2026-11-29T10'])).get('2026-11-29T10')!;
    expect(a).toMatchObject({ delivered: 1, retrying: 1, failed: 1 });
    expect(a.latency[latencyBucket(40)] + a.latency[latencyBucket(900)] + a.latency[latencyBucket(20_000)]).toBe(3);
  });

  it('counts each outcome into its own hour: one batch spanning two hours writes both', async () => {
    const { deps, store, clock } = setup('2026-11-29T10:59:59.000Z');
    const at = clock.now();
    await recordDeliveryOutcomes(deps, [
      { organizationId: 'org_1', endpointId: 'ep_a', at, count: 'delivered', latencyMs: 10 },
      { organizationId: 'org_1', endpointId: 'ep_a', at: at + 2_000, count: 'delivered', latencyMs: 10 },
    ]);
    expect(store.writes).toBe(2);
    const read = await store.endpointHours('org_1', 'ep_a', ['2026-11-29T10', '2026-11-29T11']);
    expect([...read].map(([h, c]) => [h, c.delivered])).toEqual([['2026-11-29T10', 1], ['2026-11-29T11', 1]]);
    expect(hourOf(at + 2_000)).toBe('2026-11-29T11');
  });

  it('loses only the counts when the write fails: it neither throws nor retries an ADD', async () => {
    const { deps, store } = setup();
    store.faults.inject('addDeliveryCounts', 'throttle');
    await expect(recordDeliveryOutcomes(deps, [{ organizationId: 'org_1', endpointId: 'ep_a', at: 0, count: 'delivered', latencyMs: 10 }])).resolves.toBeUndefined();
    expect(store.writes).toBe(0);
    store.faults.inject('addLeadCounts', 'throttle');
    await expect(recordNewLeads(deps, [{ organizationId: 'org_1', source: 'page_key' }])).resolves.toBeUndefined();
  });

  it('counts a stream batch’s new leads once per organization and day, by source; merges, imports and other records are not leads', async () => {
    const { deps, store } = setup();
    const insert = (item: Record<string, unknown>, kind: StreamChange['kind'] = 'insert'): StreamChange => {
      const image = { entity: 'client', status: 'lead', organization_id: 'org_1', ...item };
      return { stream: 's', sequenceNumber: '1', kind, keys: { pk: `ORG#${String(image.organization_id)}`, sk: 'CLIENT#c' }, newImage: image };
    };
    const leads = newLeadsOf([
      insert({ request_id: 'req_1' }),
      insert({ request_id: 'req_2', request_channel: 'page' }),
      insert({ request_id: 'req_3', request_channel: 'form' }),
      insert({ request_id: 'req_4' }, 'modify'), // a merge
      insert({}), // an import or the CRM's own write
      insert({ request_id: 'req_5', entity: 'work_order' }),
      insert({ request_id: 'req_6', organization_id: 'org_2' }),
    ]);
    expect(leads).toEqual([
      { organizationId: 'org_1', source: 'lead_endpoint' }, { organizationId: 'org_1', source: 'page_key' },
      { organizationId: 'org_1', source: 'no_script_form' }, { organizationId: 'org_2', source: 'lead_endpoint' },
    ]);
    await recordNewLeads(deps, leads);
    expect(store.writes).toBe(2);
    expect((await store.leadDays('org_1', ['2026-11-29', '2026-11-29'])).get('2026-11-29')).toEqual({ lead_endpoint: 1, page_key: 1, no_script_form: 1 });
  });

  it('takes a lead’s organization from its key: a client whose organization_id disagrees (dropped by the fan-out) and one a restore writes back are not new leads', () => {
    const client = (pk: string, item: Record<string, unknown> = {}): StreamChange =>
      ({ stream: 's', sequenceNumber: '1', kind: 'insert', keys: { pk, sk: 'CLIENT#c' }, newImage: { pk, sk: 'CLIENT#c', entity: 'client', status: 'lead', organization_id: 'org_1', request_id: 'req_1', ...item } });
    expect(newLeadsOf([
      client('ORG#org_1'),
      client('ORG#org_2'), // the item says org_1, its key org_2: a tenant mismatch
      client('ORG#org_1', { organization_id: undefined }),
      client('org_1'), // not a tenant's key
      client('ORG#org_1', { restoredAt: '2026-11-29T09:00:00.000Z' }), // `crm tables import`
    ])).toEqual([{ organizationId: 'org_1', source: 'lead_endpoint' }]);
  });

  it('reads a delivery record’s changes as outcomes: each appended attempt’s latency, a failed one going on as retrying, the status it moved to', () => {
    const record = (status: string, attempts: { at: string; attempt: number; statusCode?: number; latencyMs: number }[]) =>
      ({ pk: 'ORG#org_1', sk: 'DELIVERY#dlv_1', organizationId: 'org_1', endpointId: 'ep_a', status, attempts, updatedAt: attempts.at(-1)?.at ?? '2026-11-29T10:00:00.000Z' });
    const first = { at: '2026-11-29T10:00:01.000Z', attempt: 1, statusCode: 500, latencyMs: 80 };
    const second = { at: '2026-11-29T10:00:03.000Z', attempt: 2, statusCode: 200, latencyMs: 30 };
    const change = (kind: StreamChange['kind'], before: object | undefined, after: object): StreamChange =>
      ({ stream: 's', sequenceNumber: '1', kind, keys: {}, ...(before ? { oldImage: before as never } : {}), newImage: after as never });
    const now = Date.parse('2026-11-29T11:00:00.000Z');
    expect(outcomesOf([
      change('insert', undefined, record('pending', [])), // recorded by the fan-out: nothing yet
      change('modify', record('pending', []), record('retrying', [first])),
      change('modify', record('retrying', [first]), record('delivered', [first, second])),
      // A redelivery's new round: nothing by itself.
      change('modify', record('delivered', [first, second]), record('pending', [first, second])),
      // Exhausted: the last attempt failed and the delivery failed for good.
      change('modify', record('retrying', [first]), record('failed', [first, { ...first, at: '2026-11-29T10:05:00.000Z', attempt: 5 }])),
      // Not delivery records, or not changes that count.
      change('modify', {}, { pk: 'ORG#org_1', sk: 'EVENT#evt_1', organizationId: 'org_1' }),
      change('remove', record('delivered', [first]), record('delivered', [first])),
      // The receiver check's sends: refusals it asked for, not the endpoint's traffic.
      change('modify', { ...record('pending', []), check: true }, { ...record('failed', [first]), check: true }),
      change('modify', { ...record('failed', [first]), check: true }, { ...record('delivered', [first, second]), check: true }),
    ], now)).toEqual([
      { organizationId: 'org_1', endpointId: 'ep_a', at: Date.parse(first.at), latencyMs: 80, count: 'retrying' },
      { organizationId: 'org_1', endpointId: 'ep_a', at: Date.parse(second.at), latencyMs: 30 },
      { organizationId: 'org_1', endpointId: 'ep_a', at: Date.parse(second.at), count: 'delivered' },
      { organizationId: 'org_1', endpointId: 'ep_a', at: Date.parse('2026-11-29T10:05:00.000Z'), latencyMs: 80 },
      { organizationId: 'org_1', endpointId: 'ep_a', at: Date.parse('2026-11-29T10:05:00.000Z'), count: 'failed' },
    ]);
  });
});
