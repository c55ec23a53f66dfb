/**
 * The recipient store's contract (functions/core/notify/recipient-store.ts) on DynamoDB Local and
 * the in-memory twin: recipients added, their picks changed and removed in one all-or-nothing
 * change, listed by address; a status moved only from the statuses named and only for the addition
 * a confirm link names; the stored item's shape.
 */
import { describe, it, expect } from '@jest/globals';
import { newId } from '../../../functions/core/platform/ids.js';
import { recipientKey, recipientStore, type Recipient } from '../../../functions/core/notify/recipient-store.js';
import { implementations } from './support/implementations.js';

const pending = (email: string, addedAt = 1_900_000_000_000): Recipient => ({ email, notices: ['lead.created'], status: 'pending', addedAt });

describe.each(implementations)('the recipient store on %s', (_name, implementation) => {
  it('adds, changes picks and removes in one change, lists by address, and stores the item as the twin does', async () => {
    const impl = await implementation();
    const store = recipientStore(impl.deps);
    const org = newId('org', 12);
    await store.changeRecipients(org, { add: [pending('b@shop.example'), pending('a@shop.example')], update: [], remove: [] });
    expect((await store.listRecipients(org)).map((r) => r.email)).toEqual(['a@shop.example', 'b@shop.example']);
    expect(await impl.read('organizations', recipientKey(org, 'a@shop.example'))).toEqual({ ...recipientKey(org, 'a@shop.example'), entity: 'notice_recipient', ...pending('a@shop.example') });
    await store.changeRecipients(org, { add: [pending('c@shop.example')], update: [{ email: 'a@shop.example', notices: ['daily_digest', 'endpoint.paused'] }], remove: ['b@shop.example'] });
    expect(await store.listRecipients(org)).toEqual([{ ...pending('a@shop.example'), notices: ['daily_digest', 'endpoint.paused'] }, pending('c@shop.example')]);
    expect(await store.getRecipient(org, 'b@shop.example')).toBeUndefined();
  });

  it('lists the organizations with a recipient who picked the daily digest, following picks and removals', async () => {
    const impl = await implementation();
    const store = recipientStore(impl.deps);
    const [org, other] = [newId('org', 12), newId('org', 12)];
    await store.changeRecipients(org, { add: [{ ...pending('a@shop.example'), notices: ['daily_digest'] }, { ...pending('b@shop.example'), notices: ['daily_digest', 'lead.created'] }], update: [], remove: [] });
    await store.changeRecipients(other, { add: [pending('c@shop.example')], update: [], remove: [] });
    let listed = await store.digestOrganizations();
    expect(listed).toContain(org);
    expect(listed).not.toContain(other);
    expect(listed.filter((o) => o === org)).toHaveLength(1);
    await store.changeRecipients(other, { add: [], update: [{ email: 'c@shop.example', notices: ['daily_digest'] }], remove: [] });
    await store.changeRecipients(org, { add: [], update: [{ email: 'a@shop.example', notices: ['lead.created'] }], remove: ['b@shop.example'] });
    listed = await store.digestOrganizations();
    expect(listed).toContain(other);
    expect(listed).not.toContain(org);
  });

  it('writes nothing of a change that meets an address already there, or a change of picks of one that is gone', async () => {
    const impl = await implementation();
    const store = recipientStore(impl.deps);
    const org = newId('org', 12);
    await store.changeRecipients(org, { add: [pending('a@shop.example')], update: [], remove: [] });
    await expect(store.changeRecipients(org, { add: [pending('new@shop.example'), pending('a@shop.example')], update: [], remove: [] })).rejects.toThrow();
    await expect(store.changeRecipients(org, { add: [pending('new@shop.example')], update: [{ email: 'gone@shop.example', notices: [] }], remove: ['a@shop.example'] })).rejects.toThrow();
    expect((await store.listRecipients(org)).map((r) => r.email)).toEqual(['a@shop.example']);
  });

  it('moves a status only from the statuses named, only for the addition named, and stamps it', async () => {
    const impl = await implementation();
    const store = recipientStore(impl.deps);
    const org = newId('org', 12);
    await store.changeRecipients(org, { add: [pending('a@shop.example', 1000)], update: [], remove: [] });
    const at = '2030-01-15T12:00:00.000Z';
    expect(await store.setStatus(org, 'a@shop.example', { to: 'confirmed', from: ['pending'], addedAt: 999, at })).toBe(false);
    expect(await store.setStatus(org, 'a@shop.example', { to: 'confirmed', from: ['pending'], addedAt: 1000, at })).toBe(true);
    expect(await store.setStatus(org, 'a@shop.example', { to: 'confirmed', from: ['pending'], addedAt: 1000, at })).toBe(false);
    expect(await store.setStatus(org, 'missing@shop.example', { to: 'suppressed', from: ['pending', 'confirmed'], at })).toBe(false);
    expect(await store.getRecipient(org, 'missing@shop.example')).toBeUndefined();
    expect(await store.setStatus(org, 'a@shop.example', { to: 'suppressed', from: ['pending', 'confirmed'], reason: 'bounced', at })).toBe(true);
    expect(await store.getRecipient(org, 'a@shop.example')).toEqual({ ...pending('a@shop.example', 1000), status: 'suppressed', confirmedAt: at, suppressedAt: at, suppressedReason: 'bounced' });
  });

  it('counts a day\'s confirmation e-mails up to a bound, and nothing past it', async () => {
    const impl = await implementation();
    const store = recipientStore(impl.deps);
    const org = newId('org', 12);
    expect(await store.countConfirmations(org, '2030-01-15', 8, 10)).toBe(true);
    expect(await store.countConfirmations(org, '2030-01-15', 3, 10)).toBe(false);
    expect(await store.countConfirmations(org, '2030-01-15', 2, 10)).toBe(true);
    expect(await store.countConfirmations(org, '2030-01-15', 1, 10)).toBe(false);
    expect(await store.countConfirmations(org, '2030-01-16', 10, 10)).toBe(true);
    expect(await impl.read('organizations', { pk: `ORG#${org}`, sk: 'CONFIRMATIONS#2030-01-15' })).toEqual({ pk: `ORG#${org}`, sk: 'CONFIRMATIONS#2030-01-15', entity: 'notice_confirmations', count: 10 });
  });

  it('remembers suppressed addresses and the additions confirmations were sent for, listed or not, per organization', async () => {
    const impl = await implementation();
    const store = recipientStore(impl.deps);
    const org = newId('org', 12);
    const at = '2030-01-15T12:00:00.000Z';
    expect(await store.addressRecords(org, ['a@shop.example'])).toEqual(new Map());
    await store.changeRecipients(org, { add: [pending('a@shop.example', 1000)], update: [], remove: [], confirmations: [{ email: 'a@shop.example', addedAt: 1000 }] });
    await store.rememberSuppressed(org, 'b@shop.example', 'bounced', at);
    await store.changeRecipients(org, { add: [], update: [], remove: ['a@shop.example'], suppressed: [{ email: 'a@shop.example', reason: 'unsubscribed', at }] });
    expect(await store.addressRecords(org, ['a@shop.example', 'b@shop.example', 'c@shop.example'])).toEqual(new Map([
      ['a@shop.example', { suppressed: 'unsubscribed', suppressedAt: at, confirmationAddedAt: 1000 }], ['b@shop.example', { suppressed: 'bounced', suppressedAt: at }],
    ]));
    expect(await store.listRecipients(org)).toEqual([]);
    expect(await store.addressRecords(newId('org', 12), ['a@shop.example'])).toEqual(new Map());
    expect(await impl.read('organizations', { pk: `ORG#${org}`, sk: 'SUPPRESSED#b@shop.example' })).toEqual({ pk: `ORG#${org}`, sk: 'SUPPRESSED#b@shop.example', status: 'suppressed', suppressedAt: at, suppressedReason: 'bounced' });
  });

  it('writes a counted change only while the count is the one it read (absent before the first), and no removal of an address already gone', async () => {
    const impl = await implementation();
    const store = recipientStore(impl.deps);
    const org = newId('org', 12);
    await store.changeRecipients(org, { add: [pending('a@shop.example')], update: [], remove: [], count: { before: 0, after: 1 } });
    // A second change read from the same (empty) list.
    await expect(store.changeRecipients(org, { add: [pending('b@shop.example')], update: [], remove: [], count: { before: 0, after: 1 } })).rejects.toMatchObject({ name: 'TransactionCanceledException' });
    await expect(store.changeRecipients(org, { add: [], update: [], remove: ['z@shop.example'], count: { before: 1, after: 0 } })).rejects.toMatchObject({ name: 'TransactionCanceledException' });
    await store.changeRecipients(org, { add: [pending('b@shop.example')], update: [], remove: ['a@shop.example'], count: { before: 1, after: 1 } });
    expect((await store.listRecipients(org)).map((r) => r.email)).toEqual(['b@shop.example']);
    expect(await impl.read('organizations', { pk: `ORG#${org}`, sk: 'RECIPIENTS' })).toEqual({ pk: `ORG#${org}`, sk: 'RECIPIENTS', entity: 'notice_recipient_count', count: 1 });
  });
});
