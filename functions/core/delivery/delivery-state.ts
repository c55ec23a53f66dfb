/**
 * The delivery record's states and its named transitions (docs/data-model.md "The delivery record: states and transitions"),
 * as plain data: what each transition sets, removes and appends, and the state it must leave.
 * The store implementations (delivery-record.ts on DynamoDB, the tests' in-memory one) carry the
 * same Change out, so they cannot drift apart; the port they implement is below (DeliveryStore,
 * DeliveryQueue; delivery-port.ts picks one).
 */
import { createHash } from 'node:crypto';
import { keys, type DeliveryAttempt, type DeliveryMessage, type DeliveryStatus } from '../platform/model.js';
import { appendAttempts } from './attempt-log.js';

export type Key = { pk: string; sk: string };
export type StoredItem = Record<string, unknown>;
/** Which delivery a transition is about. */
export type DeliveryRef = Pick<DeliveryMessage, 'organizationId' | 'deliveryId'>;

/** Partitions of the due index: a sweep reads them in parallel, and no single one takes every parked write. */
export const DUE_SHARDS = 8;
/** The due index's keys of a delivery parked until `dueAtMs` (sparse: only parked records carry them). */
export function dueKeys(deliveryId: string, dueAtMs: number): { duePk: string; dueAt: number } {
  const shard = createHash('sha256').update(deliveryId).digest().readUInt32BE(0) % DUE_SHARDS;
  return { duePk: `due#${shard}`, dueAt: Math.round(dueAtMs) };
}
export const dueShards = (): string[] => Array.from({ length: DUE_SHARDS }, (_, n) => `due#${n}`);
/** A due-index entry: the record's key and when it falls due. */
export type DueKey = Key & { dueAt: number };
/** A position in the byCreated index (lib/topology.ts, keys only): a delivery record's key and its `createdAt`. */
export type CreatedKey = Key & { createdAt: string };
/** A page of the byCreated index, newest first: `since`/`until` bound `createdAt` (inclusive), `after` is where the previous page ended. */
export interface CreatedQuery { since?: string; until?: string; after?: CreatedKey; limit: number }

/** Where a record waits in the due index: until when, and the round of attempts its message carried. */
export interface Park { untilMs: number; round?: number }

/**
 * The named transitions (besides `recorded`, a put of the new record: DeliveryStore). Each is
 * conditional on the state it leaves (leaves()): a write that finds the record elsewhere changes
 * nothing and returns false. Each adds 1 to the record's `version` (none stored: 0), so a write
 * derived from a read can be made conditional on that read (`ifVersion`); `round` pins an
 * attempt's outcome to its round (DeliveryMessage.round): refused once a later redelivery began another.
 */
export type Transition = Step & {
  ifVersion?: number; round?: number;
  /**
   * The record as first recorded, for when none is stored: the fan-out puts no pending record, so
   * a delivery's first outcome (an attempt, a deferral, a failure) writes it whole, in this same
   * write (docs/data-model.md "The delivery record: states and transitions"). Not for `redelivered`
   * or `unparked`, which need a stored record. delivery-port.ts sets it from the message.
   */
  create?: StoredItem;
};
type Step =
  /** An attempt failed and will be retried at nextAttemptAt (parked in the due index when `park`). */
  | { to: 'attempted'; attempt: DeliveryAttempt; nextAttemptAt: string; park?: Park }
  /** An attempt succeeded (deliveredAt: its time). `unlessDeliveredAt`: not again if that very delivered write landed (a fallback). */
  | { to: 'delivered'; attempt: DeliveryAttempt; unlessDeliveredAt?: string }
  /** Failed for good, with the reason (and the last attempt, if one was made). */
  | { to: 'failed'; reason: string; attempt?: DeliveryAttempt }
  /** Not sent: the endpoint is disabled. */
  | { to: 'skipped'; reason: string }
  /** Not attempted now (isolation): a pending record waits in the due index until `untilMs`, no attempt used. */
  | { to: 'parked'; park: Park; reason: string }
  /**
   * Not attempted now, waiting on the queue (a delayed message) until `untilMs`, no attempt used:
   * written only for a delivery without a record yet (its first outcome), so lists show it held.
   */
  | { to: 'held'; untilMs: number; reason: string }
  /** Redelivered: pending again, a new round of attempts from now. */
  | { to: 'redelivered' }
  /** Its receives kept breaking off and the queue dead-lettered its message: failed, with the reason. */
  | { to: 'dead-lettered'; reason: string }
  /** The sweeper re-queued it: out of the due index, unless it was parked again since (`seenDueAt`); `key`: the stored one it read. */
  | { to: 'unparked'; seenDueAt: number; key: Key };

/** The state a transition must leave, as a condition both stores evaluate. */
export type Leaves =
  | {
    exists: true; status?: DeliveryStatus; notStatus?: DeliveryStatus; notDeliveredAt?: string;
    /** The version read (0: none stored). */
    version?: number;
    /** The round's start: no redelivery after it (redrivenAt absent or not later). */
    roundFrom?: string;
  }
  | { dueAt: number };

