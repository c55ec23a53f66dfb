/** Every derivation rule, from hand-written stream records in the AWS and the DynamoDB Local shape. */
import { describe, it, expect } from '@jest/globals';
import { marshall } from '@aws-sdk/util-dynamodb';
import type { DynamoDBRecord } from 'aws-lambda';
import { catalog, schemas } from '../../../functions/core/events/catalog.js';
import { keys } from '../../../functions/core/platform/model.js';
import { leadEventId } from '../../../functions/core/events/lead-events.js';
import { deriveEvents, expectedTimestamp, isTtlExpiry, streamRecord, streamArns, type Item, type Shape } from './given-stream.js';

const at = '2026-11-01T10:00:00.000Z';
const later = '2026-11-02T09:00:00.000Z';
const payment = (id: string, amount_cents = 1000) => ({ id, amount_cents, paid_at: later });

/** Stored items as the CRM (and the lead endpoint) write them, storage attributes included. */
const given = {
  client: (fields: Item = {}): Item => ({
    ...keys.client('org_1', 'cli_1'), entity: 'client', id: 'cli_1', organization_id: 'org_1', status: 'lead', source: 'api', first_name: 'Ada', last_name: 'Lovelace',
    phone: '+14155550100', sms_consent: true, sms_consent_proof: { source: 'web form', captured_at: at, ip: '203.0.113.9', user_agent: 'Mozilla/5.0', key_id: 'key_1' },
    custom_fields: { utm_source: 'google', budget: 300 }, created_at: at, updated_at: at, ...fields,
  }),
  workOrder: (fields: Item = {}): Item => ({
    ...keys.workOrder('org_1', 'wo_1'), entity: 'work_order', id: 'wo_1', organization_id: 'org_1', client_id: 'cli_1', title: 'Fix sink', status: 'scheduled', created_at: at, updated_at: at, ...fields,
  }),
  invoice: (fields: Item = {}): Item => ({
    ...keys.invoice('org_1', 'inv_1'), entity: 'invoice', id: 'inv_1', organization_id: 'org_1', amount_cents: 1000, currency: 'USD', payments: [], created_at: at, updated_at: at, ...fields,
  }),
  booking: (fields: Item = {}): Item => ({
    ...keys.booking('org_1', 'bkg_1'), entity: 'booking', id: 'bkg_1', organization_id: 'org_1', starts_at: later, created_at: at, ...fields,
  }),
};

