/**
 * The API keys' store contract (functions/core/tenancy/key-store.ts): the same behaviours against
 * the organizations table on DynamoDB Local and against the in-memory twin
 * (test/support/memory-key-store.ts). A key's lifecycle writes (create, rotate with grace, revoke)
 * are conditional on the slot item's version and on the key as read: a write from a stale read
 * changes nothing and throws LostRace. An expired key is still found by its hash (authentication
 * says why it is refused).
 */
import { describe, it, expect } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import { PutCommand } from '@aws-sdk/lib-dynamodb';
import { testStack } from '../support/stack.js';
import { keys, type ApiKeyRecord } from '../../../functions/core/platform/model.js';
import { LostRace } from '../../../functions/core/platform/optimistic.js';
import { dynamoKeyStore, type KeyStore } from '../../../functions/core/tenancy/key-store.js';
import { hashApiKey } from '../../../functions/core/tenancy/api-keys.js';
import { MemoryKeyStore } from '../../support/memory-key-store.js';

interface Implementation {
  store: KeyStore;
  /** Writes a key as organizations from before the slot item hold it: the key item alone. */
  seedLegacyKey(record: ApiKeyRecord): Promise<void>;
}

const implementations: [string, () => Promise<Implementation>][] = [
  ['DynamoDB', async () => {
    const { deps } = await testStack();
    return {
      store: dynamoKeyStore(deps),
      async seedLegacyKey(record) {
        await deps.doc.send(new PutCommand({ TableName: deps.tables.organizations, Item: { ...keys.apiKeyByHash(record.hash), ...keys.apiKeyIndex(record.organizationId, record.keyId), entity: 'api_key', ...record } }));
      },
    };
  }],
  ['in memory', async () => {
    const store = new MemoryKeyStore();
    return { store, seedLegacyKey: async (record) => store.seedKey(record) };
  }],
];

const T0 = Date.parse('2026-11-26T09:00:00.000Z');
const iso = (ms: number) => new Date(ms).toISOString();
const newOrganization = () => `org_keys_${randomUUID().slice(0, 8)}`;
const aKey = (organizationId: string, n: number, extra: Partial<ApiKeyRecord> = {}): ApiKeyRecord => ({
  keyId: `key_${n}_${randomUUID().slice(0, 6)}`, organizationId, name: `key ${n}`, hash: hashApiKey(randomUUID()), last4: 'abcd', createdAt: iso(T0 + n), kind: 'secret', ...extra,
});
const lostRace = expect.any(LostRace);