/**
 * What a transition writes: attribute values to set, attributes to remove, an attempt to append
 * (bounded); `create`: the record to start from when none is stored (it then holds whatever the
 * transition leaves: a pending record, version 0, no redelivery).
 */
export interface Change { set: StoredItem; remove: string[]; append?: DeliveryAttempt; leaves: Leaves; create?: StoredItem }

/**
 * Marks a received message whose attempt found no record (the fan-out puts none while pending):
 * its transitions, and those of its copies (`{ ...message }`: a deferral's), write the record whole
 * (Transition.create; delivery-port.ts). Set on the received object itself, so every step of its
 * handling (the attempt, the deferral, the batch's write) sees it; a symbol, so it is never
 * serialized into a queued message. A record that was read and is gone since is not written again.
 */
export const UNRECORDED = Symbol('unrecorded');
export function markUnrecorded<M extends DeliveryMessage>(message: M): M {
  (message as M & { [UNRECORDED]?: boolean })[UNRECORDED] = true;
  return message;
}
export const isUnrecorded = (ref: object): ref is DeliveryMessage & { round: number } =>
  (ref as { [UNRECORDED]?: boolean })[UNRECORDED] === true && (ref as DeliveryMessage).round !== undefined;

/**
 * A delivery's record as the fan-out records it (pending, no attempt yet), from its first message:
 * created `round` (the fan-out's time), kept `retentionDays`. The fan-out puts it only when its
 * first outcome is known there (skipped, too big); otherwise the first outcome writes it (Transition.create).
 */
export function firstRecord(message: Pick<DeliveryMessage, 'organizationId' | 'deliveryId' | 'endpointId' | 'payload'> & { round: number }, retentionDays: number): StoredItem {
  const at = new Date(message.round).toISOString();
  return {
    ...keys.delivery(message.organizationId, message.deliveryId), entity: 'delivery',
    id: message.deliveryId, organizationId: message.organizationId, endpointId: message.endpointId, eventId: message.payload.id, eventType: message.payload.type,
    status: 'pending', attempts: [], createdAt: at, updatedAt: at, expiresAt: Math.floor(message.round / 1000) + retentionDays * 86_400,
  };
}

const DUE = ['duePk', 'dueAt', 'dueRound', 'duePriorAttempts'];
const notDelivered: Leaves = { exists: true, notStatus: 'delivered' };

/** The due index's attributes of a parked record (and dueRound removed when the message had no round). */
function parkedAt(ref: DeliveryRef, park: Park): { set: StoredItem; remove: string[] } {
  const due = dueKeys(ref.deliveryId, park.untilMs);
  return {
    set: { duePk: due.duePk, dueAt: due.dueAt, ...(park.round === undefined ? {} : { dueRound: park.round }) },
    remove: park.round === undefined ? ['dueRound', 'duePriorAttempts'] : ['duePriorAttempts'],
  };
}

/** An outcome of an attempt (or of the checks before one): the status, leaving the due index. */
function outcome(ref: DeliveryRef, status: DeliveryStatus, now: string, extra: { attempt?: DeliveryAttempt; reason?: string; nextAttemptAt?: string; park?: Park }): Omit<Change, 'leaves'> {
  const due = extra.park ? parkedAt(ref, extra.park) : { set: {}, remove: DUE };
  return {
    set: {
      status, updatedAt: now, ...due.set,
      ...(extra.reason ? { reason: extra.reason } : {}),
      ...(extra.nextAttemptAt ? { nextAttemptAt: extra.nextAttemptAt } : {}),
      ...(status === 'delivered' ? { deliveredAt: extra.attempt?.at ?? now } : {}),
    },
    remove: ['deferredReason', ...due.remove, ...(status === 'delivered' ? ['nextAttemptAt'] : [])],
    ...(extra.attempt ? { append: extra.attempt } : {}),
  };
}

/** The Change a transition makes at `nowMs`. */
export function changeOf(ref: DeliveryRef, t: Transition, nowMs: number): Change {
  const change = stepOf(ref, t, new Date(nowMs).toISOString());
  if ('dueAt' in change.leaves) return change;
  return {
    ...change,
    ...(t.create && t.to !== 'redelivered' ? { create: t.create } : {}),
    leaves: {
      ...change.leaves,
      ...(t.ifVersion === undefined ? {} : { version: t.ifVersion }),
      ...(t.round === undefined ? {} : { roundFrom: new Date(t.round).toISOString() }),
    },
  };
}

