/**
 * A key's lifecycle on the keys store's twin, on a clock the test moves (docs/api-keys.md):
 * rotation with a grace (the old key works until it ends, then is refused as expired), a second
 * rotation never extending the first one's grace, revocation taking effect within
 * keyRevocationSeconds in a warm container, the bound on live keys, lost races retried, and what
 * authentication caches. Moved here from test/integration/intake/authentication.test.ts (see its header).
 */
import { describe, it, expect } from '@jest/globals';
import { createApiKey, listApiKeys, MAX_LIVE_KEYS, revokeApiKey, rotateApiKey } from '../../../functions/core/tenancy/api-keys.js';
import { authenticate, revocationSeconds } from '../../../functions/core/tenancy/authenticate.js';
import { givenTenancy, type Tenancy } from '../../support/tenancy-deps.js';

const HOUR = 3_600_000;
const withKey = (key: string) => ({ 'X-API-Key': key });

async function givenKey(t: Tenancy, options: Parameters<typeof createApiKey>[3] = {}) {
  const org = t.givenOrganization();
  const { key, record } = await createApiKey(t.deps, org.id, 'website', options);
  return { org, key, record };
}

describe('rotating a key', () => {
  it('keeps the old key working through its grace and refuses it, as expired, after', async () => {
    const t = givenTenancy();
    const { org, key, record } = await givenKey(t);
    const rotated = await rotateApiKey(t.deps, org.id, record.keyId, { graceHours: 3 });
    expect(rotated.previous).toMatchObject({ keyId: record.keyId, status: 'expiring', expiresAt: new Date(t.now.ms + 3 * HOUR).toISOString() });
    await expect(authenticate(t.deps, withKey(key))).resolves.toMatchObject({ key: { keyId: record.keyId } });
    await expect(authenticate(t.deps, withKey(rotated.key))).resolves.toMatchObject({ key: { keyId: rotated.record.keyId } });
    t.now.ms += 3 * HOUR - 1;
    await expect(authenticate(t.deps, withKey(key))).resolves.toMatchObject({ key: { keyId: record.keyId } });
    t.now.ms += 1;
    await expect(authenticate(t.deps, withKey(key))).rejects.toMatchObject({ status: 401, reason: 'key-expired', keyId: record.keyId, organizationId: org.id });
    await expect(authenticate(t.deps, withKey(rotated.key))).resolves.toMatchObject({ key: { keyId: rotated.record.keyId } });
    expect((await listApiKeys(t.deps, org.id)).map((k) => [k.keyId, k.status])).toEqual([[record.keyId, 'expired'], [rotated.record.keyId, 'active']]);
  });

  it('never lets a second rotation extend the grace the first one set', async () => {
    const t = givenTenancy();
    const { org, key, record } = await givenKey(t);
    const firstEnd = new Date(t.now.ms + 24 * HOUR).toISOString();
    await rotateApiKey(t.deps, org.id, record.keyId, { graceHours: 24 });
    t.now.ms += HOUR;
    // Rotated again, with a longer grace: the old key still ends when the first rotation said.
    const second = await rotateApiKey(t.deps, org.id, record.keyId, { graceHours: 48 });
    expect(second.previous.expiresAt).toBe(firstEnd);
    expect((await t.keys.findKeyByHash(record.hash))?.expiresAt).toBe(firstEnd);
    expect((await listApiKeys(t.deps, org.id)).find((k) => k.keyId === record.keyId)?.expiresAt).toBe(firstEnd);
    t.now.ms = Date.parse(firstEnd);
    await expect(authenticate(t.deps, withKey(key))).rejects.toMatchObject({ status: 401, reason: 'key-expired' });
  });

  it('shortens the grace when a later rotation asks for less, and without grace revokes at once', async () => {
    const t = givenTenancy();
    const { org, key, record } = await givenKey(t);
    await rotateApiKey(t.deps, org.id, record.keyId, { graceHours: 24 });
    const shorter = await rotateApiKey(t.deps, org.id, record.keyId, { graceHours: 1 });
    expect(shorter.previous.expiresAt).toBe(new Date(t.now.ms + HOUR).toISOString());
    const none = await rotateApiKey(t.deps, org.id, shorter.record.keyId, { graceHours: 0 });
    expect(none.previous).toMatchObject({ status: 'revoked', revokedAt: new Date(t.now.ms).toISOString() });
    await expect(authenticate(t.deps, withKey(key))).resolves.toBeDefined();
    await expect(authenticate(t.deps, withKey(none.key))).resolves.toBeDefined();
    // A revoked key cannot be rotated.
    await expect(rotateApiKey(t.deps, org.id, shorter.record.keyId)).rejects.toMatchObject({ status: 422 });
  });

  it('keeps a publishable key’s policy on its replacement', async () => {
    const t = givenTenancy();
    const { org, record } = await givenKey(t, { kind: 'publishable', origins: ['https://shop.example'], dailyCap: 40, perIpLimit: 2, honeypotField: 'url' });
    const rotated = await rotateApiKey(t.deps, org.id, record.keyId);
    expect(rotated.key.startsWith('crm_pub_')).toBe(true);
    await expect(authenticate(t.deps, withKey(rotated.key), { allowPublishable: true })).resolves.toMatchObject({
      key: { kind: 'publishable', publishable: { origins: ['https://shop.example'], dailyCap: 40, perIpLimit: 2, honeypotField: 'url' } },
    });
  });
});

