/**
 * Duplicate leads (docs/leads.md "Duplicates") on the in-memory stores, with a clock the test
 * controls: the double-submit guard (a repeat within 10 minutes is the same client, billed; after
 * them a new, flagged one), the `flag` and `merge` policies, e-mail against phone, a page's
 * (publishable) key that never merges, and a merge whose target is gone or full.
 */
import { describe, it, expect } from '@jest/globals';
import { keys, type AuthContext } from '../../../functions/core/platform/model.js';
import { MAX_LISTED_SUBMISSIONS } from '../../../functions/core/intake/merge.js';
import { DOUBLE_SUBMIT_MS } from '../../../functions/core/tenancy/double-submit.js';
import { givenOrganization, metricsOf } from './support/given.js';

const pageKey = (auth: AuthContext): AuthContext => ({
  ...auth, key: { keyId: 'key_page1', name: 'shop page', kind: 'publishable', publishable: { origins: ['https://shop.example'], perIpLimit: 5, honeypotField: 'website' } },
});

describe('the double-submit guard', () => {
  it.each([['postpaid', { billing: 'none' as const }], ['prepaid', { billing: 'prepaid' as const, walletMicros: 1_000_000 }]])('%s: answers the same submission within 10 minutes as the same client, both calls billed', async (_billing, options) => {
    const org = await givenOrganization(options);
    const first = await org.send({ name: 'Dana Double', email: 'Dana@Example.com', notes: 'leaky tap' });
    expect(first.kind).toBe('created');
    const id = (first as { client: { id: string } }).client.id;
    org.clock.advance(DOUBLE_SUBMIT_MS - 1);
    // Same body in another key order and spelling that normalizes the same.
    expect(await org.send({ notes: 'leaky tap', email: 'dana@example.com', name: 'Dana Double' })).toEqual({ kind: 'duplicate', clientId: id });
    const after = await org.holds();
    expect(after.clients).toHaveLength(1);
    expect(after.usage.calls).toBe(2);
    if (options.billing === 'prepaid') expect(after.wallet).toBe(1_000_000 - 2 * 3_000);
  });

  it('after 10 minutes, the same submission is a new client flagged as the first one\'s possible duplicate', async () => {
    const org = await givenOrganization();
    const first = await org.send({ name: 'Late Again', email: 'late@example.com' });
    org.clock.advance(DOUBLE_SUBMIT_MS + 1);
    const again = await org.send({ name: 'Late Again', email: 'late@example.com' });
    expect(again.kind).toBe('created');
    expect((again as { client: { possible_duplicate_of?: string } }).client.possible_duplicate_of).toBe((first as { client: { id: string } }).client.id);
  });

  it('creates one client when the three submissions of a double-click race', async () => {
    const org = await givenOrganization({ billing: 'prepaid', walletMicros: 1_000_000 });
    const lead = { name: 'Rita Race', phone: '+1 415 555 0142' };
    const outcomes = await Promise.all([org.send(lead), org.send(lead), org.send(lead)]);
    expect(outcomes.map((o) => o.kind).sort()).toEqual(['created', 'duplicate', 'duplicate']);
    const after = await org.holds();
    expect(after.clients).toHaveLength(1);
    expect(after.usage.calls).toBe(3);
  });
});

describe('the flag policy (the default)', () => {
  it('flags a later submission with the same e-mail, and keeps its consent', async () => {
    const org = await givenOrganization();
    const first = await org.send({ name: 'Fay Flag', email: 'fay@example.com' });
    const later = await org.send({ name: 'Fay Flagged', email: 'FAY@example.com', phone: '+1 415 555 0100', sms_consent: true, sms_consent_source: 'form' });
    expect(later).toMatchObject({ kind: 'created', client: { possible_duplicate_of: (first as { client: { id: string } }).client.id, sms_consent: true } });
  });

  it('flags a later submission with the same phone when neither has an e-mail', async () => {
    const org = await givenOrganization();
    const first = await org.send({ name: 'Pat Phone', phone: '+1 415 555 0177' });
    const later = await org.send({ name: 'Pat Phone', phone: '(415) 555-0177', notes: 'another visit' });
    expect(later).toMatchObject({ kind: 'created', client: { possible_duplicate_of: (first as { client: { id: string } }).client.id } });
  });
});