function stepOf(ref: DeliveryRef, t: Step, now: string): Change {
  switch (t.to) {
    case 'attempted': return { ...outcome(ref, 'pending', now, t), leaves: notDelivered };
    case 'delivered': return { ...outcome(ref, 'delivered', now, t), leaves: { exists: true, ...(t.unlessDeliveredAt ? { notDeliveredAt: t.unlessDeliveredAt } : {}) } };
    case 'failed': return { ...outcome(ref, 'failed', now, t), leaves: notDelivered };
    case 'skipped': return { ...outcome(ref, 'skipped', now, t), leaves: notDelivered };
    case 'dead-lettered': return { ...outcome(ref, 'failed', now, t), leaves: { exists: true, status: 'pending' } };
    case 'parked': {
      const due = parkedAt(ref, t.park);
      return { set: { ...due.set, nextAttemptAt: new Date(t.park.untilMs).toISOString(), deferredReason: t.reason, updatedAt: now }, remove: due.remove, leaves: { exists: true, status: 'pending' } };
    }
    case 'held': return { set: { nextAttemptAt: new Date(t.untilMs).toISOString(), deferredReason: t.reason, updatedAt: now }, remove: [], leaves: { exists: true, status: 'pending' } };
    case 'redelivered': return {
      // A parked one leaves the due index: it is sent now.
      set: { status: 'pending', queuedAt: now, redrivenAt: now, updatedAt: now },
      remove: ['reason', 'nextAttemptAt', 'deferredReason', ...DUE],
      leaves: { exists: true },
    };
    case 'unparked': return { set: {}, remove: DUE, leaves: { dueAt: t.seenDueAt } };
  }
}

/** The record a transition writes: the key the sweeper read for `unparked`, else the delivery's. */
export const targetOf = (ref: DeliveryRef, t: Transition): Key => (t.to === 'unparked' ? t.key : keys.delivery(ref.organizationId, ref.deliveryId));

/** The version a stored record is at (none stored: 0). */
export const versionOf = (item: StoredItem | undefined): number => Number(item?.version ?? 0);

/** Whether `item` (undefined: none stored) is in the state a change leaves. */
export function holds(leaves: Leaves, item: StoredItem | undefined): boolean {
  if ('dueAt' in leaves) return item?.dueAt === leaves.dueAt;
  return item !== undefined
    && (leaves.status === undefined || item.status === leaves.status)
    && (leaves.notStatus === undefined || item.status !== leaves.notStatus)
    && (leaves.notDeliveredAt === undefined || item.deliveredAt !== leaves.notDeliveredAt)
    && (leaves.version === undefined || versionOf(item) === leaves.version)
    && (leaves.roundFrom === undefined || item.redrivenAt === undefined || String(item.redrivenAt) <= leaves.roundFrom);
}

/** The item after a change, its attempt log bounded (attempt-log.ts): what the DynamoDB update and its trim leave. */
export function applyChange(item: StoredItem, change: Change): StoredItem {
  const out: StoredItem = { ...item, ...change.set, version: versionOf(item) + 1 };
  for (const name of change.remove) if (!(name in change.set)) delete out[name];
  return change.append ? { ...out, ...appendAttempts(item as { attempts?: DeliveryAttempt[] }, change.append) } : out;
}

/** The queues a delivery message goes to. */
export type DeliveryQueueName = 'deliveryQueue' | 'deliverySlowQueue' | 'deliveryDlq';

/**
 * The delivery stage's store (docs/decisions.md "The delivery core's port"): reading the records,
 * and every write to them, as named transitions. DynamoDB in production (delivery-record.ts),
 * in memory in the tests of the delivery core; test/integration/delivery-core/contract.test.ts
 * holds both to one behaviour.
 */
export interface DeliveryStore {
  /** Items by key (delivery records or event items), missing ones absent. */
  get(keys: Key[], options?: { consistent?: boolean; projection?: string[] }): Promise<StoredItem[]>;
  /** One item by key (a GetItem: the attempt whose batch read failed reads its own). */
  getOne(key: Key, options?: { consistent?: boolean; projection?: string[] }): Promise<StoredItem | undefined>;
  /** An organization's delivery records (strongly consistent), in no order. */
  deliveriesOf(organizationId: string, options?: { projection?: string[] }): Promise<StoredItem[]>;
  /**
   * One page of an organization's delivery records by creation, newest first (then by key): at
   * most `limit` keys (event items have no `createdAt`, so they are not in it); `next` is where
   * the following page starts, absent at the end.
   */
  newestDeliveries(organizationId: string, query: CreatedQuery): Promise<{ keys: CreatedKey[]; next?: CreatedKey }>;
  /** The key of a delivery found by its id alone (the id index). */
  keyOf(deliveryId: string): Promise<Key | undefined>;
  /** The entries of one due shard due by `horizon`, at most `cap` (complete: false when capped). */
  dueIn(shard: string, horizon: number, cap: number): Promise<{ keys: DueKey[]; complete: boolean }>;
  /** Every pending delivery record not parked in the due index, and every event item (whose pending deliveries may have no record yet): after a restore. */
  requeueable(): Promise<StoredItem[]>;
  /** Recorded: new delivery records and their events' payload items, put whole (the caller found none stored). */
  recorded(items: StoredItem[]): Promise<void>;
  /** One named transition; false when the record is not in the state it leaves (nothing written). */
  transition(ref: DeliveryRef, t: Transition): Promise<boolean>;
}

/** The delivery stage's queue: messages sent, each after its delay (0..900 s). */
export interface DeliveryQueue {
  send(queue: DeliveryQueueName, entries: { message: DeliveryMessage; delaySeconds: number }[]): Promise<void>;
}
