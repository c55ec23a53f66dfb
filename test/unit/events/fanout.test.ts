/**
 * The fan-out's handling of a record whose organization_id disagrees with its partition key: no
 * event, and an alarmable trace (a `TenantMismatch` metric, flushed, and a log line without PII).
 * Such a record needs no table or queue, so none is given. Then the hand-off decision (`shares`).
 */
import { describe, it, expect, jest, afterEach } from '@jest/globals';
import type { Deps } from '../../../functions/core/platform/deps.js';
import { fanOutStreamBatch as fanOut } from '../../../functions/event-fanout/stream-batch.js';
import { logger, metrics } from '../../../functions/core/platform/observability.js';
import { keys } from '../../../functions/core/platform/model.js';
import { streamRecord, type Shape } from './given-stream.js';
import { BULK_STAYS_MS, HANDED_OFF_SHARE, shares as sharesOf } from '../../../functions/core/events/fanout.js';

const noDeps = { now: () => Date.now() } as Deps; // any table or queue access would throw

afterEach(() => {
  jest.restoreAllMocks();
});

describe.each(['aws', 'local'] as Shape[])('a %s record filed under another organization', (shape) => {
  it('is dropped, counted as TenantMismatch and logged with ids only', async () => {
    const addMetric = jest.spyOn(metrics, 'addMetric');
    const publish = jest.spyOn(metrics, 'publishStoredMetrics').mockImplementation(() => metrics);
    const warn = jest.spyOn(logger, 'warn').mockImplementation(() => undefined);
    const item = {
      ...keys.client('org_a', 'cli_1'), entity: 'client', id: 'cli_1', organization_id: 'org_b', status: 'lead',
      first_name: 'Secret', email: 'secret@example.com', phone: '+14155550100', created_at: '2026-11-02T09:15:00.000Z', updated_at: '2026-11-02T09:15:00.000Z',
    };
    const record = streamRecord(shape, 'INSERT', { new: item });
    expect(await fanOut(noDeps, [record])).toEqual({ batchItemFailures: [] });
    expect(addMetric).toHaveBeenCalledWith('TenantMismatch', 'Count', 1);
    expect(publish).toHaveBeenCalled();
    expect(warn).toHaveBeenCalledTimes(1);
    const logged = JSON.stringify(warn.mock.calls[0]);
    expect(logged).toContain('org_a');
    expect(logged).toContain(record.dynamodb!.SequenceNumber!);
    for (const pii of ['Secret', 'secret@example.com', '4155550100', 'org_b']) expect(logged).not.toContain(pii);
  });

  it('an item that is no CRM record is not counted, whatever its organization_id', async () => {
    const addMetric = jest.spyOn(metrics, 'addMetric');
    const note = { ...keys.client('org_a', 'n_1'), entity: 'note', organization_id: 'org_b' };
    expect(await fanOut(noDeps, [streamRecord(shape, 'INSERT', { new: note })])).toEqual({ batchItemFailures: [] });
    expect(addMetric).not.toHaveBeenCalledWith('TenantMismatch', expect.anything(), expect.anything());
  });
});