describe.each(['aws', 'local'] as Shape[])('events from %s stream records', (shape) => {
  const inserted = (item: Item) => deriveEvents(streamRecord(shape, 'INSERT', { new: item }));
  const modified = (old: Item, item: Item) => deriveEvents(streamRecord(shape, 'MODIFY', { old, new: item }));
  const removed = (old: Item) => deriveEvents(streamRecord(shape, 'REMOVE', { old }));
  const expired = (old: Item) => deriveEvents(streamRecord(shape, 'TTL', { old }));
  const types = (events: { type: string }[]) => events.map((e) => e.type);

  describe('clients', () => {
    it('a new client becomes client.created with the public client: no keys, no consent proof', () => {
      const events = inserted(given.client({ gsi1pk: 'X', gsi1sk: 'Y', expiresAt: 1_900_000_000, lastUsedAt: at }));
      expect(events).toHaveLength(1);
      const [created] = events;
      expect(created).toMatchObject({ type: 'client.created', api_version: '2026-11-01', organization_id: 'org_1', timestamp: expectedTimestamp(shape) });
      expect(created.data).not.toHaveProperty('previous');
      expect(schemas.client.strict().parse(created.data.object)).toBeTruthy();
      expect(created.data.object).toMatchObject({ id: 'cli_1', sms_consent: true, custom_fields: { utm_source: 'google', budget: 300 } });
      for (const hidden of ['pk', 'sk', 'gsi1pk', 'gsi1sk', 'entity', 'expiresAt', 'sms_consent_proof', 'lastUsedAt']) expect(created.data.object).not.toHaveProperty(hidden);
    });

    it('a restore (a change setting a new restoredAt) emits nothing; a later change that keeps it is an ordinary change', () => {
      const restored = given.client({ restoredAt: later });
      expect(inserted(restored)).toEqual([]);
      expect(modified(given.client({ status: 'customer' }), restored)).toEqual([]);
      expect(modified(given.client({ restoredAt: at }), restored)).toEqual([]);
      expect(types(modified(restored, given.client({ restoredAt: later, status: 'customer' })))).toEqual(['client.updated']);
      expect(types(modified(restored, given.client({ status: 'customer' })))).toEqual(['client.updated']);
      expect(types(inserted(given.client()))).toEqual(['client.created']);
    });

    it('a client stored without sms_consent is sent with sms_consent: false', () => {
      const { sms_consent: _c, sms_consent_proof: _p, ...item } = given.client();
      expect(inserted(item)[0].data.object).toMatchObject({ sms_consent: false });
    });

    it('a visible change becomes client.updated whose previous holds the old values (null where absent)', () => {
      const [updated, ...rest] = modified(given.client(), given.client({ status: 'customer', email: 'ada@example.com', last_name: undefined, updated_at: later }));
      expect(rest).toEqual([]);
      expect(updated.type).toBe('client.updated');
      expect(updated.data.previous).toEqual({ status: 'lead', email: null, last_name: 'Lovelace' });
      expect(updated.data.object).toMatchObject({ status: 'customer', email: 'ada@example.com', updated_at: later });
      expect(updated.data.object).not.toHaveProperty('last_name');
    });

    it('a change inside custom_fields is visible; the same map in another attribute order is not', () => {
      expect(modified(given.client(), given.client({ custom_fields: { utm_source: 'bing', budget: 300 } }))[0].data.previous).toEqual({ custom_fields: { utm_source: 'google', budget: 300 } });
      expect(modified(given.client(), given.client({ custom_fields: { budget: 300, utm_source: 'google' } }))).toEqual([]);
    });

    it('a no-op write, or a change of bookkeeping and private data only, emits nothing', () => {
      expect(modified(given.client(), given.client())).toEqual([]);
      expect(modified(given.client(), given.client({ updated_at: later }))).toEqual([]);
      expect(modified(given.client(), given.client({ lastUsedAt: later, gsi1pk: 'Z', expiresAt: 1_900_000_000 }))).toEqual([]);
      expect(modified(given.client(), given.client({ sms_consent_proof: { source: 'phone call', captured_at: later, key_id: 'key_2' } }))).toEqual([]);
      expect(modified(given.client({ email: undefined }), given.client({ email: null }))).toEqual([]); // null counts as absent
    });

    it('a lead flagged or merged as a duplicate carries the link; its submissions and match key are never sent', () => {
      const submission = { at, source: 'api', key_id: 'key_1', request_id: 'r1', ip: '203.0.113.9', user_agent: 'Mozilla/5.0', sms_consent: true };
      const [created] = inserted(given.client({ possible_duplicate_of: 'cli_0', submission_count: 1, submissions: [submission], matchKey: 'org_1#phone#+14155550100' }));
      expect(created.data.object).toMatchObject({ possible_duplicate_of: 'cli_0', submission_count: 1 });
      for (const hidden of ['submissions', 'matchKey']) expect(created.data.object).not.toHaveProperty(hidden);
      // A merge: a filled field and the count are the change; the appended submission alone is private.
      const before = given.client({ submission_count: 1, submissions: [submission] });
      const [merged, ...rest] = modified(before, given.client({ email: 'ada@example.com', submission_count: 2, submissions: [submission, { ...submission, request_id: 'r2' }], updated_at: later }));
      expect(rest).toEqual([]);
      expect(merged).toMatchObject({ type: 'client.updated', data: { previous: { email: null, submission_count: 1 } } });
      expect(modified(before, given.client({ submission_count: 1, submissions: [submission, submission] }))).toEqual([]);
    });

    it('a user deleting a client becomes client.deleted with the client as it was', () => {
      const [deleted, ...rest] = removed(given.client());
      expect(rest).toEqual([]);
      expect(deleted).toMatchObject({ type: 'client.deleted', organization_id: 'org_1', data: { object: { id: 'cli_1', status: 'lead' } } });
      expect(schemas.client.strict().parse(deleted.data.object)).toBeTruthy();
    });

    it('a client expiring by TTL emits nothing', () => {
      expect(expired(given.client({ expiresAt: 1_700_000_000 }))).toEqual([]);
    });
  });

  describe('work orders', () => {
    it('a new work order becomes work_order.created', () => {
      const events = inserted(given.workOrder());
      expect(types(events)).toEqual(['work_order.created']);
      expect(schemas.work_order.strict().parse(events[0].data.object)).toBeTruthy();
    });

    it('one created already completed also becomes work_order.completed, without previous', () => {
      const events = inserted(given.workOrder({ status: 'completed' }));
      expect(types(events)).toEqual(['work_order.created', 'work_order.completed']);
      expect(events[1].data).not.toHaveProperty('previous');
    });

    it('a status change becomes work_order.status_changed with previous.status', () => {
      const events = modified(given.workOrder(), given.workOrder({ status: 'in_progress', updated_at: later }));
      expect(events.map((e) => [e.type, e.data.previous, e.data.object.status])).toEqual([['work_order.status_changed', { status: 'scheduled' }, 'in_progress']]);
    });

    it('becoming completed is status_changed then completed, with the same previous', () => {
      const events = modified(given.workOrder({ status: 'in_progress' }), given.workOrder({ status: 'completed' }));
      expect(events.map((e) => [e.type, e.data.previous])).toEqual([
        ['work_order.status_changed', { status: 'in_progress' }],
        ['work_order.completed', { status: 'in_progress' }],
      ]);
      expect(events[0].id).not.toBe(events[1].id);
    });

    it('moving on from completed to invoiced is only a status change', () => {
      expect(types(modified(given.workOrder({ status: 'completed' }), given.workOrder({ status: 'invoiced' })))).toEqual(['work_order.status_changed']);
    });

    it('other edits of a work order, and no-op writes, emit nothing', () => {
      expect(modified(given.workOrder(), given.workOrder({ title: 'Fix sink and tap', scheduled_for: later, updated_at: later }))).toEqual([]);
      expect(modified(given.workOrder(), given.workOrder())).toEqual([]);
    });

    it('a user deleting a work order becomes work_order.deleted; a TTL expiry emits nothing', () => {
      expect(removed(given.workOrder()).map((e) => [e.type, e.data.object.id])).toEqual([['work_order.deleted', 'wo_1']]);
      expect(expired(given.workOrder())).toEqual([]);
    });
  });

  describe('invoices', () => {
    it('a new invoice becomes invoice.created', () => {
      const events = inserted(given.invoice());
      expect(types(events)).toEqual(['invoice.created']);
      expect(schemas.invoice.strict().parse(events[0].data.object)).toBeTruthy();
    });

    it('one stored without a payments list is sent with payments: []', () => {
      const { payments: _p, ...item } = given.invoice();
      expect(inserted(item)[0].data.object.payments).toEqual([]);
    });

    it('one created already sent, or already paid, also becomes invoice.sent / invoice.paid', () => {
      expect(types(inserted(given.invoice({ sent_at: at })))).toEqual(['invoice.created', 'invoice.sent']);
      const paid = inserted(given.invoice({ sent_at: at, payments: [payment('pay_1')], paid: true }));
      expect(paid.map((e) => [e.type, e.data.previous])).toEqual([['invoice.created', undefined], ['invoice.sent', undefined], ['invoice.paid', { payments: [] }]]);
    });

    it('getting its sent time becomes invoice.sent, once', () => {
      expect(types(modified(given.invoice(), given.invoice({ sent_at: later })))).toEqual(['invoice.sent']);
      expect(modified(given.invoice({ sent_at: at }), given.invoice({ sent_at: later }))).toEqual([]);
    });

    it('recording a payment becomes one invoice.paid whose previous.payments is the list before', () => {
      const before = given.invoice({ sent_at: at, payments: [payment('pay_1', 400)] });
      const events = modified(before, given.invoice({ sent_at: at, payments: [payment('pay_1', 400), payment('pay_2', 600)], paid: true, updated_at: later }));
      expect(events.map((e) => [e.type, e.data.previous])).toEqual([['invoice.paid', { payments: [payment('pay_1', 400)] }]]);
      expect(schemas.invoice.strict().parse(events[0].data.object)).toMatchObject({ paid: true, payments: [{ id: 'pay_1' }, { id: 'pay_2' }] });
    });

    it('several payments recorded in one write are one invoice.paid', () => {
      expect(types(modified(given.invoice(), given.invoice({ payments: [payment('pay_1'), payment('pay_2')] })))).toEqual(['invoice.paid']);
    });

    it('sent and paid in one write: invoice.sent, then invoice.paid', () => {
      expect(types(modified(given.invoice(), given.invoice({ sent_at: later, payments: [payment('pay_1')] })))).toEqual(['invoice.sent', 'invoice.paid']);
    });

    it('correcting or removing a payment, marking it paid, or changing the amount emits nothing', () => {
      const before = given.invoice({ payments: [payment('pay_1', 400)] });
      expect(modified(before, given.invoice({ payments: [payment('pay_1', 450)] }))).toEqual([]);
      expect(modified(before, given.invoice({ payments: [] }))).toEqual([]);
      expect(modified(before, given.invoice({ payments: [payment('pay_1', 400)], paid: true, amount_cents: 400 }))).toEqual([]);
    });

    it('payments without ids are matched by value', () => {
      const noId = { amount_cents: 500, paid_at: later };
      expect(modified(given.invoice({ payments: [noId] }), given.invoice({ payments: [noId] }))).toEqual([]);
      expect(types(modified(given.invoice({ payments: [noId] }), given.invoice({ payments: [noId, noId] })))).toEqual(['invoice.paid']);
    });

    it('deleting an invoice, by a user or by TTL, emits nothing', () => {
      expect(removed(given.invoice())).toEqual([]);
      expect(expired(given.invoice())).toEqual([]);
    });
  });

  describe('bookings', () => {
    it('a new booking becomes booking.received; later changes and deletions emit nothing', () => {
      const events = inserted(given.booking({ service: 'Boiler check', notes: 'Gate code 4411' }));
      expect(types(events)).toEqual(['booking.received']);
      expect(schemas.booking.strict().parse(events[0].data.object)).toBeTruthy();
      expect(modified(given.booking(), given.booking({ notes: 'Moved', starts_at: at }))).toEqual([]);
      expect(removed(given.booking())).toEqual([]);
      expect(expired(given.booking())).toEqual([]);
    });
  });

  describe('records that are not CRM events', () => {
    it('items without a known entity emit nothing', () => {
      expect(inserted({ pk: 'ORG#org_1', sk: 'NOTE#1', organization_id: 'org_1' })).toEqual([]);
      expect(inserted(given.client({ entity: 'note' }))).toEqual([]);
      expect(inserted(given.client({ entity: 'toString' }))).toEqual([]);
    });

    it('an item whose organization_id disagrees with its partition key emits nothing (never another tenant)', () => {
      expect(inserted(given.client({ organization_id: 'org_2' }))).toEqual([]);
      expect(inserted(given.client({ organization_id: undefined }))).toEqual([]);
      expect(inserted(given.client({ pk: 'CLIENT#cli_1' }))).toEqual([]);
    });

    it('a record missing the image its change needs emits nothing', () => {
      expect(deriveEvents(streamRecord(shape, 'MODIFY', { new: given.workOrder({ status: 'completed' }) }))).toEqual([]);
      const keysOnly = streamRecord(shape, 'REMOVE', { old: given.client() });
      delete keysOnly.dynamodb!.OldImage;
      expect(deriveEvents(keysOnly)).toEqual([]);
    });

    it('numbers beyond 2^53 neither throw nor become BigInts', () => {
      const record = streamRecord(shape, 'INSERT', { new: given.invoice() });
      record.dynamodb!.NewImage!.amount_cents = { N: '123456789012345678901234567890' };
      const [created] = deriveEvents(record);
      expect(created.data.object.amount_cents).toBe('123456789012345678901234567890');
      expect(() => JSON.stringify(created)).not.toThrow();
    });
  });

  describe('event ids and times', () => {
    it('a re-read record yields the same events with the same ids', () => {
      const record = streamRecord(shape, 'MODIFY', { old: given.workOrder({ status: 'in_progress' }), new: given.workOrder({ status: 'completed' }) });
      const again = JSON.parse(JSON.stringify(record)) as DynamoDBRecord;
      expect(deriveEvents(again)).toEqual(deriveEvents(record));
      for (const e of deriveEvents(record)) expect(e.id).toMatch(/^evt_[A-Za-z0-9_-]{22}$/);
    });

    it('ids differ between records, streams and the events of one record', () => {
      const id = (options: { sequence: number; arn?: string }) => deriveEvents(streamRecord(shape, 'INSERT', { new: given.invoice({ sent_at: at }) }, options)).map((e) => e.id);
      const [created, sent] = id({ sequence: 7001 });
      expect(created).not.toBe(sent);
      expect(id({ sequence: 7002 })[0]).not.toBe(created);
      expect(id({ sequence: 7001, arn: streamArns[shape].replace('clients', 'work-orders') })[0]).not.toBe(created);
      expect(id({ sequence: 7001 })[0]).toBe(created);
    });

    it("a lead's submissions carry ids derived from the client and the submission's number (the settings trail reads them by key); other changes keep stream-position ids", () => {
      const at7001 = { sequence: 7001 };
      const [created] = deriveEvents(streamRecord(shape, 'INSERT', { new: given.client() }, at7001));
      expect(created).toMatchObject({ type: 'client.created', id: leadEventId('org_1', 'cli_1', 1) });
      // Re-read at another position (a re-processed batch, another stream), it is the same event.
      expect(deriveEvents(streamRecord(shape, 'INSERT', { new: given.client() }, { sequence: 7002 }))[0].id).toBe(created.id);
      const merge = (from: number) => deriveEvents(streamRecord(shape, 'MODIFY', {
        old: given.client({ submission_count: from }), new: given.client({ submission_count: from + 1, notes: `merged ${from + 1}` }),
      }, at7001))[0];
      expect(merge(1)).toMatchObject({ type: 'client.updated', id: leadEventId('org_1', 'cli_1', 2) });
      expect(merge(2).id).toBe(leadEventId('org_1', 'cli_1', 3));
      expect(new Set([created.id, merge(1).id, merge(2).id, leadEventId('org_2', 'cli_1', 1), leadEventId('org_1', 'cli_2', 1)]).size).toBe(5);
      // A merge into a client the CRM wrote (no submission_count yet) is submission 2.
      const intoCrm = deriveEvents(streamRecord(shape, 'MODIFY', { old: given.client({ source: 'crm' }), new: given.client({ source: 'crm', submission_count: 2 }) }, at7001))[0];
      expect(intoCrm.id).toBe(leadEventId('org_1', 'cli_1', 2));
      // A client the CRM inserts, and an edit that merges nothing, keep ids of their stream position.
      const crmInsert = (sequence: number) => deriveEvents(streamRecord(shape, 'INSERT', { new: given.client({ source: 'crm' }) }, { sequence }))[0].id;
      expect(crmInsert(7001)).not.toBe(crmInsert(7002));
      const edit = (sequence: number) => deriveEvents(streamRecord(shape, 'MODIFY', { old: given.client({ submission_count: 2 }), new: given.client({ submission_count: 2, status: 'customer' }) }, { sequence }))[0].id;
      expect(edit(7001)).not.toBe(edit(7002));
    });

    it("a merge after a restore of the clients table takes a new id: the merged submission's request id is part of it", () => {
      const submissions = (...requestIds: string[]) => requestIds.map((request_id) => ({ at, source: 'api', key_id: 'key_1', request_id, sms_consent: false }));
      const merge = (from: number, listed: string[], sequence = 7001) => deriveEvents(streamRecord(shape, 'MODIFY', {
        old: given.client({ submission_count: from, submissions: submissions(...listed.slice(0, -1)) }),
        new: given.client({ submission_count: from + 1, submissions: submissions(...listed) }),
      }, { sequence }))[0];
      const first = merge(2, ['req-2', 'req-3']);
      expect(first).toMatchObject({ type: 'client.updated', id: leadEventId('org_1', 'cli_1', 3, 'req-3') });
      expect(merge(2, ['req-2', 'req-3'], 7002).id).toBe(first.id); // re-read: the same event
      expect(merge(3, ['req-2', 'req-3', 'req-4']).id).not.toBe(first.id);
      // Restored to 2 submissions (no event), then merged again: submission 3 once more, a new request.
      expect(merge(2, ['req-2', 'req-3b']).id).not.toBe(first.id);
    });

    it('the timestamp is never earlier than the item’s own update time (created_at where it has none)', () => {
      // The stream time is approximate: whole seconds on AWS, rounded down to the minute (and seen
      // tens of seconds early) on DynamoDB Local; the write itself happened at updated_at.
      const written = '2026-11-02T09:15:42.123Z';
      const record = (change: 'INSERT' | 'MODIFY' | 'REMOVE', item: Item) =>
        streamRecord(shape, change, change === 'INSERT' ? { new: item } : change === 'REMOVE' ? { old: item } : { old: given.workOrder(), new: item }, { at: new Date('2026-11-02T09:15:10.000Z') });
      expect(deriveEvents(record('INSERT', given.client({ created_at: written, updated_at: written })))[0].timestamp).toBe(written);
      expect(deriveEvents(record('MODIFY', given.workOrder({ status: 'completed', updated_at: written }))).map((e) => e.timestamp)).toEqual([written, written]);
      expect(deriveEvents(record('REMOVE', given.client({ updated_at: written })))[0].timestamp).toBe(written);
      expect(deriveEvents(record('INSERT', given.booking({ created_at: written })))[0].timestamp).toBe(written);
    });

    it('the timestamp is the stream record time when the item was written before it, else the item updated_at (created_at for bookings)', () => {
      expect(inserted(given.client())[0].timestamp).toBe(expectedTimestamp(shape));
      const timeless = (change: 'INSERT' | 'REMOVE', item: Item) => deriveEvents(streamRecord(shape, change, change === 'INSERT' ? { new: item } : { old: item }, { at: null }))[0].timestamp;
      expect(timeless('INSERT', given.client({ updated_at: later }))).toBe(later);
      expect(timeless('REMOVE', given.workOrder({ updated_at: later }))).toBe(later);
      expect(timeless('INSERT', given.booking())).toBe(at);
    });
  });

  describe('the documented examples', () => {
    it.each(catalog.filter((e) => e.entity !== 'webhook_test').map((e) => [e.type, e] as const))('%s is what the stream record of that change yields', (type, entry) => {
      const { object, previous } = entry.example.data;
      const stored = (fields: Item): Item => ({ pk: `ORG#${object.organization_id}`, sk: `X#${object.id}`, entity: entry.entity, ...fields });
      const before = previous ? Object.fromEntries(Object.entries({ ...object, ...previous }).filter(([, v]) => v !== null)) : undefined;
      const record = type.endsWith('.deleted') ? streamRecord(shape, 'REMOVE', { old: stored(object) })
        : type === 'invoice.sent' ? streamRecord(shape, 'MODIFY', { old: stored({ ...object, sent_at: undefined }), new: stored(object) })
          : before ? streamRecord(shape, 'MODIFY', { old: stored(before), new: stored(object) })
            : streamRecord(shape, 'INSERT', { new: stored(object) });
      const derived = deriveEvents(record).find((e) => e.type === type);
      expect(derived).toBeDefined();
      const { id: _i, timestamp: _t, ...rest } = entry.example;
      expect(derived).toMatchObject(rest);
      expect(derived!.data).toEqual(entry.example.data);
      expect(Object.keys(derived!.data.object)).toEqual(Object.keys(object)); // same field order as documented
    });
  });
});

