/**
 * The mailer's count of refused addresses (functions/core/notify/rejection-count-store.ts) on
 * DynamoDB Local and its twin (test/support/stores/memory-rejection-count-store.ts): each window
 * answers its distinct entries so far and the previous window's; an entry refused twice counts once;
 * a full window adds no more and says so; the latches (everyone's, one organization's) only move
 * later and record the entries that moved them; the item holds hashes and a TTL, never an address.
 */
import { describe, it, expect } from '@jest/globals';
import { GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
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
  it('answers the distinct entries refused in the window so far and the previous window\'s; windows count apart; a read writes nothing', async () => {
    const store = await make();
    expect(sorted((await store.add(WINDOW, 'o1.hashA')).current)).toEqual(['o1.hashA']);
    expect(sorted((await store.add(WINDOW, 'o1.hashB')).current)).toEqual(['o1.hashA', 'o1.hashB']);
    // The same address again (a retry): counted once.
    expect(await store.add(WINDOW, 'o1.hashA')).toEqual({ current: expect.arrayContaining(['o1.hashA', 'o1.hashB']), full: false });
    expect((await store.read(WINDOW + REJECTION_WINDOW_MS, 'o2')).current).toEqual([]);
    await store.add(WINDOW + REJECTION_WINDOW_MS, 'o2.hashA');
    const next = await store.read(WINDOW + REJECTION_WINDOW_MS, 'o2');
    expect({ ...next, previous: sorted(next.previous) }).toEqual({ current: ['o2.hashA'], previous: ['o1.hashA', 'o1.hashB'], latches: expect.anything() });
  });

  it('a full window adds no more (an entry already in it still counts) and says so', async () => {
    const store = await make();
    const window = WINDOW + 3 * REJECTION_WINDOW_MS;
    for (let i = 0; i < REJECTION_WINDOW_CAP; i++) expect((await store.add(window, `o${i}.h`)).full).toBe(false);
    const over = await store.add(window, 'o99.late');
    expect(over.full).toBe(true);
    expect(over.current).toHaveLength(REJECTION_WINDOW_CAP);
    expect(over.current).not.toContain('o99.late');
    expect((await store.add(window, 'o0.h')).full).toBe(false);
  });

  it('latches everyone or one organization, later only, recording the entries refused while it holds (renewed: the renewing one alone)', async () => {
    const store = await make();
    const window = WINDOW + 5 * REJECTION_WINDOW_MS;
    const org = `org${randomInt(1_000_000)}`;
    await store.trip({ organizationKey: org }, window + 1000, `${org}.a`, true);
    expect((await store.read(window, org)).latches.organization).toEqual({ until: window + 1000, refused: [`${org}.a`] });
    expect((await store.read(window, 'other')).latches.organization).toBeUndefined();
    // Latched later already: not moved, the entry recorded all the same.
    await store.trip({ organizationKey: org }, window + 500, `${org}.b`, false);
    expect((await store.read(window, org)).latches.organization?.until).toBe(window + 1000);
    await store.trip({ organizationKey: org }, window + 2000, `${org}.c`, false);
    const extended = (await store.read(window, org)).latches.organization;
    expect({ ...extended, refused: sorted(extended?.refused ?? []) }).toEqual({ until: window + 2000, refused: [`${org}.a`, `${org}.b`, `${org}.c`] });
    await store.trip({ organizationKey: org }, window + 3000, `${org}.d`, true);
    expect((await store.read(window, org)).latches.organization).toEqual({ until: window + 3000, refused: [`${org}.d`] });
    // Full of entries: extended all the same, the entry not recorded.
    for (let i = 0; i < REJECTION_WINDOW_CAP; i++) await store.trip({ organizationKey: org }, window + 4000 + i, `${org}.f${i}`, false);
    const full = (await store.read(window, org)).latches.organization;
    expect(full?.until).toBe(window + 4000 + REJECTION_WINDOW_CAP - 1);
    expect(full?.refused).toHaveLength(REJECTION_WINDOW_CAP);
    // Everyone's latch in the past (the suite's table is shared: a latch ahead would hold every other test's suppression).
    const past = Date.parse('2001-01-01T00:00:00.000Z') + randomInt(1_000_000);
    await store.trip({}, past + 2000, 'x.a', false);
    await store.trip({}, past + 1500, 'x.b', false);
    expect((await store.read(window, org)).latches.all?.until).toBeGreaterThanOrEqual(past + 2000);
  });
});

it('stores the hashes alone, with a TTL a day after the window; a latch\'s TTL is its end', async () => {
  const { deps } = await testStack();
  const window = WINDOW + 7 * REJECTION_WINDOW_MS;
  await rejectionCountPort.of(deps).add(window, 'o1.hashZ');
  const { Item } = await deps.doc.send(new GetCommand({ TableName: deps.tables.rateWindows, Key: { pk: `MAILREJECT#${window}` }, ConsistentRead: true }));
  expect(Item).toEqual({ pk: `MAILREJECT#${window}`, refused: new Set(['o1.hashZ']), expiresAt: Math.ceil((window + 86_400_000) / 1000) });
  const org = `org${randomInt(1_000_000)}`;
  await rejectionCountPort.of(deps).trip({ organizationKey: org }, window + 3_600_000, `${org}.hashZ`, true);
  const latch = await deps.doc.send(new GetCommand({ TableName: deps.tables.rateWindows, Key: { pk: `MAILREJECT#TRIPPED#${org}` }, ConsistentRead: true }));
  expect(latch.Item).toEqual({ pk: `MAILREJECT#TRIPPED#${org}`, until: window + 3_600_000, expiresAt: Math.ceil((window + 3_600_000) / 1000), refused: new Set([`${org}.hashZ`]) });
});

it('reads a latch of the previous version (no entries) as one with none', async () => {
  const { deps } = await testStack();
  const org = `org${randomInt(1_000_000)}`;
  await deps.doc.send(new PutCommand({ TableName: deps.tables.rateWindows, Item: { pk: `MAILREJECT#TRIPPED#${org}`, until: WINDOW + 1000, expiresAt: Math.ceil((WINDOW + 1000) / 1000) } }));
  expect((await rejectionCountPort.of(deps).read(WINDOW, org)).latches.organization).toEqual({ until: WINDOW + 1000, refused: [] });
});
