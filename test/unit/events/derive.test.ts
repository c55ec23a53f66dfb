/** Every derivation rule, from hand-written stream records in the AWS and the DynamoDB Local shape. */
import { describe, it, expect } from '@jest/globals';
import { marshall } from '@aws-sdk/util-dynamodb';
import type { DynamoDBRecord } from 'aws-lambda';
import { deriveEvents, isTtlExpiry } from '../../../functions/core/events/derive.js';
import { schemas } from '../../../functions/core/events/catalog.js';

type Item = Record<string, unknown>;
const shapes = {
  aws: { arn: 'arn:aws:dynamodb:us-east-1:123456789012:table/crm-clients/stream/2026-11-01T00:00:00.000', region: 'us-east-1' },
  local: { arn: 'arn:aws:dynamodb:ddblocal:000000000000:table/crm-local-clients/stream/2026-11-01T00:00:00.000', region: 'ddblocal' },
};
type Shape = keyof typeof shapes;

let seq = 1000;
function record(shape: Shape, eventName: string, images: { old?: Item; new?: Item }, extra: Partial<DynamoDBRecord> = {}): DynamoDBRecord {
  return {
    eventID: String(seq), eventName: eventName as DynamoDBRecord['eventName'], eventVersion: '1.1', eventSource: 'aws:dynamodb', awsRegion: shapes[shape].region,
    eventSourceARN: shapes[shape].arn,
    dynamodb: {
      ApproximateCreationDateTime: 1_795_000_000, SequenceNumber: String(seq++), StreamViewType: 'NEW_AND_OLD_IMAGES',
      Keys: marshall({ pk: 'ORG#o1', sk: 'X' }) as never,
      ...(images.old ? { OldImage: marshall(images.old, { removeUndefinedValues: true }) as never } : {}),
      ...(images.new ? { NewImage: marshall(images.new, { removeUndefinedValues: true }) as never } : {}),
    },
    ...extra,
  };
}

const at = '2026-11-01T10:00:00.000Z';
const client: Item = { pk: 'ORG#o1', sk: 'CLIENT#c1', entity: 'client', id: 'c1', organization_id: 'o1', status: 'lead', first_name: 'Ada', sms_consent: true, sms_consent_proof: { source: 'web', ip: '203.0.113.9' }, created_at: at, updated_at: at };
const workOrder: Item = { pk: 'ORG#o1', sk: 'WORK_ORDER#w1', entity: 'work_order', id: 'w1', organization_id: 'o1', title: 'Fix sink', status: 'scheduled', created_at: at, updated_at: at };
const invoice: Item = { pk: 'ORG#o1', sk: 'INVOICE#i1', entity: 'invoice', id: 'i1', organization_id: 'o1', amount_cents: 1000, currency: 'USD', payments: [], created_at: at, updated_at: at };
const booking: Item = { pk: 'ORG#o1', sk: 'BOOKING#b1', entity: 'booking', id: 'b1', organization_id: 'o1', starts_at: at, created_at: at };
const types = (r: DynamoDBRecord) => deriveEvents(r).map((e) => e.type);