describe('the hand-off decision: which deliveries of a batch the lane records and which go to the bulk queue', () => {
  // The markers as the store holds them (each organization's handOffUntil), at time 0 unless the test
  // says otherwise; each large share's marker is written as the fan-out writes it (markHandOff).
  const shares = (planned: Parameters<typeof sharesOf>[0], now = 0, marks = new Map<string, number>()) => {
    const { lane, bulk, large } = sharesOf(planned, now, marks);
    for (const org of large) marks.set(org, Math.max(marks.get(org) ?? 0, now + BULK_STAYS_MS));
    return { lane, bulk };
  };
  const event = (org: string, i: number, data = {}) => ({ id: `evt_${org}_${i}`, organization_id: org, data }) as never;
  const planned = (org: string, n: number) => Array.from({ length: n }, (_, i) => ({ event: event(org, i), endpoint: { id: 'ep', enabled: true } }));
  const ids = (share: { event: { id: string } }[]) => share.map((p) => p.event.id);

  const toEndpoints = (org: string, n: number, endpoints: number) => planned(org, n).flatMap((p) => Array.from({ length: endpoints }, (_, e) => ({ ...p, endpoint: { id: `ep_${e}`, enabled: true } })));

  it('counts events, not deliveries: 5 events to 10 endpoints each (50 deliveries) stay in the lane, 30 events to one endpoint go bulk', () => {
    const burst = toEndpoints('busy', 5, 10);
    const { lane, bulk } = shares([...burst, ...planned('importer', 30)]);
    expect(lane).toEqual(burst);
    expect(bulk.map(ids)).toEqual([ids(planned('importer', 30))]);
    // 25 events to 2 endpoints each: all 50 deliveries handed off together, each event's endpoints together.
    const { lane: none, bulk: [share] } = shares(toEndpoints('sync', 25, 2));
    expect(none).toEqual([]);
    expect(share.map((p) => `${p.event.id}>${p.endpoint.id}`).slice(0, 4)).toEqual(['evt_sync_0>ep_0', 'evt_sync_0>ep_1', 'evt_sync_1>ep_0', 'evt_sync_1>ep_1']);
    expect(share).toHaveLength(50);
  });

  it('hands off each organization with 25 or more events as a share of its own, in order; everybody else’s stay in the lane, in order', () => {
    const batch = [...planned('importer', 30), ...planned('a', 1), ...planned('b', 24), ...planned('sync', 25), ...planned('a', 2).slice(1)];
    const { lane, bulk } = shares(batch);
    expect(bulk.map(ids)).toEqual([ids(planned('importer', 30)), ids(planned('sync', 25))]);
    expect(ids(lane)).toEqual([...ids(planned('a', 1)), ...ids(planned('b', 24)), 'evt_a_1']);
    expect(lane.length + bulk.flat().length).toBe(batch.length);
  });

  it('goes on handing off an organization’s shares of HANDED_OFF_SHARE events or more for BULK_STAYS_MS after its last large share; fewer stay in the lane', () => {
    const lately = new Map<string, number>();
    expect(shares(planned('importer', 30), 1_000, lately).lane).toEqual([]);
    expect([...lately]).toEqual([['importer', 1_000 + BULK_STAYS_MS]]);
    // An import's small stretch a moment later is handed off; 'a', never large, stays in the lane.
    const stretch = planned('importer', HANDED_OFF_SHARE);
    const later = shares([...stretch, ...planned('a', HANDED_OFF_SHARE)], 1_000 + BULK_STAYS_MS - 1, lately);
    expect(later.bulk.map(ids)).toEqual([ids(stretch)]);
    expect(ids(later.lane)).toEqual(ids(planned('a', HANDED_OFF_SHARE)));
    // Fewer events (a lead, an edit) stay in the lane, not queued behind the import.
    expect(shares(planned('importer', HANDED_OFF_SHARE - 1), 1_000 + BULK_STAYS_MS - 1, lately)).toEqual({ lane: planned('importer', HANDED_OFF_SHARE - 1), bulk: [] });
    // A later large share renews the window from its own time.
    shares(planned('importer', 25), 5_000, lately);
    expect(lately.get('importer')).toBe(5_000 + BULK_STAYS_MS);
    expect(shares(stretch, 5_000 + BULK_STAYS_MS - 1, lately).bulk.map(ids)).toEqual([ids(stretch)]);
    // Once BULK_STAYS_MS have passed since its last large share, it is recorded in the lane again.
    expect(shares(stretch, 5_000 + BULK_STAYS_MS, lately)).toEqual({ lane: stretch, bulk: [] });
  });

  it('sets the marker of each organization with a large share only', () => {
    expect(sharesOf([...planned('importer', 30), ...planned('a', HANDED_OFF_SHARE)], 0, new Map([['a', 1]])).large).toEqual(['importer']);
  });

  it('keeps a batch of small shares in the lane (one BatchWriteItem for many organizations), and hands off nothing', () => {
    expect(shares([...planned('a', 3), ...planned('b', 3)])).toEqual({ lane: [...planned('a', 3), ...planned('b', 3)], bulk: [] });
    expect(shares([])).toEqual({ lane: [], bulk: [] });
  });

  it('keeps in the lane an event too big for a bulk message (recorded there as too big for the queue), the rest of its share handed off', () => {
    const big = { event: event('importer', 99, { object: { notes: 'x'.repeat(70 * 1024) } }), endpoint: { id: 'ep', enabled: true } };
    const { lane, bulk } = shares([...planned('importer', 30), big]);
    expect(ids(lane)).toEqual(['evt_importer_99']);
    expect(bulk.map(ids)).toEqual([ids(planned('importer', 30))]);
  });
});
