/**
 * The kept (unqueued) notices' store contract (functions/core/notify/unqueued-notices-store.ts) on
 * DynamoDB Local and its twin (test/support/stores/memory-unqueued-notices.ts): a hand-over is kept
 * as pieces of one organization and at most ~300 KB each (a batch of long notes would pass
 * DynamoDB's 400 KB item limit), spread over the partitions the sweeper reads; the same notices kept
 * twice are one item; pages go on from where the last stopped; a failed hand-over is counted, and an
 * item set aside leaves the sweeper's partitions for the operator's. On DynamoDB an item of the
 * previous version (one partition, the time first in its sort key) is still read.
 */
import { describe, it, expect, afterAll } from '@jest/globals';
import { DeleteTableCommand } from '@aws-sdk/client-dynamodb';
import { PutCommand, QueryCommand } from '@aws-sdk/lib-dynamodb';
import type { Deps } from '../../../functions/core/platform/deps.js';
import { tables as TABLES } from '../../../lib/topology.js';
import { createTable } from '../../../lib/local/provision.js';
import { newId } from '../../../functions/core/platform/ids.js';
import type { NoticeMessage } from '../../../functions/core/notify/notice.js';
import {
  dynamoUnqueuedNoticesStore, MAX_PIECE_BYTES, SET_ASIDE_PK, UNQUEUED_NOTICES_PK, UNQUEUED_PARTITIONS, type UnqueuedNotices, type UnqueuedNoticesStore,
} from '../../../functions/core/notify/unqueued-notices-store.js';
import { testStack } from '../support/stack.js';
import { MemoryUnqueuedNotices } from '../../support/stores/memory-unqueued-notices.js';

/**
 * A deliveries table of this file's own on DynamoDB Local: the test stack's sweeper re-drives what
 * waits in the stack's table every few seconds, and would take these items from under the test.
 */
let own: Promise<Deps> | undefined;
const ownDeps = () => (own ??= (async () => {
  const { deps } = await testStack();
  const name = `unqueued-contract-${newId('t', 8)}`;
  await createTable(deps.dynamodb, name, TABLES.deliveries);
  return { ...deps, tables: { ...deps.tables, deliveries: name } };
})());
afterAll(async () => {
  if (own) {
    const deps = await own;
    await deps.dynamodb.send(new DeleteTableCommand({ TableName: deps.tables.deliveries }));
  }
});

const stores: [string, () => Promise<UnqueuedNoticesStore>][] = [
  ['DynamoDB Local', async () => dynamoUnqueuedNoticesStore(await ownDeps())],
  ['the in-memory twin', async () => new MemoryUnqueuedNotices()],
];
const NOW = Date.parse('2030-01-15T12:00:00.000Z');
const notice = (organizationId: string, n: number, notes = ''): NoticeMessage => ({
  organizationId, kind: 'lead.created', key: `lead.created|${organizationId}|cli_${n}`, at: '2030-01-15T12:00:00.000Z', data: { clientId: `cli_${n}`, ...(notes ? { notes } : {}) },
});

/** Everything waiting of these organizations, over every partition, page by page. */
async function waitingOf(store: UnqueuedNoticesStore, organizations: string[], partitions: readonly string[] = UNQUEUED_PARTITIONS): Promise<(UnqueuedNotices & { partition: string })[]> {
  const found: (UnqueuedNotices & { partition: string })[] = [];
  for (const partition of partitions) {
    let after: string | undefined;
    do {
      const page = await store.waiting(partition, 7, after);
      found.push(...page.items.filter((k) => organizations.includes(k.notices[0].organizationId)).map((k) => ({ ...k, partition })));
      after = page.next;
    } while (after !== undefined);
  }
  return found;
}