describe.each(['aws', 'local'] as Shape[])('deriving events from %s stream records', (shape) => {
  it('client: insert → created, visible change → updated with previous, bookkeeping-only change → nothing, user delete → deleted', () => {
    const [created] = deriveEvents(record(shape, 'INSERT', { new: client }));
    expect(created).toMatchObject({ type: 'client.created', api_version: '2026-11-01', organization_id: 'o1', timestamp: new Date(1_795_000_000_000).toISOString() });
    expect(created.id).toMatch(/^evt_[A-Za-z0-9_-]{22}$/);
    expect(schemas.client.strict().parse(created.data.object)).toBeTruthy();
    expect(created.data.object).not.toHaveProperty('sms_consent_proof');
    expect(created.data.object).not.toHaveProperty('pk');

    const [updated] = deriveEvents(record(shape, 'MODIFY', { old: client, new: { ...client, status: 'active', email: 'ada@example.com', updated_at: '2026-11-02T00:00:00.000Z' } }));
    expect(updated.type).toBe('client.updated');
    expect(updated.data.previous).toEqual({ status: 'lead', email: null });

    expect(types(record(shape, 'MODIFY', { old: client, new: { ...client, updated_at: '2026-11-03T00:00:00.000Z' } }))).toEqual([]);
    expect(types(record(shape, 'MODIFY', { old: client, new: { ...client, sms_consent_proof: { source: 'other' } } }))).toEqual([]);
    expect(types(record(shape, 'REMOVE', { old: client }))).toEqual(['client.deleted']);
  });

  it('work order: created, status changes with previous.status, completed, other edits silent, deleted', () => {
    expect(types(record(shape, 'INSERT', { new: workOrder }))).toEqual(['work_order.created']);
    const started = deriveEvents(record(shape, 'MODIFY', { old: workOrder, new: { ...workOrder, status: 'in_progress' } }));
    expect(started.map((e) => [e.type, e.data.previous])).toEqual([['work_order.status_changed', { status: 'scheduled' }]]);
    expect(types(record(shape, 'MODIFY', { old: { ...workOrder, status: 'in_progress' }, new: { ...workOrder, status: 'completed' } }))).toEqual(['work_order.status_changed', 'work_order.completed']);
    expect(types(record(shape, 'MODIFY', { old: workOrder, new: { ...workOrder, title: 'Fix sink and tap' } }))).toEqual([]);
    expect(types(record(shape, 'REMOVE', { old: workOrder }))).toEqual(['work_order.deleted']);
  });

  it('invoice: created (and sent when born sent), sent once, paid when a payment is added', () => {
    expect(types(record(shape, 'INSERT', { new: invoice }))).toEqual(['invoice.created']);
    expect(types(record(shape, 'INSERT', { new: { ...invoice, sent_at: at } }))).toEqual(['invoice.created', 'invoice.sent']);
    expect(types(record(shape, 'MODIFY', { old: invoice, new: { ...invoice, sent_at: at } }))).toEqual(['invoice.sent']);
    expect(types(record(shape, 'MODIFY', { old: { ...invoice, sent_at: at }, new: { ...invoice, sent_at: at, amount_cents: 1200 } }))).toEqual([]);
    const paid = deriveEvents(record(shape, 'MODIFY', { old: { ...invoice, sent_at: at }, new: { ...invoice, sent_at: at, payments: [{ id: 'p1', amount_cents: 1000, paid_at: at }] } }));
    expect(paid.map((e) => [e.type, e.data.previous])).toEqual([['invoice.paid', { payments: [] }]]);
    expect(schemas.invoice.strict().parse(paid[0].data.object)).toBeTruthy();
  });

  it('booking: inserted → received; nothing else', () => {
    expect(types(record(shape, 'INSERT', { new: booking }))).toEqual(['booking.received']);
    expect(types(record(shape, 'MODIFY', { old: booking, new: { ...booking, notes: 'x' } }))).toEqual([]);
    expect(types(record(shape, 'REMOVE', { old: booking }))).toEqual([]);
  });

  it('ignores items that are not CRM records (no organization, unknown entity)', () => {
    expect(types(record(shape, 'INSERT', { new: { pk: 'X', sk: 'Y' } }))).toEqual([]);
    expect(types(record(shape, 'INSERT', { new: { ...client, entity: 'note' } }))).toEqual([]);
  });

  it('gives a re-read record the same event ids, and different records different ids', () => {
    const r = record(shape, 'INSERT', { new: client });
    expect(deriveEvents(r)[0].id).toBe(deriveEvents(structuredClone(r))[0].id);
    expect(deriveEvents(record(shape, 'INSERT', { new: client }))[0].id).not.toBe(deriveEvents(r)[0].id);
  });
});

describe('TTL expiries are not events', () => {
  it('on AWS: REMOVE by the DynamoDB service principal', () => {
    const r = record('aws', 'REMOVE', { old: client }, { userIdentity: { type: 'Service', principalId: 'dynamodb.amazonaws.com' } } as never);
    expect(isTtlExpiry(r)).toBe(true);
    expect(deriveEvents(r)).toEqual([]);
  });

  it('on DynamoDB Local: an event name the SDK does not know', () => {
    const r = record('local', 'UNKNOWN_TO_SDK_VERSION', { old: client });
    expect(isTtlExpiry(r)).toBe(true);
    expect(deriveEvents(r)).toEqual([]);
  });

  it('a REMOVE by a user is not an expiry', () => {
    expect(isTtlExpiry(record('aws', 'REMOVE', { old: client }))).toBe(false);
  });
});

describe('payload field order', () => {
  it('is stable and readable, whatever order DynamoDB returns attributes in', () => {
    const reversed = Object.fromEntries(Object.entries(client).reverse());
    const r = (item: Item) => record('aws', 'INSERT', { new: item });
    const keysOf = (item: Item) => Object.keys(deriveEvents(r(item))[0].data.object);
    expect(keysOf(reversed)).toEqual(keysOf(client));
    expect(keysOf(client).slice(0, 3)).toEqual(['id', 'organization_id', 'status']);
  });
});