describe('revoking a key', () => {
  it('takes effect within keyRevocationSeconds in a warm container, however long keyCacheTtlSeconds is', async () => {
    const t = givenTenancy({ config: { keyCacheTtlSeconds: 30, keyRevocationSeconds: 5 } });
    expect(revocationSeconds(t.deps.config)).toBe(5);
    const { org, key, record } = await givenKey(t);
    await authenticate(t.deps, withKey(key)); // cached in this container
    await revokeApiKey(t.deps, org.id, record.keyId);
    t.now.ms += 4_999;
    // Still the cached lookup: the container has not read the key again yet.
    await expect(authenticate(t.deps, withKey(key))).resolves.toMatchObject({ key: { keyId: record.keyId } });
    t.now.ms += 1;
    await expect(authenticate(t.deps, withKey(key))).rejects.toMatchObject({ status: 401, reason: 'key-revoked', message: 'The API key has been revoked.' });
  });

  it('refuses a key revoked during its rotation grace, though its expiry is hours away', async () => {
    const t = givenTenancy();
    const { org, key, record } = await givenKey(t);
    await rotateApiKey(t.deps, org.id, record.keyId, { graceHours: 24 });
    const revoked = await revokeApiKey(t.deps, org.id, record.keyId);
    expect(revoked).toMatchObject({ status: 'revoked', expiresAt: new Date(t.now.ms + 24 * HOUR).toISOString() });
    await expect(authenticate(t.deps, withKey(key))).rejects.toMatchObject({ status: 401, reason: 'key-revoked' });
    // Revoking again answers the same revocation and writes nothing.
    const slots = await t.keys.readKeySlots(org.id);
    expect(await revokeApiKey(t.deps, org.id, record.keyId)).toEqual(revoked);
    expect(await t.keys.readKeySlots(org.id)).toEqual(slots);
  });

  it('gives the slot back: a full organization may create a key again', async () => {
    const t = givenTenancy();
    const org = t.givenOrganization();
    const made = [];
    for (let i = 0; i < MAX_LIVE_KEYS; i++) made.push(await createApiKey(t.deps, org.id, `key ${i}`));
    await expect(createApiKey(t.deps, org.id, 'one more')).rejects.toMatchObject({ status: 422 });
    // A rotation with grace needs a slot too; without grace it always works.
    await expect(rotateApiKey(t.deps, org.id, made[0].record.keyId, { graceHours: 1 })).rejects.toMatchObject({ status: 422 });
    await rotateApiKey(t.deps, org.id, made[0].record.keyId, { graceHours: 0 });
    await revokeApiKey(t.deps, org.id, made[1].record.keyId);
    await expect(createApiKey(t.deps, org.id, 'one more')).resolves.toBeDefined();
  });

  it('frees an expired key’s slot without a write', async () => {
    const t = givenTenancy();
    const org = t.givenOrganization();
    const first = await createApiKey(t.deps, org.id, 'first');
    for (let i = 1; i < MAX_LIVE_KEYS - 1; i++) await createApiKey(t.deps, org.id, `key ${i}`);
    await rotateApiKey(t.deps, org.id, first.record.keyId, { graceHours: 1 }); // 25 live: the old one in its grace
    await expect(createApiKey(t.deps, org.id, 'one more')).rejects.toMatchObject({ status: 422 });
    t.now.ms += HOUR;
    await expect(createApiKey(t.deps, org.id, 'one more')).resolves.toBeDefined();
  });
});