describe.each(stores)('the unqueued notices on %s', (_name, make) => {
  it('keeps a large hand-over as pieces of one organization and ≤ 300 KB each, spread over partitions, and the same notices twice as one item', async () => {
    const store = await make();
    const [a, b] = [newId('org', 12), newId('org', 12)];
    // 40 notices of ~20 KB of notes (5,000 code points of 4 bytes): ~800 KB for one organization, and one of another.
    const long = '😀'.repeat(5000);
    const handOver = [...Array.from({ length: 40 }, (_, n) => notice(a, n, long)), notice(b, 1)];
    await store.keep(handOver, NOW);
    await store.keep(handOver, NOW + 1000); // kept again (a retried batch): the same items
    const kept = await waitingOf(store, [a, b]);
    expect(kept.flatMap((k) => k.notices).map((n) => n.key).sort()).toEqual(handOver.map((n) => n.key).sort());
    expect(kept.length).toBeGreaterThanOrEqual(4);
    for (const piece of kept) {
      expect(new Set(piece.notices.map((n) => n.organizationId)).size).toBe(1);
      expect(Buffer.byteLength(JSON.stringify(piece.notices))).toBeLessThanOrEqual(MAX_PIECE_BYTES);
      expect(piece).toMatchObject({ keptAt: NOW, tries: 0 });
    }
    expect(new Set(kept.map((k) => k.partition)).size).toBeGreaterThan(1);
  });

  it('counts failed hand-overs, forgets what went, and sets aside what failed too often', async () => {
    const store = await make();
    const org = newId('org', 12);
    await store.keep([notice(org, 1)], NOW);
    await store.keep([notice(org, 2)], NOW);
    const [one, two] = (await waitingOf(store, [org])).sort((x, y) => x.notices[0].key.localeCompare(y.notices[0].key));
    expect(await store.failed(one.id)).toBe(1);
    expect(await store.failed(one.id)).toBe(2);
    await store.forget(two.id);
    expect(await store.failed(two.id)).toBe(0); // gone: nothing to count
    await store.setAside({ ...one, tries: 2 }, 'InvalidMessageContents', NOW + 60_000);
    expect(await waitingOf(store, [org])).toEqual([]);
    expect(await waitingOf(store, [org], [SET_ASIDE_PK])).toEqual([expect.objectContaining({ notices: [notice(org, 1)], tries: 2, keptAt: NOW })]);
  });
});

describe('the unqueued notices on DynamoDB Local, item by item', () => {
  it('reads and re-drives an item of the previous version (one partition, the time first in its sort key)', async () => {
    const deps = await ownDeps();
    const store = dynamoUnqueuedNoticesStore(deps);
    const org = newId('org', 12);
    const sk = `2030-01-15T11:00:00.000Z#${newId('old', 12)}`;
    await deps.doc.send(new PutCommand({ TableName: deps.tables.deliveries, Item: { pk: UNQUEUED_NOTICES_PK, sk, entity: 'unqueued_notices', notices: JSON.stringify([notice(org, 1)]), expiresAt: Math.ceil(NOW / 1000) + 86_400 } }));
    const [old] = await waitingOf(store, [org]);
    expect(old).toMatchObject({ notices: [notice(org, 1)], keptAt: Date.parse('2030-01-15T11:00:00.000Z'), tries: 0 });
    await store.forget(old.id);
    expect(await waitingOf(store, [org])).toEqual([]);
  });

  it('writes each piece with its TTL, the organization first in its sort key', async () => {
    const deps = await ownDeps();
    const store = dynamoUnqueuedNoticesStore(deps);
    const org = newId('org', 12);
    await store.keep([notice(org, 1)], NOW);
    const [kept] = await waitingOf(store, [org]);
    const pk = kept.id.split('|')[0];
    const { Items = [] } = await deps.doc.send(new QueryCommand({ TableName: deps.tables.deliveries, KeyConditionExpression: 'pk = :p AND begins_with(sk, :o)', ExpressionAttributeValues: { ':p': pk, ':o': `${org}#` } }));
    expect(Items).toEqual([expect.objectContaining({ entity: 'unqueued_notices', keptAt: NOW, tries: 0, expiresAt: Math.ceil(NOW / 1000) + 14 * 86_400 })]);
  });
});
