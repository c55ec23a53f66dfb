/**
 * Billing a lead (docs/leads.md "Billing"; docs/decisions.md "Lead write cost") on the in-memory
 * stores, with a clock the test controls: the prepaid wallet's boundary, the refund of a call whose
 * client write failed, the day's roll-over, the debit that meets the roll-over's transaction, and the
 * adoption of the bill of a request that died before writing its client.
 */
import { describe, it, expect } from '@jest/globals';
import { failure, transactionConflict } from '../../support/stores/faults.js';
import { givenOrganization, metricsOf, priceOf } from './support/given.js';

const prepaid = (walletMicros: number, now?: string) => givenOrganization({ billing: 'prepaid', walletMicros, now });
const PRICE = 3_000; // the default price per call (config.pricePerCallMicros)

describe('the prepaid wallet boundary', () => {
  it('a wallet holding exactly the price pays for one call and is left at 0; the next call is a 402 that writes nothing', async () => {
    const org = await prepaid(PRICE);
    expect(priceOf(org.deps)).toBe(PRICE);
    expect((await org.send({ name: 'Exactly Paid' })).kind).toBe('created');
    const paid = await org.holds();
    expect(paid).toMatchObject({ wallet: 0, usage: { calls: 1, billedMicros: PRICE } });
    expect(paid.clients).toHaveLength(1);
    expect(paid.clients[0].notification).toMatchObject({ type: 'lead.created', title: 'New lead: Exactly Paid' });
    await expect(org.send({ name: 'Nothing Left' })).rejects.toMatchObject({ status: 402 });
    expect(await org.holds()).toEqual(paid);
  });

  it('a wallet one micro-dollar short refuses the call with 402, debits nothing, writes nothing (a new organization, and after a paid call)', async () => {
    const fresh = await prepaid(PRICE - 1);
    await expect(fresh.send({ name: 'First And Unpaid' })).rejects.toMatchObject({ status: 402 });
    expect(await fresh.holds()).toEqual({ clients: [], wallet: PRICE - 1, usage: { calls: 0, billedMicros: 0 } });

    const used = await prepaid(2 * PRICE - 1);
    await used.send({ name: 'Paid In Full' });
    const before = await used.holds();
    await expect(used.send({ name: 'Partly Covered' })).rejects.toMatchObject({ status: 402 });
    expect(await used.holds()).toEqual(before);
    expect(before.wallet).toBe(PRICE - 1);
  });

  it('20 leads arriving together on a wallet covering exactly 15: 15 created, 5 refused with 402, the wallet at 0', async () => {
    const org = await prepaid(15 * PRICE);
    const answers = await Promise.allSettled(Array.from({ length: 20 }, (_, i) => org.send({ name: `Together ${i}` })));
    expect(answers.filter((a) => a.status === 'fulfilled')).toHaveLength(15);
    expect(answers.filter((a) => a.status === 'rejected').map((a) => (a as PromiseRejectedResult).reason.status)).toEqual(Array(5).fill(402));
    const after = await org.holds();
    expect(after.clients).toHaveLength(15);
    expect(after).toMatchObject({ wallet: 0, usage: { calls: 15, billedMicros: 15 * PRICE } });
  });
});

