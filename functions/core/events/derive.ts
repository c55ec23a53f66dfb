/**
 * Stream change → events (docs/events.md). Pure and total: the same change always yields the same
 * events with the same ids (so a re-read stream batch can never produce a second delivery), and no
 * change makes it throw (a throwing record would block its shard). The rules, and what produces
 * nothing, are listed in docs/events.md.
 */
import { createHash } from 'node:crypto';
import { isDeepStrictEqual } from 'node:util';
import { orgIdOf, type EventPayload } from '../platform/model.js';
import { API_VERSION } from './catalog.js';
import type { EventType } from '../delivery/subscriptions.js';
import { isEntity, toPublic, type Entity } from './public-objects.js';
import type { Item, StreamChange } from './stream-changes.js';
import { leadEventId, submissionEventType, submissionOf, submissionRequestId } from './lead-events.js';

type Kind = Exclude<StreamChange['kind'], 'expire'>;

/** A change as the rules see it: public objects only, so storage and bookkeeping attributes are invisible. */
interface Change { kind: Kind; before?: Item; after?: Item }
interface Derived { type: EventType; previous?: Item }

/** Public fields whose change alone is bookkeeping, not a visible change. */
const BOOKKEEPING = new Set(['updated_at']);

/**
 * `evt_` + 22 base64url characters (132 bits) of SHA-256 over stream, position and type: the
 * sequence number is unique within a stream (on DynamoDB Local too, across restarts), and one
 * record can yield several events of different types.
 */
function eventIdFor(change: StreamChange, type: EventType): string {
  const source = `${change.stream}|${change.sequenceNumber}|${type}`;
  return 'evt_' + createHash('sha256').update(source).digest('base64url').slice(0, 22);
}

/** Old values of the visible fields that changed (null where a field was absent). */
function changedFields(before: Item, after: Item): Item {
  const previous: Item = {};
  for (const key of new Set([...Object.keys(before), ...Object.keys(after)])) {
    if (!BOOKKEEPING.has(key) && !isDeepStrictEqual(before[key], after[key])) previous[key] = before[key] ?? null;
  }
  return previous;
}

/** Payments in `after` that `before` does not hold: matched by id where both have one, else by value. */
function addedPayments(before: unknown, after: unknown): unknown[] {
  const unmatched = Array.isArray(before) ? [...before] : [];
  const idOf = (p: unknown) => (p && typeof p === 'object' && typeof (p as Item).id === 'string' ? (p as Item).id : undefined);
  return (Array.isArray(after) ? after : []).filter((payment) => {
    const at = unmatched.findIndex((old) => (idOf(old) && idOf(payment) ? idOf(old) === idOf(payment) : isDeepStrictEqual(old, payment)));
    if (at === -1) return true;
    unmatched.splice(at, 1);
    return false;
  });
}

const rules: Record<Entity, (change: Change) => Derived[]> = {
  client({ kind, before, after }) {
    if (kind === 'insert') return [{ type: 'client.created' }];
    if (kind === 'remove') return [{ type: 'client.deleted' }];
    const previous = changedFields(before!, after!);
    return Object.keys(previous).length > 0 ? [{ type: 'client.updated', previous }] : [];
  },
  work_order({ kind, before, after }) {
    // Created already completed: subscribers to `completed` still hear of it (no `previous`).
    if (kind === 'insert') return [{ type: 'work_order.created' }, ...(after!.status === 'completed' ? [{ type: 'work_order.completed' as const }] : [])];
    if (kind === 'remove') return [{ type: 'work_order.deleted' }];
    if (isDeepStrictEqual(before!.status, after!.status)) return []; // other edits of a work order are not events
    const previous = { status: before!.status ?? null };
    return [{ type: 'work_order.status_changed', previous }, ...(after!.status === 'completed' ? [{ type: 'work_order.completed' as const, previous }] : [])];
  },
  invoice({ kind, before, after }) {
    if (kind === 'remove') return [];
    const out: Derived[] = kind === 'insert' ? [{ type: 'invoice.created' }] : [];
    if (after!.sent_at && !before?.sent_at) out.push({ type: 'invoice.sent' });
    // One event per change that records payments, however many it adds; `previous.payments` lets a receiver diff.
    if (addedPayments(before?.payments, after!.payments).length > 0) out.push({ type: 'invoice.paid', previous: { payments: before?.payments ?? [] } });
    return out;
  },
  booking: ({ kind }) => (kind === 'insert' ? [{ type: 'booking.received' }] : []),
};

