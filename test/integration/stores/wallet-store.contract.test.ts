/**
 * The wallet store's contract (functions/core/tenancy/wallet-store.ts): the same operations on
 * DynamoDB Local and on the in-memory twin leave the same items and give the same answers. It pins
 * the debit's conditions (the wallet's boundary, the open day), the double-submit guard's slot (a
 * claim, its repeat within 10 minutes, after them, the request's own retry, adoption, release), the
 * day's roll-over (and the older organization's index moved with it), refunds, and the usage of a
 * range of days (closed days' items and the open day's counters).
 */
import { describe, it, expect } from '@jest/globals';
import { keys } from '../../../functions/core/platform/model.js';
import { createOrganization } from '../../../functions/core/tenancy/organizations.js';
import { walletStore, type WalletStore } from '../../../functions/core/tenancy/wallet-store.js';
import { DOUBLE_SUBMIT_MS, type GuardClaim } from '../../../functions/core/tenancy/double-submit.js';
import { implementations, type Implementation } from './support/implementations.js';

const PRICE = 3_000;
const DAY = '2030-01-15';
const guard = { hash: 'abcdef0123456789abcd', slot: 3 };
const claim = (token: string, at: number, clientId = token): GuardClaim => ({ guard, clientId, token, at });

describe.each(implementations)('the wallet store on %s', (_name, implementation) => {
  async function given(walletMicros: number, billing: 'prepaid' | 'none' = 'prepaid'): Promise<{ impl: Implementation; wallet: WalletStore; orgId: string; item: () => Promise<Record<string, unknown> | undefined> }> {
    const impl = await implementation();
    const org = await createOrganization(impl.deps, { name: 'Wallet Contract', billing, walletMicros });
    return { impl, wallet: walletStore(impl.deps), orgId: org.id, item: () => impl.read('organizations', keys.org(org.id)) };
  }

  describe('debitWallet', () => {
    it('takes exactly the price from a wallet holding it (opening the day first) and leaves it at 0; then refuses as short', async () => {
      const { wallet, orgId, item } = await given(PRICE);
      expect(await wallet.debitWallet(orgId, { price: PRICE, day: DAY })).toEqual({ day: DAY });
      expect(await item()).toMatchObject({ walletMicros: 0, usageDay: DAY, usageCalls: 1, usageBilledMicros: PRICE });
      expect(await wallet.debitWallet(orgId, { price: PRICE, day: DAY })).toEqual({ short: true });
      expect(await item()).toMatchObject({ walletMicros: 0, usageCalls: 1, usageBilledMicros: PRICE });
    });

    it('refuses a wallet one micro-dollar short, writing nothing', async () => {
      const { wallet, orgId, item } = await given(2 * PRICE - 1);
      await wallet.debitWallet(orgId, { price: PRICE, day: DAY });
      const before = await item();
      expect(await wallet.debitWallet(orgId, { price: PRICE, day: DAY })).toEqual({ short: true });
      expect(await item()).toEqual(before);
    });

    it('rolls the day over: the closed day\'s counts move to its usage item, the new day counts from 0', async () => {
      const { impl, wallet, orgId, item } = await given(100_000);
      await wallet.debitWallet(orgId, { price: PRICE, day: '2030-01-15' });
      await wallet.debitWallet(orgId, { price: PRICE, day: '2030-01-15' });
      await wallet.debitWallet(orgId, { price: PRICE, day: '2030-01-16' });
      expect(await item()).toMatchObject({ walletMicros: 100_000 - 3 * PRICE, usageDay: '2030-01-16', usageCalls: 1, usageBilledMicros: PRICE });
      expect(await impl.read('organizations', keys.usage(orgId, '2030-01-15'))).toEqual({ ...keys.usage(orgId, '2030-01-15'), entity: 'usage', calls: 2, billed_micros: 2 * PRICE });
      expect(await wallet.dailyUsage(orgId, '2030-01-15')).toEqual({ calls: 2, billedMicros: 2 * PRICE });
      expect(await wallet.dailyUsage(orgId, '2030-01-16')).toEqual({ calls: 1, billedMicros: PRICE });
      // A container whose clock is behind counts on the later day already open, rather than reopen its own.
      expect(await wallet.debitWallet(orgId, { price: PRICE, day: '2030-01-15' })).toEqual({ day: '2030-01-16' });
      expect(await wallet.dailyUsage(orgId, '2030-01-16')).toEqual({ calls: 2, billedMicros: 2 * PRICE });
    });

    it('moves an older organization\'s index keys off its item at the roll-over, onto its index item', async () => {
      const { impl, wallet, orgId, item } = await given(100_000);
      const old = { ...(await item())!, ...keys.orgIndex('2020-01-01T00:00:00.000Z', orgId), createdAt: '2020-01-01T00:00:00.000Z' } as unknown as Record<string, unknown> & { pk: string; sk: string };
      await impl.given('organizations', old);
      await wallet.debitWallet(orgId, { price: PRICE, day: DAY });
      const after = (await item())!;
      expect(after).not.toHaveProperty('gsi1pk');
      expect(after).not.toHaveProperty('gsi1sk');
      expect(await impl.read('organizations', keys.orgIndexItem(orgId))).toMatchObject({ ...keys.orgIndex('2020-01-01T00:00:00.000Z', orgId), entity: 'organization_index', id: orgId });
    });
  });

  describe('the double-submit guard on a bill', () => {
    it('claims the slot; a repeat within 10 minutes is answered as the first (not billed); after them it is a new claim', async () => {
      const { impl, wallet, orgId, item } = await given(100_000);
      const t = impl.clock.now();
      expect(await wallet.debitWallet(orgId, { price: PRICE, day: DAY, claim: claim('cli_first', t) })).toEqual({ day: DAY });
      expect(await item()).toMatchObject({ dh3: guard.hash, dc3: 'cli_first', dt3: t, dr3: 'cli_first' });
      expect(await wallet.debitWallet(orgId, { price: PRICE, day: DAY, claim: claim('cli_second', t + DOUBLE_SUBMIT_MS) })).toEqual({ duplicateOf: { clientId: 'cli_first', token: 'cli_first' } });
      expect(await item()).toMatchObject({ walletMicros: 100_000 - PRICE, usageCalls: 1 });
      expect(await wallet.debitWallet(orgId, { price: PRICE, day: DAY, claim: claim('cli_third', t + DOUBLE_SUBMIT_MS + 1) })).toEqual({ day: DAY });
      expect(await item()).toMatchObject({ walletMicros: 100_000 - 2 * PRICE, dc3: 'cli_third', dr3: 'cli_third' });
    });

    it('answers the request\'s own retried bill (its token) as billed, debiting once; a merge\'s claim names the client it merges into', async () => {
      const { impl, wallet, orgId, item } = await given(100_000);
      const t = impl.clock.now();
      const merging = claim('cli_fresh1', t, 'cli_earlier');
      await wallet.debitWallet(orgId, { price: PRICE, day: DAY, claim: merging });
      expect(await wallet.debitWallet(orgId, { price: PRICE, day: DAY, claim: merging })).toEqual({ day: DAY });
      expect(await item()).toMatchObject({ walletMicros: 100_000 - PRICE, usageCalls: 1, dc3: 'cli_earlier', dr3: 'cli_fresh1' });
      // Another identical merge is a repeat of the first, not its own retry.
      expect(await wallet.debitWallet(orgId, { price: PRICE, day: DAY, claim: claim('cli_fresh2', t, 'cli_earlier') })).toEqual({ duplicateOf: { clientId: 'cli_earlier', token: 'cli_fresh1' } });
    });

    it('postpaid: counts on the day\'s usage item with the same guard', async () => {
      const { impl, wallet, orgId } = await given(0, 'none');
      const t = impl.clock.now();
      expect(await wallet.countUsage(orgId, { day: DAY, claim: claim('cli_a', t) })).toEqual({ day: DAY });
      expect(await wallet.countUsage(orgId, { day: DAY, claim: claim('cli_a', t) })).toEqual({ day: DAY });
      expect(await wallet.countUsage(orgId, { day: DAY, claim: claim('cli_b', t + 1) })).toEqual({ duplicateOf: { clientId: 'cli_a', token: 'cli_a' } });
      expect(await wallet.countUsage(orgId, { day: DAY })).toEqual({ day: DAY });
      expect(await impl.read('organizations', keys.usage(orgId, DAY))).toMatchObject({ entity: 'usage', calls: 2, billed_micros: 0, dr3: 'cli_a' });
    });
  });

  describe('adoptClaim', () => {
    it.each([[PRICE], [0]])('hands a held claim to the caller\'s retry (price %d); its own retry is adopted too, another retry is told `other`', async (price) => {
      const { impl, wallet, orgId } = await given(100_000, price ? 'prepaid' : 'none');
      const t = impl.clock.now();
      if (price) await wallet.debitWallet(orgId, { price, day: DAY, claim: claim('cli_dead', t) });
      else await wallet.countUsage(orgId, { day: DAY, claim: claim('cli_dead', t) });
      const adoption = { prepaid: price > 0, day: DAY, guard, token: 'cli_dead', by: 'cli_retry1' };
      expect(await wallet.adoptClaim(orgId, adoption)).toBe('adopted');
      expect(await wallet.adoptClaim(orgId, adoption)).toBe('adopted');
      expect(await wallet.adoptClaim(orgId, { ...adoption, by: 'cli_retry2' })).toBe('other');
      expect(await impl.read('organizations', price ? keys.org(orgId) : keys.usage(orgId, DAY))).toMatchObject({ dr3: 'cli_dead+cli_retry1' });
      // The dead request's late refund finds its claim adopted: nothing given back.
      expect(await wallet.refundCall(orgId, { price, day: DAY, claim: { guard, token: 'cli_dead' } })).toEqual({ outcome: 'adopted' });
      expect(await wallet.dailyUsage(orgId, DAY)).toEqual({ calls: 1, billedMicros: price });
    });

    it('answers `released` for a claim already refunded, or never made', async () => {
      const { impl, wallet, orgId } = await given(100_000);
      await wallet.debitWallet(orgId, { price: PRICE, day: DAY, claim: claim('cli_dead', impl.clock.now()) });
      await wallet.refundCall(orgId, { price: PRICE, day: DAY, claim: { guard, token: 'cli_dead' } });
      expect(await wallet.adoptClaim(orgId, { prepaid: true, day: DAY, guard, token: 'cli_dead', by: 'cli_retry' })).toBe('released');
      expect(await wallet.adoptClaim(orgId, { prepaid: false, day: '2030-02-01', guard, token: 'cli_none', by: 'cli_retry' })).toBe('released');
    });
  });

  describe('refundCall', () => {
    it('credits the wallet, takes the count back and releases the claim once: the SDK\'s retry of it is `released`, crediting nothing', async () => {
      const { impl, wallet, orgId, item } = await given(10_000);
      await wallet.debitWallet(orgId, { price: PRICE, day: DAY, claim: claim('cli_lost', impl.clock.now()) });
      expect(await wallet.refundCall(orgId, { price: PRICE, day: DAY, claim: { guard, token: 'cli_lost' } })).toEqual({ outcome: 'refunded' });
      const after = (await item())!;
      expect(after).toMatchObject({ walletMicros: 10_000, usageCalls: 0, usageBilledMicros: 0 });
      for (const field of ['dh3', 'dc3', 'dt3', 'dr3']) expect(after).not.toHaveProperty(field);
      expect(await wallet.refundCall(orgId, { price: PRICE, day: DAY, claim: { guard, token: 'cli_lost' } })).toEqual({ outcome: 'released' });
      expect((await item())!.walletMicros).toBe(10_000);
    });

    it('refunds without the slot when another submission took it', async () => {
      const { impl, wallet, orgId, item } = await given(10_000);
      const t = impl.clock.now();
      await wallet.debitWallet(orgId, { price: PRICE, day: DAY, claim: claim('cli_one', t) });
      await wallet.debitWallet(orgId, { price: PRICE, day: DAY, claim: { guard: { ...guard, hash: 'another-submission' }, clientId: 'cli_two', token: 'cli_two', at: t } });
      expect(await wallet.refundCall(orgId, { price: PRICE, day: DAY, claim: { guard, token: 'cli_one' } })).toEqual({ outcome: 'refunded' });
      expect(await item()).toMatchObject({ walletMicros: 10_000 - PRICE, usageCalls: 1, dr3: 'cli_two' });
    });

    it('refunds into the closed day\'s usage item when the day rolled over since the debit', async () => {
      const { wallet, orgId, item } = await given(100_000);
      await wallet.debitWallet(orgId, { price: PRICE, day: '2030-01-15' });
      await wallet.debitWallet(orgId, { price: PRICE, day: '2030-01-15' });
      await wallet.debitWallet(orgId, { price: PRICE, day: '2030-01-16' });
      expect(await wallet.refundCall(orgId, { price: PRICE, day: '2030-01-15' })).toEqual({ outcome: 'refunded' });
      expect(await wallet.dailyUsage(orgId, '2030-01-15')).toEqual({ calls: 1, billedMicros: PRICE });
      expect(await wallet.dailyUsage(orgId, '2030-01-16')).toEqual({ calls: 1, billedMicros: PRICE });
      expect((await item())!.walletMicros).toBe(100_000 - 2 * PRICE);
    });

    it('postpaid: takes the day\'s count back', async () => {
      const { wallet, orgId } = await given(0, 'none');
      await wallet.countUsage(orgId, { day: DAY });
      await wallet.countUsage(orgId, { day: DAY });
      await wallet.refundCall(orgId, { price: 0, day: DAY });
      expect(await wallet.dailyUsage(orgId, DAY)).toEqual({ calls: 1, billedMicros: 0 });
    });
  });

  describe('usageByDay', () => {
    it('gives each day of the range with calls: closed days\' items and the open day\'s counters (added to its item\'s), by day', async () => {
      const { impl, wallet, orgId } = await given(100_000);
      expect(await wallet.usageByDay(orgId, '2030-01-01', '2030-01-31')).toEqual([]);
      await wallet.debitWallet(orgId, { price: PRICE, day: '2030-01-14' });
      await wallet.debitWallet(orgId, { price: PRICE, day: '2030-01-14' });
      await wallet.debitWallet(orgId, { price: PRICE, day: '2030-01-15' });
      // A count owed to the open day's item (a refund's), and days outside the range.
      await impl.given('organizations', { ...keys.usage(orgId, '2030-01-15'), entity: 'usage', calls: 1, billed_micros: 500 });
      await impl.given('organizations', { ...keys.usage(orgId, '2029-12-31'), entity: 'usage', calls: 7, billed_micros: 7 });
      await impl.given('organizations', { ...keys.usage(orgId, '2030-02-01'), entity: 'usage', calls: 9, billed_micros: 9 });
      expect(await wallet.usageByDay(orgId, '2030-01-01', '2030-01-31')).toEqual([
        { day: '2030-01-14', calls: 2, billedMicros: 2 * PRICE },
        { day: '2030-01-15', calls: 2, billedMicros: PRICE + 500 },
      ]);
      // The open day outside the range is left out; both bounds are included.
      expect(await wallet.usageByDay(orgId, '2029-12-31', '2030-01-14')).toEqual([
        { day: '2029-12-31', calls: 7, billedMicros: 7 },
        { day: '2030-01-14', calls: 2, billedMicros: 2 * PRICE },
      ]);
    });

    it('gives a postpaid organization\'s days from their usage items', async () => {
      const { wallet, orgId } = await given(0, 'none');
      await wallet.countUsage(orgId, { day: '2030-01-15' });
      await wallet.countUsage(orgId, { day: '2030-01-15' });
      expect(await wallet.usageByDay(orgId, '2030-01-01', '2030-01-31')).toEqual([{ day: '2030-01-15', calls: 2, billedMicros: 0 }]);
    });
  });
});