describe.each(implementations)('the keys store (%s)', (_name, make) => {
  it('creates a key with its slot, found by hash, by id and in the list', async () => {
    const { store } = await make();
    const org = newOrganization();
    const key = aKey(org, 1, { kind: 'publishable', origins: ['https://shop.example'], dailyCap: 50, perIpLimit: 3, honeypotField: 'url', thankYouUrl: 'https://shop.example/thanks' });
    expect(await store.readKeySlots(org)).toEqual({ live: {}, version: 0 });
    await store.createKey(key, { organizationId: org, read: 0, live: { [key.keyId]: null } });
    expect(await store.findKeyByHash(key.hash)).toEqual(key);
    expect(await store.findKeyByHash(key.hash, { consistent: true })).toEqual(key);
    expect(await store.findKey(org, key.keyId)).toEqual(key);
    expect(await store.findKey(newOrganization(), key.keyId)).toBeUndefined();
    expect(await store.listKeys(org)).toEqual([key]);
    expect(await store.readKeySlots(org)).toEqual({ live: { [key.keyId]: null }, version: 1 });
    expect(await store.findKeyByHash(hashApiKey('crm_live_unknown'))).toBeUndefined();
  });

  it('refuses a creation over a stale slot version or a taken hash, and writes nothing', async () => {
    const { store } = await make();
    const org = newOrganization();
    const first = aKey(org, 1);
    await store.createKey(first, { organizationId: org, read: 0, live: { [first.keyId]: null } });
    const second = aKey(org, 2);
    // Read at version 0 by a request that lost to the first: refused.
    await expect(store.createKey(second, { organizationId: org, read: 0, live: { [second.keyId]: null } })).rejects.toEqual(lostRace);
    // Its hash drawn again: refused.
    await expect(store.createKey({ ...second, hash: first.hash }, { organizationId: org, read: 1, live: { [first.keyId]: null, [second.keyId]: null } })).rejects.toEqual(lostRace);
    expect(await store.findKeyByHash(second.hash)).toBeUndefined();
    expect(await store.listKeys(org)).toEqual([first]);
    expect(await store.readKeySlots(org)).toEqual({ live: { [first.keyId]: null }, version: 1 });
  });

  it('rotates with a grace: the old key expires at the time given, once; a second rotation from the same read is refused', async () => {
    const { store } = await make();
    const org = newOrganization();
    const old = aKey(org, 1);
    await store.createKey(old, { organizationId: org, read: 0, live: { [old.keyId]: null } });
    const until = iso(T0 + 24 * 3_600_000);
    const created = aKey(org, 2);
    await store.rotateKey({ created, old, endAt: until, revoke: false, slots: { organizationId: org, read: 1, live: { [old.keyId]: until, [created.keyId]: null } } });
    expect(await store.findKeyByHash(old.hash, { consistent: true })).toEqual({ ...old, expiresAt: until });
    expect(await store.findKeyByHash(created.hash)).toEqual(created);
    expect(await store.readKeySlots(org)).toEqual({ live: { [old.keyId]: until, [created.keyId]: null }, version: 2 });

    // A concurrent rotation that read the key before the first (no expiry yet) must not extend it.
    const again = aKey(org, 3);
    const later = iso(T0 + 48 * 3_600_000);
    await expect(store.rotateKey({ created: again, old, endAt: later, revoke: false, slots: { organizationId: org, read: 2, live: { [old.keyId]: later, [again.keyId]: null } } }))
      .rejects.toEqual(lostRace);
    expect((await store.findKeyByHash(old.hash, { consistent: true }))?.expiresAt).toBe(until);
    expect(await store.findKeyByHash(again.hash)).toBeUndefined();

    // From the key as it is now (its expiry read), a rotation may shorten it.
    const expiring = { ...old, expiresAt: until };
    const third = aKey(org, 4);
    const sooner = iso(T0 + 3_600_000);
    await store.rotateKey({ created: third, old: expiring, endAt: sooner, revoke: false, slots: { organizationId: org, read: 2, live: { [old.keyId]: sooner, [created.keyId]: null, [third.keyId]: null } } });
    expect((await store.findKeyByHash(old.hash, { consistent: true }))?.expiresAt).toBe(sooner);
  });

  it('rotates without grace (a revocation of the old key) and revokes: a revoked key cannot be ended again', async () => {
    const { store } = await make();
    const org = newOrganization();
    const old = aKey(org, 1);
    const other = aKey(org, 2);
    await store.createKey(old, { organizationId: org, read: 0, live: { [old.keyId]: null } });
    await store.createKey(other, { organizationId: org, read: 1, live: { [old.keyId]: null, [other.keyId]: null } });
    const created = aKey(org, 3);
    await store.rotateKey({ created, old, endAt: iso(T0), revoke: true, slots: { organizationId: org, read: 2, live: { [other.keyId]: null, [created.keyId]: null } } });
    expect(await store.findKeyByHash(old.hash, { consistent: true })).toEqual({ ...old, revokedAt: iso(T0) });
    await expect(store.revokeKey({ key: old, at: iso(T0 + 1), slots: { organizationId: org, read: 3, live: { [other.keyId]: null } } })).rejects.toEqual(lostRace);

    await store.revokeKey({ key: other, at: iso(T0 + 2), slots: { organizationId: org, read: 3, live: { [created.keyId]: null } } });
    expect(await store.findKeyByHash(other.hash)).toEqual({ ...other, revokedAt: iso(T0 + 2) });
    expect(await store.readKeySlots(org)).toEqual({ live: { [created.keyId]: null }, version: 4 });
    // A revocation over a stale slot version changes nothing, not even the key.
    await expect(store.revokeKey({ key: created, at: iso(T0 + 3), slots: { organizationId: org, read: 3, live: {} } })).rejects.toEqual(lostRace);
    expect((await store.findKeyByHash(created.hash))?.revokedAt).toBeUndefined();
  });

  it('finds an expired key by its hash, with its expiry (authentication refuses it, naming why)', async () => {
    const { store } = await make();
    const org = newOrganization();
    const old = aKey(org, 1);
    await store.createKey(old, { organizationId: org, read: 0, live: { [old.keyId]: null } });
    const created = aKey(org, 2);
    const past = iso(T0 - 1000);
    await store.rotateKey({ created, old, endAt: past, revoke: false, slots: { organizationId: org, read: 1, live: { [created.keyId]: null } } });
    expect(await store.findKeyByHash(old.hash)).toEqual({ ...old, expiresAt: past });
    expect((await store.listKeys(org)).map((k) => k.keyId).sort()).toEqual([old.keyId, created.keyId].sort());
  });

  it('makes the slots of an organization from before the slot item from its keys that are not revoked (version 0)', async () => {
    const impl = await make();
    const org = newOrganization();
    const live = aKey(org, 1);
    const expiring = aKey(org, 2, { expiresAt: iso(T0 + 1000) });
    await impl.seedLegacyKey(live);
    await impl.seedLegacyKey(expiring);
    await impl.seedLegacyKey(aKey(org, 3, { revokedAt: iso(T0) }));
    expect(await impl.store.readKeySlots(org)).toEqual({ live: { [live.keyId]: null, [expiring.keyId]: expiring.expiresAt }, version: 0 });
    // The first write creates the slot item, once.
    const created = aKey(org, 4);
    await impl.store.createKey(created, { organizationId: org, read: 0, live: { [live.keyId]: null, [created.keyId]: null } });
    await expect(impl.store.createKey(aKey(org, 5), { organizationId: org, read: 0, live: {} })).rejects.toEqual(lostRace);
    expect((await impl.store.readKeySlots(org)).version).toBe(1);
  });

  it('records a key’s last use, and never creates a key for an unknown hash', async () => {
    const { store } = await make();
    const org = newOrganization();
    const key = aKey(org, 1);
    await store.createKey(key, { organizationId: org, read: 0, live: { [key.keyId]: null } });
    await store.recordKeyUse(key.hash, iso(T0 + 5000), { timeoutMs: 5000 });
    expect((await store.findKeyByHash(key.hash))?.lastUsedAt).toBe(iso(T0 + 5000));
    const unknown = hashApiKey(randomUUID());
    await expect(store.recordKeyUse(unknown, iso(T0))).rejects.toMatchObject({ name: 'ConditionalCheckFailedException' });
    expect(await store.findKeyByHash(unknown)).toBeUndefined();
  });
});

describe('the in-memory keys store’s faults', () => {
  it('throttles, fails a condition, or lets another writer win the slots first, once each', async () => {
    const store = new MemoryKeyStore();
    const org = newOrganization();
    const key = aKey(org, 1);
    store.faults.inject('createKey', 'throttle');
    await expect(store.createKey(key, { organizationId: org, read: 0, live: { [key.keyId]: null } })).rejects.toMatchObject({ name: 'ProvisionedThroughputExceededException' });
    store.faults.inject('createKey', 'failed-condition');
    await expect(store.createKey(key, { organizationId: org, read: 0, live: { [key.keyId]: null } })).rejects.toEqual(lostRace);
    store.faults.inject('createKey', 'lost-race');
    await expect(store.createKey(key, { organizationId: org, read: 0, live: { [key.keyId]: null } })).rejects.toEqual(lostRace);
    expect(await store.findKeyByHash(key.hash)).toBeUndefined();
    // Read again (the other writer's version), it succeeds.
    const slots = await store.readKeySlots(org);
    await store.createKey(key, { organizationId: org, read: slots.version, live: { ...slots.live, [key.keyId]: null } });
    expect(await store.findKeyByHash(key.hash)).toEqual(key);
  });
});
