/**
 * The mailer's count of refused addresses (functions/core/notify/rejection-count-store.ts) on
 * DynamoDB Local and its twin (test/support/stores/memory-rejection-count-store.ts): each window
 * answers its distinct entries so far and the previous window's; an entry refused twice counts once;
 * a full window adds no more and says so; the latches (everyone's, one organization's) only move
 * later; the item holds hashes and a TTL, never an address.
 */
import { describe, it, expect } from '@jest/globals';
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { randomInt } from 'node:crypto';
import { rejectionCountPort, REJECTION_WINDOW_CAP, REJECTION_WINDOW_MS, type RejectionCountStore } from '../../../functions/core/notify/rejection-count-store.js';
import { testStack } from '../support/stack.js';
import { MemoryRejectionCountStore } from '../../support/stores/memory-rejection-count-store.js';

const stores: [string, () => Promise<RejectionCountStore>][] = [
  ['DynamoDB Local', async () => rejectionCountPort.of((await testStack()).deps)],
  ['the in-memory twin', async () => new MemoryRejectionCountStore()],
];
// A window of its own per run (the suite's table outlives one file).
const WINDOW = Date.parse('2030-01-15T12:00:00.000Z') + randomInt(1_000_000) * REJECTION_WINDOW_MS;
const sorted = (xs: string[]) => [...xs].sort();

describe.each(stores)('the refused-address count on %s', (_name, make) => {
  it('answers the distinct entries refused in the window so far and the previous window\'s; windows count apart', async () => {
    const store = await make();
    expect(sorted((await store.countRefused(WINDOW, 'o1', 'o1.hashA')).current)).toEqual(['o1.hashA']);
    expect(sorted((await store.countRefused(WINDOW, 'o1', 'o1.hashB')).current)).toEqual(['o1.hashA', 'o1.hashB']);
    // The same address again (a retry): counted once.
    expect(sorted((await store.countRefused(WINDOW, 'o1', 'o1.hashA')).current)).toEqual(['o1.hashA', 'o1.hashB']);
    const next = await store.countRefused(WINDOW + REJECTION_WINDOW_MS, 'o2', 'o2.hashA');
    expect({ ...next, current: sorted(next.current), previous: sorted(next.previous) }).toEqual({ current: ['o2.hashA'], previous: ['o1.hashA', 'o1.hashB'], full: false, trippedUntil: expect.anything() });
  });

  it('a full window adds no more (an entry already in it still counts) and says so', async () => {
    const store = await make();
    const window = WINDOW + 3 * REJECTION_WINDOW_MS;
    for (let i = 0; i < REJECTION_WINDOW_CAP; i++) expect((await store.countRefused(window, 'o1', `o1.h${i}`)).full).toBe(false);
    const over = await store.countRefused(window, 'o2', 'o2.late');
    expect(over.full).toBe(true);
    expect(over.current).toHaveLength(REJECTION_WINDOW_CAP);
    expect(over.current).not.toContain('o2.late');
    expect((await store.countRefused(window, 'o1', 'o1.h0')).full).toBe(false);
  });

  it('latches everyone or one organization, later only', async () => {
    const store = await make();
    const window = WINDOW + 5 * REJECTION_WINDOW_MS;
    const org = `org${randomInt(1_000_000)}`;
    await store.trip({ organizationKey: org }, window + 1000);
    expect((await store.countRefused(window, org, `${org}.h`)).trippedUntil.organization).toBe(window + 1000);
    expect((await store.countRefused(window, 'other', 'other.h')).trippedUntil.organization).toBeUndefined();
    await store.trip({ organizationKey: org }, window + 500);
    expect((await store.countRefused(window, org, `${org}.h`)).trippedUntil.organization).toBe(window + 1000);
    // Everyone's latch in the past (the suite's table is shared: a latch ahead would hold every other test's suppression).
    const past = Date.parse('2001-01-01T00:00:00.000Z') + randomInt(1_000_000);
    await store.trip({}, past + 2000);
    await store.trip({}, past + 1500);
    expect((await store.countRefused(window, org, `${org}.h`)).trippedUntil.all).toBeGreaterThanOrEqual(past + 2000);
  });
});

it('stores the hashes alone, with a TTL a day after the window; a latch\'s TTL is its end', async () => {
  const { deps } = await testStack();
  const window = WINDOW + 7 * REJECTION_WINDOW_MS;
  await rejectionCountPort.of(deps).countRefused(window, 'o1', 'o1.hashZ');
  const { Item } = await deps.doc.send(new GetCommand({ TableName: deps.tables.rateWindows, Key: { pk: `MAILREJECT#${window}` }, ConsistentRead: true }));
  expect(Item).toEqual({ pk: `MAILREJECT#${window}`, refused: new Set(['o1.hashZ']), expiresAt: Math.ceil((window + 86_400_000) / 1000) });
  const org = `org${randomInt(1_000_000)}`;
  await rejectionCountPort.of(deps).trip({ organizationKey: org }, window + 3_600_000);
  const latch = await deps.doc.send(new GetCommand({ TableName: deps.tables.rateWindows, Key: { pk: `MAILREJECT#TRIPPED#${org}` }, ConsistentRead: true }));
  expect(latch.Item).toEqual({ pk: `MAILREJECT#TRIPPED#${org}`, until: window + 3_600_000, expiresAt: Math.ceil((window + 3_600_000) / 1000) });
});