describe('a lead whose client write fails after its bill', () => {
  it.each([['prepaid', PRICE], ['postpaid', 0]])('%s: is refunded (wallet and count given back, the claim released), and the caller\'s retry is a new lead billed once', async (_billing, price) => {
    const org = price ? await prepaid(10_000) : await givenOrganization();
    org.clients.faults.fail('putOnce', failure);
    const body = { name: 'Refunded Lead', email: 'refunded@example.com' };
    await expect(org.send(body)).rejects.toThrow('injected');
    expect(await org.holds()).toEqual({ clients: [], wallet: price ? 10_000 : 0, usage: { calls: 0, billedMicros: 0 } });
    const retry = await org.send(body);
    expect(retry.kind).toBe('created');
    expect(await org.holds()).toMatchObject({ wallet: price ? 10_000 - price : 0, usage: { calls: 1, billedMicros: price } });
  });

  it('is refunded when a merge fails after its debit', async () => {
    const org = await givenOrganization({ billing: 'prepaid', walletMicros: 10_000, duplicatePolicy: 'merge' });
    await org.send({ name: 'Mira Merge', email: 'mira@example.com' });
    org.clients.faults.fail('mergeOnce', failure);
    await expect(org.send({ name: 'Mira Merge', email: 'mira@example.com', notes: 'again' })).rejects.toThrow('injected');
    const after = await org.holds();
    expect(after).toMatchObject({ wallet: 7_000, usage: { calls: 1, billedMicros: PRICE } });
    expect(after.clients.map((c) => c.submission_count)).toEqual([1]);
  });

  it('is refunded into the closed day when the day rolled over between the debit and the failure', async () => {
    const org = await prepaid(100_000, '2030-03-01T23:59:50Z');
    await org.send({ name: 'Early Lead' });
    org.clock.set('2030-03-01T23:59:59Z');
    // The put fails only after another lead has opened the next day (closing this one).
    org.clients.faults.before('putOnce', async () => {
      org.clock.set('2030-03-02T00:00:01Z');
      await org.send({ name: 'Next Day' });
      throw failure();
    });
    await expect(org.send({ name: 'Late Lead' })).rejects.toThrow('injected');
    expect((await org.holds('2030-03-01')).usage).toEqual({ calls: 1, billedMicros: PRICE });
    const nextDay = await org.holds('2030-03-02');
    expect(nextDay.usage).toEqual({ calls: 1, billedMicros: PRICE });
    expect(nextDay.wallet).toBe(100_000 - 2 * PRICE);
    expect(nextDay.clients.map((c) => c.first_name).sort()).toEqual(['Early', 'Next']);
  });

  it('says so when the refund fails too: the wallet stays debited, LeadRefundFailed is counted', async () => {
    const org = await prepaid(10_000);
    org.clients.faults.fail('putOnce', failure);
    org.organizations.faults.fail('refundCall', failure, Infinity);
    const { error, counted } = await metricsOf(() => org.send({ name: 'Unrefunded Lead' }));
    expect(error).toMatchObject({ message: 'injected' });
    expect(counted('LeadRefundFailed')).toBe(1);
    expect(await org.holds()).toMatchObject({ clients: [], wallet: 7_000 });
  });

  it('across the roll-over, whose usage take-back fails: the wallet credited once, only the count logged as owed', async () => {
    const org = await prepaid(100_000, '2030-03-01T23:59:59Z');
    org.clients.faults.before('putOnce', async () => {
      org.clock.set('2030-03-02T00:00:01Z');
      await org.send({ name: 'Next Day' });
      throw failure();
    });
    org.organizations.faults.fail('refundUsage', failure);
    org.clock.set('2030-03-01T23:59:59Z');
    const { counted } = await metricsOf(() => org.send({ name: 'Late Lead' }));
    expect(counted('LeadUsageCountFailed')).toBe(1);
    expect(counted('LeadRefundFailed')).toBe(0);
    expect((await org.holds('2030-03-01')).usage).toEqual({ calls: 1, billedMicros: PRICE }); // owed: the refunded call still counted
    expect((await org.holds('2030-03-02')).wallet).toBe(100_000 - PRICE);
  });
});

describe('the day\'s usage', () => {
  it('rolls over: a prepaid day is closed into its usage item when the next day\'s first lead arrives', async () => {
    const org = await prepaid(100_000, '2030-05-01T10:00:00Z');
    await org.send({ name: 'Day One' });
    await org.send({ name: 'Day One Again' });
    org.clock.set('2030-05-02T08:00:00Z');
    await org.send({ name: 'Day Two' });
    expect((await org.holds('2030-05-01')).usage).toEqual({ calls: 2, billedMicros: 2 * PRICE });
    expect((await org.holds('2030-05-02')).usage).toEqual({ calls: 1, billedMicros: PRICE });
    expect(org.organizations.get({ pk: `ORG#${org.auth.organization.id}`, sk: 'USAGE#2030-05-01' })).toMatchObject({ calls: 2, billed_micros: 2 * PRICE, entity: 'usage' });
  });

  it('counts a postpaid day on its own usage item, billing nothing', async () => {
    const org = await givenOrganization({ now: '2030-05-01T10:00:00Z' });
    await org.send({ name: 'Counted' });
    expect((await org.holds()).usage).toEqual({ calls: 1, billedMicros: 0 });
  });
});