describe('the merge policy', () => {
  it('merges a later submission with the same e-mail: empty fields filled, the submission listed with its own consent, the first consent proof kept', async () => {
    const org = await givenOrganization({ duplicatePolicy: 'merge' });
    const first = await org.send({ name: 'Mo Merge', email: 'mo@example.com', phone: '+1 415 555 0100', service: 'Boiler', sms_consent: true, sms_consent_source: 'first form' });
    const id = (first as { client: { id: string } }).client.id;
    const { result, counted } = await metricsOf(() => org.send({ name: 'Maurice Merge', email: 'mo@example.com', phone: '+1 415 555 0123', service: 'Sink', notes: 'kitchen', sms_consent: true, sms_consent_source: 'landing page checkbox' }));
    expect(result).toEqual({ kind: 'merged', clientId: id });
    expect(counted('LeadsMerged')).toBe(1);
    const [stored, ...others] = (await org.holds()).clients;
    expect(others).toEqual([]);
    expect(stored).toMatchObject({ first_name: 'Mo', last_name: 'Merge', service: 'Boiler', notes: 'kitchen', phone: '+14155550100', submission_count: 2 });
    expect(stored.sms_consent_proof).toMatchObject({ source: 'first form' });
    expect(stored.submissions).toEqual([expect.objectContaining({ sms_consent: true, sms_consent_source: 'landing page checkbox', service: 'Sink', notes: 'kitchen' })]);
    expect(stored.notification).toMatchObject({ type: 'lead.returning', title: 'Returning lead: Maurice Merge' });
    expect((await org.holds()).usage.calls).toBe(2);
  });

  it('never merges by phone alone: flags, and the earlier client is left as it was', async () => {
    const org = await givenOrganization({ duplicatePolicy: 'merge' });
    const victim = await org.send({ name: 'Vic Tim', phone: '+1 415 555 0166' });
    const before = (await org.holds()).clients[0];
    const later = await org.send({ name: 'Eve Il', phone: '(415) 555-0166', email: 'attacker@evil.example' });
    expect(later).toMatchObject({ kind: 'created', client: { possible_duplicate_of: (victim as { client: { id: string } }).client.id } });
    expect((await org.holds()).clients.find((c) => c.id === before.id)).toEqual(before);
  });

  it('never merges a page\'s lead (publishable key): created, flagged', async () => {
    const org = await givenOrganization({ duplicatePolicy: 'merge' });
    const page = pageKey(org.auth);
    const first = await org.send({ name: 'Kim Known', email: 'kim@example.com' }, { auth: page });
    const known = await org.send({ name: 'Kim Known', email: 'kim@example.com', phone: '+1 415 555 0155' }, { auth: page });
    expect(known).toMatchObject({ kind: 'created', client: { possible_duplicate_of: (first as { client: { id: string } }).client.id } });
    expect((await org.holds()).clients.find((c) => c.id === (first as { client: { id: string } }).client.id)).not.toHaveProperty('phone');
  });

  it('creates a new client, not flagged, when the client to merge into was deleted meanwhile', async () => {
    const org = await givenOrganization({ duplicatePolicy: 'merge' });
    const first = await org.send({ name: 'Gone Girl', email: 'gone@example.com' });
    const id = (first as { client: { id: string } }).client.id;
    org.clients.faults.before('mergeOnce', () => org.clients.deleteClient(org.auth.organization.id, id));
    const { result, counted } = await metricsOf(() => org.send({ name: 'Gone Girl', email: 'gone@example.com', notes: 'back' }));
    expect(result?.kind).toBe('created');
    expect((result as unknown as { client: Record<string, unknown> }).client).not.toHaveProperty('possible_duplicate_of');
    expect(counted('MergeTargetGone')).toBe(1);
    expect((await org.holds()).usage.calls).toBe(2);
  });

  it.each([['whose list is full', 'full'], ['whose item would pass 400 KB', 'large']])('creates a flagged client instead of merging into one %s', async (_what, planted) => {
    const org = await givenOrganization({ duplicatePolicy: 'merge', billing: 'prepaid', walletMicros: 1_000_000 });
    const first = await org.send({ name: 'Full List', email: 'full@example.com' });
    const id = (first as { client: { id: string } }).client.id;
    const listed = Array.from({ length: MAX_LISTED_SUBMISSIONS }, (_, i) => ({ at: '2026-01-01T00:00:00.000Z', source: 'api', key_id: 'key_secret1', request_id: `r${i}`, sms_consent: false }));
    await org.clients.updateClient(org.auth.organization.id, id, { set: planted === 'full' ? { submissions: listed, submission_count: MAX_LISTED_SUBMISSIONS } : { padding: 'x'.repeat(409_000) } });
    const { result, counted } = await metricsOf(() => org.send({ name: 'Full List', email: 'full@example.com', phone: '+1 415 555 0111' }));
    expect(result).toMatchObject({ kind: 'created', client: { possible_duplicate_of: id } });
    expect(counted('MergeTargetFull')).toBe(1);
    const after = await org.holds();
    expect(after.clients).toHaveLength(2);
    expect(after.clients.find((c) => c.id === id)).not.toHaveProperty('phone');
    expect(after.usage.calls).toBe(2);
    expect(org.organizations.get(keys.org(org.auth.organization.id))?.walletMicros).toBe(1_000_000 - 2 * 3_000);
  });
});