/**
 * The tenant of a record is its partition key (`ORG#<id>`, docs/architecture.md#tenancy), never a data attribute: an
 * image whose `organization_id` disagrees with the key (or is missing) makes the record a mismatch,
 * which yields no event at all rather than one for either organization.
 */
function tenantOf(change: StreamChange, images: Item[]): { organizationId?: string; mismatch: boolean } {
  const keyPk = typeof change.keys.pk === 'string' ? change.keys.pk : images[0].pk;
  const organizationId = typeof keyPk === 'string' && keyPk.startsWith('ORG#') && keyPk.length > 4 ? orgIdOf(keyPk) : undefined;
  const agrees = organizationId !== undefined && images.every((i) => i.pk === keyPk && i.organization_id === organizationId);
  return agrees ? { organizationId, mismatch: false } : { organizationId, mismatch: true };
}

const storedTime = (item: Item | undefined): number | undefined =>
  [item?.updated_at, item?.created_at].map((v) => (typeof v === 'string' ? Date.parse(v) : NaN)).find((t) => !Number.isNaN(t));

/**
 * When the change happened: the stream's time, but never earlier than the item's own
 * `updated_at` (`created_at` where it has none) — the image the change left (the old one for a
 * deletion). The stream time is approximate (seconds on AWS; on DynamoDB Local rounded down and
 * seen tens of seconds early), so alone it can precede the change it reports.
 */
function timestampOf(change: StreamChange, item: Item): string {
  const times = [change.approximateCreationTime, storedTime(item)].filter((t): t is number => t !== undefined);
  // Last resort for a hand-made record without times; real stream records always carry one.
  return new Date(times.length ? Math.max(...times) : Date.now()).toISOString();
}

/** What one change yields; `tenantMismatch` names the key's organization when the change was dropped for that. */
export interface Derivation { events: EventPayload[]; tenantMismatch?: { organizationId?: string } }

/**
 * The attribute `crm tables import` sets on each item it restores: a change that sets a new one is
 * a restore writing back what the receivers already heard of, and yields no event
 * (docs/operations.md "Restore"). An update that keeps it is an ordinary change.
 */
export const restoredAtAttribute = 'restoredAt';
const isRestore = (newItem?: Item, oldItem?: Item) =>
  newItem?.[restoredAtAttribute] !== undefined && newItem[restoredAtAttribute] !== oldItem?.[restoredAtAttribute];

export function derive(change: StreamChange): Derivation {
  const none: Derivation = { events: [] };
  const { kind, newImage: newItem, oldImage: oldItem } = change;
  if (kind === 'expire' || isRestore(newItem, oldItem)) return none;
  // The images a change needs (the stream view is NEW_AND_OLD_IMAGES; anything less yields nothing).
  if ((kind !== 'remove' && !newItem) || (kind !== 'insert' && !oldItem)) return none;
  const item = (newItem ?? oldItem)!;
  const entity = item.entity;
  if (!isEntity(entity) || (oldItem && newItem && oldItem.entity !== newItem.entity)) return none;
  const tenant = tenantOf(change, [newItem, oldItem].filter((i): i is Item => !!i));
  if (tenant.mismatch) return { events: [], tenantMismatch: { organizationId: tenant.organizationId } };
  const organizationId = tenant.organizationId!;

  const before = oldItem && toPublic(entity, oldItem);
  const after = newItem && toPublic(entity, newItem);
  const object = (after ?? before)!;
  const timestamp = timestampOf(change, item);
  // A lead's submission: an id the settings trail derives from the client (lead-events.ts).
  const submission = submissionOf(kind, oldItem, newItem);
  const idOf = (type: EventType) => (submission !== undefined && type === submissionEventType(submission)
    ? leadEventId(organizationId, newItem!.id as string, submission, submissionRequestId(newItem!, submission)) : eventIdFor(change, type));
  return {
    events: rules[entity]({ kind, before, after }).map(({ type, previous }) => ({
      id: idOf(type),
      type,
      api_version: API_VERSION,
      timestamp,
      organization_id: organizationId,
      data: { object: structuredClone(object), ...(previous ? { previous } : {}) },
    })),
  };
}
