/**
 * The mailer's count of refused addresses (functions/core/notify/rejection-count-store.ts) on
 * DynamoDB Local and its twin (test/support/stores/memory-rejection-count-store.ts): each window
 * answers its distinct addresses so far; an address refused twice counts once; windows count apart;
 * the item holds hashes and a TTL, never an address.
 */
import { describe, it, expect } from '@jest/globals';
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { randomInt } from 'node:crypto';
import { rejectionCountPort, REJECTION_WINDOW_MS, type RejectionCountStore } from '../../../functions/core/notify/rejection-count-store.js';
import { testStack } from '../support/stack.js';
import { MemoryRejectionCountStore } from '../../support/stores/memory-rejection-count-store.js';

const stores: [string, () => Promise<RejectionCountStore>][] = [
  ['DynamoDB Local', async () => rejectionCountPort.of((await testStack()).deps)],
  ['the in-memory twin', async () => new MemoryRejectionCountStore()],
];
// A window of its own per run (the suite's table outlives one file).
const WINDOW = Date.parse('2030-01-15T12:00:00.000Z') + randomInt(1_000_000) * REJECTION_WINDOW_MS;

describe.each(stores)('the refused-address count on %s', (_name, make) => {
  it('answers the distinct addresses refused in the window so far; windows count apart', async () => {
    const store = await make();
    expect(await store.countRefused(WINDOW, 'hashA')).toBe(1);
    expect(await store.countRefused(WINDOW, 'hashB')).toBe(2);
    // The same address again (a retry, another organization): counted once.
    expect(await store.countRefused(WINDOW, 'hashA')).toBe(2);
    expect(await store.countRefused(WINDOW, 'hashC')).toBe(3);
    expect(await store.countRefused(WINDOW + REJECTION_WINDOW_MS, 'hashA')).toBe(1);
  });
});

it('stores the hashes alone, with a TTL a day after the window', async () => {
  const { deps } = await testStack();
  const window = WINDOW + 7 * REJECTION_WINDOW_MS;
  await rejectionCountPort.of(deps).countRefused(window, 'hashZ');
  const { Item } = await deps.doc.send(new GetCommand({ TableName: deps.tables.rateWindows, Key: { pk: `MAILREJECT#${window}` }, ConsistentRead: true }));
  expect(Item).toEqual({ pk: `MAILREJECT#${window}`, refused: new Set(['hashZ']), expiresAt: Math.ceil((window + 86_400_000) / 1000) });
});
