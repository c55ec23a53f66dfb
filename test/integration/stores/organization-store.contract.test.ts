/**
 * The organization store's contract (functions/core/tenancy/organization-store.ts) on DynamoDB Local
 * and the in-memory twin: an organization and its index item as created, read back and listed
 * oldest first (organizations written before index items, listed by their own keys, too), the
 * duplicate policy on an existing organization only, the CAPTCHA provider and its secret's own item,
 * the inbox items of earlier versions read back.
 */
import { describe, it, expect } from '@jest/globals';
import { keys, type Organization } from '../../../functions/core/platform/model.js';
import { newId } from '../../../functions/core/platform/ids.js';
import { organizationStore } from '../../../functions/core/tenancy/organization-store.js';
import { implementations } from './support/implementations.js';

const anOrganization = (createdAt: string, extra: Partial<Organization> = {}): Organization =>
  ({ id: newId('org', 12), name: 'Store Contract', plan: 'free', billing: 'none', walletMicros: 0, createdAt, ...extra });

describe.each(implementations)('the organization store on %s', (_name, implementation) => {
  it('creates an organization with its index item, reads it back, and refuses its id a second time', async () => {
    const impl = await implementation();
    const store = organizationStore(impl.deps);
    const org = anOrganization('2030-01-15T12:00:00.000Z', { billing: 'prepaid', walletMicros: 5_000, rateLimitPerMinute: 120 });
    await store.createOrganization(org);
    expect(await store.getOrganization(org.id)).toEqual(org);
    expect(await impl.read('organizations', keys.org(org.id))).toEqual({ ...keys.org(org.id), entity: 'organization', ...org });
    expect(await impl.read('organizations', keys.orgIndexItem(org.id))).toEqual({ ...keys.orgIndexItem(org.id), ...keys.orgIndex(org.createdAt, org.id), entity: 'organization_index', id: org.id });
    await expect(store.createOrganization(org)).rejects.toThrow();
    expect(await store.getOrganization('org_missing')).toBeUndefined();
  });

  it('lists organizations oldest first, including one written before index items (its own index keys)', async () => {
    const impl = await implementation();
    const store = organizationStore(impl.deps);
    // Far in the future, so the suite's other organizations list before these.
    const [a, b] = [anOrganization('2999-01-01T00:00:00.000Z'), anOrganization('2999-01-03T00:00:00.000Z')];
    const legacy = anOrganization('2999-01-02T00:00:00.000Z');
    await store.createOrganization(b);
    await store.createOrganization(a);
    await impl.given('organizations', { ...keys.org(legacy.id), ...keys.orgIndex(legacy.createdAt, legacy.id), entity: 'organization', ...legacy });
    const listed = (await store.listOrganizations()).filter((o) => [a.id, b.id, legacy.id].includes(o.id));
    expect(listed.map((o) => o.id)).toEqual([a.id, legacy.id, b.id]);
  });

  it('sets the duplicate policy of an existing organization only', async () => {
    const impl = await implementation();
    const store = organizationStore(impl.deps);
    const org = anOrganization('2030-01-15T12:00:00.000Z');
    await store.createOrganization(org);
    expect(await store.setDuplicatePolicy(org.id, 'merge')).toBe(true);
    expect((await store.getOrganization(org.id))?.duplicatePolicy).toBe('merge');
    expect(await store.setDuplicatePolicy('org_missing', 'merge')).toBe(false);
    expect(await impl.read('organizations', keys.org('org_missing'))).toBeUndefined();
  });

  it('keeps the CAPTCHA provider on the organization and its secret on an item of its own, removed with `none`', async () => {
    const impl = await implementation();
    const store = organizationStore(impl.deps);
    const org = anOrganization('2030-01-15T12:00:00.000Z');
    await store.createOrganization(org);
    await store.setCaptcha(org.id, { provider: 'turnstile', secret: 'ts-secret' });
    expect(await store.getOrganization(org.id)).toEqual({ ...org, captchaProvider: 'turnstile' });
    expect(await store.captchaSecret(org.id)).toBe('ts-secret');
    expect(await impl.read('organizations', { pk: keys.org(org.id).pk, sk: 'CAPTCHA' })).toEqual({ pk: keys.org(org.id).pk, sk: 'CAPTCHA', entity: 'captcha_secret', secret: 'ts-secret' });
    expect(await impl.read('organizations', keys.org(org.id))).not.toHaveProperty('secret');
    await store.setCaptcha(org.id, { provider: 'none' });
    expect(await store.getOrganization(org.id)).toEqual(org);
    expect(await store.captchaSecret(org.id)).toBeUndefined();
    await expect(store.setCaptcha('org_missing', { provider: 'hcaptcha', secret: 'x' })).rejects.toThrow();
  });

  it('reads the organization\'s inbox items of earlier versions (`NOTIFICATION#`), in sort-key order, its own only', async () => {
    const impl = await implementation();
    const store = organizationStore(impl.deps);
    const [org, other] = [anOrganization('2030-01-15T12:00:00.000Z'), anOrganization('2030-01-15T12:00:00.000Z')];
    await store.createOrganization(org);
    expect(await store.legacyNotifications(org.id)).toEqual([]);
    const legacy = (orgId: string, n: number, extra: Record<string, unknown> = {}) => ({
      pk: keys.org(orgId).pk, sk: `${keys.notificationPrefix}2026-10-0${n}T00:00:00.000Z#ntf_${n}`, entity: 'notification',
      id: `ntf_${n}`, type: 'lead.created', title: `Lead ${n}`, createdAt: `2026-10-0${n}T00:00:00.000Z`, ...extra,
    });
    await impl.given('organizations', legacy(org.id, 2, { clientId: 'cli_2' }));
    await impl.given('organizations', legacy(org.id, 1));
    await impl.given('organizations', legacy(other.id, 3));
    expect(await store.legacyNotifications(org.id)).toEqual([
      { id: 'ntf_1', type: 'lead.created', title: 'Lead 1', createdAt: '2026-10-01T00:00:00.000Z' },
      { id: 'ntf_2', type: 'lead.created', title: 'Lead 2', clientId: 'cli_2', createdAt: '2026-10-02T00:00:00.000Z' },
    ]);
  });
});
