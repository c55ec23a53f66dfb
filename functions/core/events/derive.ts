/**
 * Stream record → events (DESIGN §10). Pure: the same record always yields the same events with
 * the same ids, so a re-read stream batch can never produce a second delivery.
 */
import { createHash } from 'node:crypto';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import type { AttributeValue } from '@aws-sdk/client-dynamodb';
import type { DynamoDBRecord } from 'aws-lambda';
import type { EventPayload } from '../model.js';
import { API_VERSION, toPublic, type EventType } from './catalog.js';

type Item = Record<string, unknown>;

/** Fields whose change alone is bookkeeping, not a visible change of a client. */
const BOOKKEEPING = new Set(['updated_at', 'expiresAt']);

/**
 * True for deletions DynamoDB made itself. AWS reports a TTL expiry as REMOVE by the service
 * principal; DynamoDB Local reports it with an event name the SDK does not know.
 */
export function isTtlExpiry(record: DynamoDBRecord): boolean {
  const identity = (record as { userIdentity?: { type?: string; principalId?: string } }).userIdentity;
  if (record.eventName === 'REMOVE') return identity?.type === 'Service' && identity.principalId === 'dynamodb.amazonaws.com';
  return !['INSERT', 'MODIFY', 'REMOVE'].includes(String(record.eventName));
}

const image = (av: Record<string, unknown> | undefined): Item | undefined =>
  av ? unmarshall(av as Record<string, AttributeValue>) : undefined;

function eventId(record: DynamoDBRecord, type: EventType): string {
  const source = `${record.eventSourceARN ?? ''}|${record.dynamodb?.SequenceNumber ?? ''}|${type}`;
  return 'evt_' + createHash('sha256').update(source).digest('base64url').slice(0, 22);
}

const same = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);

/** Old values of the visible fields that changed (null where a field did not exist). */
function changedFields(oldItem: Item, newItem: Item): Item {
  const previous: Item = {};
  const publicOld = toPublic(oldItem);
  const publicNew = toPublic(newItem);
  for (const key of new Set([...Object.keys(publicOld), ...Object.keys(publicNew)])) {
    if (BOOKKEEPING.has(key)) continue;
    if (!same(publicOld[key], publicNew[key])) previous[key] = publicOld[key] ?? null;
  }
  return previous;
}

export function deriveEvents(record: DynamoDBRecord): EventPayload[] {
  if (isTtlExpiry(record)) return [];
  const newItem = image(record.dynamodb?.NewImage);
  const oldItem = image(record.dynamodb?.OldImage);
  const item = newItem ?? oldItem;
  if (!item || typeof item.organization_id !== 'string') return [];
  const entity = item.entity;
  const seconds = record.dynamodb?.ApproximateCreationDateTime;
  const timestamp = seconds ? new Date(seconds * 1000).toISOString() : String(item.updated_at ?? item.created_at ?? new Date().toISOString());
  const make = (type: EventType, object: Item, previous?: Item): EventPayload => ({
    id: eventId(record, type), type, api_version: API_VERSION, timestamp, organization_id: item.organization_id as string,
    data: { object: toPublic(object), ...(previous ? { previous } : {}) },
  });

  const kind = record.eventName;
  const out: EventPayload[] = [];
  if (entity === 'client') {
    if (kind === 'INSERT') out.push(make('client.created', newItem!));
    if (kind === 'MODIFY' && oldItem && newItem) {
      const previous = changedFields(oldItem, newItem);
      if (Object.keys(previous).length > 0) out.push(make('client.updated', newItem, previous));
    }
    if (kind === 'REMOVE') out.push(make('client.deleted', oldItem!));
  } else if (entity === 'work_order') {
    if (kind === 'INSERT') out.push(make('work_order.created', newItem!));
    if (kind === 'MODIFY' && oldItem && newItem && oldItem.status !== newItem.status) {
      out.push(make('work_order.status_changed', newItem, { status: oldItem.status }));
      if (newItem.status === 'completed') out.push(make('work_order.completed', newItem, { status: oldItem.status }));
    }
    if (kind === 'REMOVE') out.push(make('work_order.deleted', oldItem!));
  } else if (entity === 'invoice') {
    if (kind === 'INSERT') {
      out.push(make('invoice.created', newItem!));
      if (newItem!.sent_at) out.push(make('invoice.sent', newItem!));
    }
    if (kind === 'MODIFY' && oldItem && newItem) {
      if (!oldItem.sent_at && newItem.sent_at) out.push(make('invoice.sent', newItem));
      const before = Array.isArray(oldItem.payments) ? oldItem.payments : [];
      const after = Array.isArray(newItem.payments) ? newItem.payments : [];
      if (after.length > before.length) out.push(make('invoice.paid', newItem, { payments: before }));
    }
  } else if (entity === 'booking') {
    if (kind === 'INSERT') out.push(make('booking.received', newItem!));
  }
  return out;
}