describe('a prepaid debit that meets the day roll-over\'s transaction', () => {
  it('is retried: created, the wallet debited once, each retry counted', async () => {
    const org = await prepaid(10_000);
    org.organizations.faults.fail('debitWallet', transactionConflict, 3);
    const { result, counted } = await metricsOf(() => org.send({ name: 'Contended Lead' }));
    expect(result?.kind).toBe('created');
    expect(counted('TransactionConflictRetries')).toBe(3);
    expect(await org.holds()).toMatchObject({ wallet: 7_000, usage: { calls: 1 } });
  });

  it('gives up after a bounded number of attempts with 503 and Retry-After, writing nothing', async () => {
    const org = await prepaid(10_000);
    org.organizations.faults.fail('debitWallet', transactionConflict, Infinity);
    await expect(org.send({ name: 'Never Through' })).rejects.toMatchObject({ status: 503, extra: { headers: { 'Retry-After': '1' } } });
    expect(org.organizations.faults.calls('debitWallet')).toBeLessThanOrEqual(10);
    expect(await org.holds()).toEqual({ clients: [], wallet: 10_000, usage: { calls: 0, billedMicros: 0 } });
  });
});

describe.each([['postpaid', 0], ['prepaid', PRICE]])('a %s lead whose request died between its bill and its client write', (_billing, price) => {
  /** The state a function that died after its bill leaves: billed, the claim held, no client. */
  async function givenDiedRequest() {
    const org = price ? await prepaid(10_000) : await givenOrganization();
    org.clients.faults.fail('putOnce', () => new Error('the process died'));
    org.organizations.faults.fail('refundCall', failure);
    const body = { name: 'Died Midway', email: 'died.midway@example.com' };
    await expect(org.send(body)).rejects.toThrow('the process died');
    expect((await org.holds()).usage).toEqual({ calls: 1, billedMicros: price });
    return { org, body };
  }

  it('is written under the id its bill claimed by the caller\'s identical retry, not billed again; a third is its double-submit, billed', async () => {
    const { org, body } = await givenDiedRequest();
    const { result: retry, counted } = await metricsOf(() => org.send(body));
    expect(counted('LeadsAdopted')).toBe(1);
    expect(retry?.kind).toBe('created');
    const adopted = (await org.holds()).clients;
    expect(adopted.map((c) => c.id)).toEqual([(retry as { client: { id: string } }).client.id]);
    expect(await org.holds()).toMatchObject({ wallet: price ? 10_000 - price : 0, usage: { calls: 1, billedMicros: price } });
    expect(await org.send(body)).toEqual({ kind: 'duplicate', clientId: adopted[0].id });
    expect((await org.holds()).usage).toEqual({ calls: 2, billedMicros: 2 * price });
  });

  it('retried twice at once: one retry adopts the bill (created), the other is its double-submit (billed)', async () => {
    const { org, body } = await givenDiedRequest();
    const outcomes = await Promise.all([org.send(body), org.send(body)]);
    expect(outcomes.map((o) => o.kind).sort()).toEqual(['created', 'duplicate']);
    const clients = (await org.holds()).clients;
    expect(clients).toHaveLength(1);
    expect(await org.holds()).toMatchObject({ usage: { calls: 2, billedMicros: 2 * price } });
  });

  it('is a new lead, billed, once the first request\'s refund released its claim', async () => {
    const org = price ? await prepaid(10_000) : await givenOrganization();
    org.clients.faults.fail('putOnce', failure);
    const body = { name: 'Refunded First', email: 'refunded.first@example.com' };
    await expect(org.send(body)).rejects.toThrow('injected');
    const { counted } = await metricsOf(() => org.send(body));
    expect(counted('LeadsAdopted')).toBe(0);
    expect(await org.holds()).toMatchObject({ usage: { calls: 1, billedMicros: price } });
    expect((await org.holds()).clients).toHaveLength(1);
  });
});
