/**
 * The fan-out's handling of a record whose organization_id disagrees with its partition key: no
 * event, and an alarmable trace (a `TenantMismatch` metric, flushed, and a log line without PII).
 * Such a record needs no table or queue, so none is given.
 */
import { describe, it, expect, jest, afterEach } from '@jest/globals';
import type { Deps } from '../../../functions/core/platform/deps.js';
import { fanOutStreamBatch as fanOut } from '../../../functions/event-fanout/stream-batch.js';
import { logger, metrics } from '../../../functions/core/platform/observability.js';
import { keys } from '../../../functions/core/platform/model.js';
import { streamRecord, type Shape } from './given-stream.js';
import { shares } from '../../../functions/core/events/fanout.js';

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

describe('the shares a batch’s deliveries are recorded and queued in', () => {
  const planned = (org: string, n: number) => Array.from({ length: n }, (_, i) => ({ event: { id: `evt_${org}_${i}`, organization_id: org }, endpoint: { id: 'ep' } }) as never);
  const orgsOf = (share: { event: { organization_id: string; id: string } }[]) => [...new Set(share.map((p) => p.event.organization_id))];

  it('puts an organization with 25 or more deliveries in a share of its own, everybody else’s together, each in order', () => {
    const batch = [...planned('importer', 30), ...planned('a', 1), ...planned('b', 24), ...planned('sync', 25), ...planned('a', 1)];
    const out = shares(batch);
    expect(out.map(orgsOf)).toEqual([['importer'], ['sync'], ['a', 'b']]);
    expect(out[2].filter((p: { event: { organization_id: string } }) => p.event.organization_id === 'a').map((p: { event: { id: string } }) => p.event.id)).toEqual(['evt_a_0', 'evt_a_0']);
    expect(out.flat()).toHaveLength(batch.length);
  });

  it('keeps a batch of small shares as one (one BatchWriteItem for many organizations)', () => {
    expect(shares([...planned('a', 3), ...planned('b', 3)]).map(orgsOf)).toEqual([['a', 'b']]);
    expect(shares([])).toEqual([]);
  });
});