describe('recognising TTL expiries', () => {
  const old = given.client();
  it('on AWS: a REMOVE by the DynamoDB service principal', () => {
    expect(isTtlExpiry(streamRecord('aws', 'TTL', { old }))).toBe(true);
  });
  it('on DynamoDB Local: the event name UNKNOWN_TO_SDK_VERSION', () => {
    const record = streamRecord('local', 'TTL', { old });
    expect(record.eventName).toBe('UNKNOWN_TO_SDK_VERSION');
    expect(isTtlExpiry(record)).toBe(true);
  });
  it('a REMOVE by a user, in either shape, is not an expiry', () => {
    expect(isTtlExpiry(streamRecord('aws', 'REMOVE', { old }))).toBe(false);
    expect(isTtlExpiry(streamRecord('local', 'REMOVE', { old }))).toBe(false);
    expect(isTtlExpiry({ ...streamRecord('aws', 'REMOVE', { old }), userIdentity: { type: 'Service', principalId: 'events.amazonaws.com' } })).toBe(false);
  });
  it('an AWS-shaped record built by hand (marshalled images) is read the same way', () => {
    const record: DynamoDBRecord = { eventName: 'INSERT', eventSourceARN: streamArns.aws, dynamodb: { SequenceNumber: '1', NewImage: marshall(old) as never } };
    expect(deriveEvents(record).map((e) => e.type)).toEqual(['client.created']);
  });
});