describe('concurrent key writes', () => {
  it('reads again and succeeds after losing a race for the slots or meeting a failed condition', async () => {
    const t = givenTenancy();
    const { org, record } = await givenKey(t);
    t.keys.faults.inject('createKey', 'lost-race');
    t.keys.faults.inject('rotateKey', 'failed-condition', 2);
    await expect(createApiKey(t.deps, org.id, 'second')).resolves.toBeDefined();
    await expect(rotateApiKey(t.deps, org.id, record.keyId)).resolves.toBeDefined();
    expect(t.keys.faults.pending).toBe(0);
    expect(await listApiKeys(t.deps, org.id)).toHaveLength(3);
  });

  it('lets two rotations of one key that race both succeed, each from a fresh read, neither extending the other', async () => {
    const t = givenTenancy();
    const { org, record } = await givenKey(t);
    const [a, b] = await Promise.all([
      rotateApiKey(t.deps, org.id, record.keyId, { graceHours: 2 }),
      rotateApiKey(t.deps, org.id, record.keyId, { graceHours: 10 }),
    ]);
    const ends = [a.previous.expiresAt, b.previous.expiresAt];
    expect((await t.keys.findKeyByHash(record.hash))?.expiresAt).toBe(new Date(t.now.ms + 2 * HOUR).toISOString());
    expect(ends).toContain(new Date(t.now.ms + 2 * HOUR).toISOString());
  });

  it(`lets 40 parallel creations leave exactly ${MAX_LIVE_KEYS} live keys, every answered key stored`, async () => {
    const t = givenTenancy();
    const org = t.givenOrganization();
    const results = await Promise.allSettled(Array.from({ length: 40 }, (_, i) => createApiKey(t.deps, org.id, `key ${i}`)));
    const made = results.filter((r) => r.status === 'fulfilled');
    expect(made).toHaveLength(MAX_LIVE_KEYS);
    expect(results.filter((r) => r.status === 'rejected').every((r) => (r.reason as { status?: number }).status === 422)).toBe(true);
    expect(await listApiKeys(t.deps, org.id)).toHaveLength(MAX_LIVE_KEYS);
  });

  it('makes the slots of an organization from before the slot item from its keys on its first write', async () => {
    const t = givenTenancy();
    const org = t.givenOrganization();
    for (let i = 0; i < MAX_LIVE_KEYS - 1; i++) {
      t.keys.seedKey({ keyId: `key_old${i}`, organizationId: org.id, name: `old ${i}`, hash: `hash${i}`, createdAt: new Date(t.now.ms).toISOString(), kind: 'secret' });
    }
    t.keys.seedKey({ keyId: 'key_gone', organizationId: org.id, name: 'gone', hash: 'hash_gone', createdAt: new Date(t.now.ms).toISOString(), kind: 'secret', revokedAt: new Date(t.now.ms).toISOString() });
    await expect(createApiKey(t.deps, org.id, 'the 25th')).resolves.toBeDefined();
    await expect(createApiKey(t.deps, org.id, 'the 26th')).rejects.toMatchObject({ status: 422 });
    expect(Object.keys((await t.keys.readKeySlots(org.id)).live)).toHaveLength(MAX_LIVE_KEYS);
  });

  it('answers a throttled store with its error, writing nothing', async () => {
    const t = givenTenancy();
    const org = t.givenOrganization();
    t.keys.faults.inject('createKey', 'throttle');
    await expect(createApiKey(t.deps, org.id, 'k')).rejects.toMatchObject({ name: 'ProvisionedThroughputExceededException' });
    expect(await listApiKeys(t.deps, org.id)).toEqual([]);
  });
});

describe('what authentication keeps and writes', () => {
  it('keeps a real key cached through a flood of unknown keys', async () => {
    const t = givenTenancy({ config: { keyCacheTtlSeconds: 600, keyRevocationSeconds: 600 } });
    const { key, record } = await givenKey(t);
    const lookups: string[] = [];
    const find = t.keys.findKeyByHash.bind(t.keys);
    t.keys.findKeyByHash = async (hash, options) => { lookups.push(hash); return find(hash, options); };
    await authenticate(t.deps, withKey(key));
    let refused = 0;
    for (let i = 0; i < 11_000; i++) {
      await authenticate(t.deps, withKey(`crm_live_${String(i).padStart(32, '0')}`)).catch((e: { status?: number }) => { if (e.status === 401) refused += 1; });
    }
    expect(refused).toBe(11_000);
    await authenticate(t.deps, withKey(key));
    expect(lookups.filter((h) => h === record.hash)).toHaveLength(1);
  });

  it('records the key’s last use before it answers, once a minute, and a failed write never fails the request', async () => {
    const t = givenTenancy();
    const { key, record } = await givenKey(t);
    let finished = false;
    const write = t.keys.recordKeyUse.bind(t.keys);
    t.keys.recordKeyUse = async (...args) => { await new Promise((r) => setTimeout(r, 50)); await write(...args); finished = true; };
    await authenticate(t.deps, withKey(key));
    expect(finished).toBe(true);
    expect((await t.keys.findKeyByHash(record.hash))?.lastUsedAt).toBe(new Date(t.now.ms).toISOString());
    t.now.ms += 30_000;
    await authenticate(t.deps, withKey(key));
    expect((await t.keys.findKeyByHash(record.hash))?.lastUsedAt).not.toBe(new Date(t.now.ms).toISOString());
    t.now.ms += 30_000;
    t.keys.faults.inject('recordKeyUse', 'throttle');
    await expect(authenticate(t.deps, withKey(key))).resolves.toBeDefined();
  });

  it('refuses an organization whose plan is not allowed with 403', async () => {
    const t = givenTenancy();
    const org = t.givenOrganization({ plan: 'free' });
    const { key } = await createApiKey(t.deps, org.id, 'k');
    const restricted = { ...t.deps, config: { ...t.deps.config, allowedPlans: ['pro', 'enterprise'] } };
    await expect(authenticate(restricted, withKey(key))).rejects.toMatchObject({ status: 403, message: expect.stringContaining('pro, enterprise') });
    await expect(authenticate(t.deps, withKey(key))).resolves.toMatchObject({ organization: { id: org.id } });
  });
});
