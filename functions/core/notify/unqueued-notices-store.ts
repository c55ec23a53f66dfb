/**
 * Notices a producer could not hand to the notices queue (docs/notifications.md "Once, never
 * twice"), kept until the delivery sweeper re-drives them (notify/produce.ts redriveUnqueuedNotices),
 * in the deliveries table:
 * - one item per organization and piece of at most ~300 KB of a hand-over (a lead notice can be
 *   ~22 KB: a whole batch's would pass DynamoDB's 400 KB item limit), keyed by the organization and
 *   the piece's notice keys, so the same notices kept twice are one item;
 * - spread over 8 partitions (`UNQUEUED_NOTICES#0` … `#7`, by that key's hash), so a notices-queue
 *   outage's writers (every lane of the fan-out) do not meet on one partition;
 * - kept 14 days by TTL like a sent mark, each counting the hand-overs the queue refused for good
 *   (`tries`; an outage counts none); one refused too often is set aside (`UNQUEUED_NOTICES#ASIDE`, kept 14 days from then) for an
 *   operator (docs/operations.md "Unqueued notices").
 * Nothing outlives its organization by more than those 14 days (the organization's id leads every
 * sort key). Items of the previous version (one partition, `UNQUEUED_NOTICES`, the time first in
 * the sort key) are still read and re-driven. Not a delivery record: the statistics' stream filter
 * (`DELIVERY#`) and the `byCreated` index (no `createdAt`) never see these. The only module that
 * reads or writes these items; tests use `unqueuedNoticesPort.with` and the in-memory twin
 * (test/support/stores/memory-unqueued-notices.ts).
 */
import { createHash } from 'node:crypto';
import { DeleteCommand, PutCommand, QueryCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import type { Deps } from '../platform/deps.js';
import { isConditionFailure } from '../platform/dynamo-store.js';
import { depsPort } from '../platform/deps-port.js';
import type { NoticeMessage } from './notice.js';

/** The previous version's one partition: still read until its items are re-driven (or expire). */
export const UNQUEUED_NOTICES_PK = 'UNQUEUED_NOTICES';
export const UNQUEUED_NOTICES_SHARDS = 8;
/** Where an item that failed too often rests for an operator. */
export const SET_ASIDE_PK = 'UNQUEUED_NOTICES#ASIDE';
/** Every partition the sweeper reads, the previous version's last. */
export const UNQUEUED_PARTITIONS: readonly string[] = [...Array.from({ length: UNQUEUED_NOTICES_SHARDS }, (_, n) => `${UNQUEUED_NOTICES_PK}#${n}`), UNQUEUED_NOTICES_PK];
/** A piece's notices, as JSON, at most this many bytes (DynamoDB's item limit is 400 KB). */
export const MAX_PIECE_BYTES = 300_000;
const KEEP_DAYS = 14;

export interface UnqueuedNotices {
  /** The item (its partition and sort key): what forget, failed and setAside take. */
  id: string;
  notices: NoticeMessage[];
  /** When they were first kept (epoch ms). */
  keptAt: number;
  /** Hand-overs refused for good so far. */
  tries: number;
}

export interface UnqueuedNoticesStore {
  /** Keeps notices for a later hand-over (the same notices kept twice are one item). */
  keep(notices: NoticeMessage[], now: number): Promise<void>;
  /** A page of what waits in one of UNQUEUED_PARTITIONS (or SET_ASIDE_PK), at most `limit` items, and where the next page starts. */
  waiting(partition: string, limit: number, after?: string): Promise<{ items: UnqueuedNotices[]; next?: string }>;
  /** Handed over: forgotten. */
  forget(id: string): Promise<void>;
  /** A hand-over of it was refused for good: counted; answers its tries so far. */
  failed(id: string): Promise<number>;
  /** Failed too often: moved to SET_ASIDE_PK (the reason kept with it), out of the sweeper's way. */
  setAside(kept: UnqueuedNotices, reason: string, now: number): Promise<void>;
}

const hashOf = (notices: NoticeMessage[]) => createHash('sha256').update(notices.map((n) => n.key).join('\n')).digest('base64url').slice(0, 22);
const expiresAtOf = (now: number) => Math.ceil(now / 1000) + KEEP_DAYS * 86_400;
const idOf = (pk: string, sk: string) => `${pk}|${sk}`;
const keyOf = (id: string) => {
  const at = id.indexOf('|');
  return { pk: id.slice(0, at), sk: id.slice(at + 1) };
};

/** A hand-over's notices in pieces: one organization each, at most MAX_PIECE_BYTES of JSON each. */
export function piecesOf(notices: NoticeMessage[]): NoticeMessage[][] {
  const byOrganization = new Map<string, NoticeMessage[]>();
  for (const notice of notices) byOrganization.set(notice.organizationId, [...byOrganization.get(notice.organizationId) ?? [], notice]);
  const pieces: NoticeMessage[][] = [];
  for (const own of byOrganization.values()) {
    let piece: NoticeMessage[] = [];
    let bytes = 2;
    for (const notice of own) {
      const size = Buffer.byteLength(JSON.stringify(notice)) + 1;
      if (piece.length && bytes + size > MAX_PIECE_BYTES) {
        pieces.push(piece);
        piece = [];
        bytes = 2;
      }
      piece.push(notice);
      bytes += size;
    }
    if (piece.length) pieces.push(piece);
  }
  return pieces;
}

/** Where a piece is kept: its partition by its key's hash, its sort key the organization and the hash. */
export function placeOf(piece: NoticeMessage[]): { pk: string; sk: string } {
  const hash = hashOf(piece);
  const shard = createHash('sha256').update(hash).digest()[0] % UNQUEUED_NOTICES_SHARDS;
  return { pk: `${UNQUEUED_NOTICES_PK}#${shard}`, sk: `${piece[0].organizationId}#${hash}` };
}

function read(item: Record<string, unknown>): UnqueuedNotices {
  const sk = String(item.sk);
  // The previous version's items hold no keptAt: their sort key starts with the time they were kept.
  const keptAt = typeof item.keptAt === 'number' ? item.keptAt : Date.parse(sk.split('#')[0]);
  return { id: idOf(String(item.pk), sk), notices: JSON.parse(String(item.notices)) as NoticeMessage[], keptAt: Number.isNaN(keptAt) ? 0 : keptAt, tries: Number(item.tries ?? 0) };
}

export function dynamoUnqueuedNoticesStore(deps: Deps): UnqueuedNoticesStore {
  const TableName = deps.tables.deliveries;
  return {
    async keep(notices, now) {
      await Promise.all(piecesOf(notices).map(async (piece) => {
        try {
          await deps.doc.send(new PutCommand({
            TableName,
            Item: { ...placeOf(piece), entity: 'unqueued_notices', notices: JSON.stringify(piece), keptAt: now, tries: 0, expiresAt: expiresAtOf(now) },
            ConditionExpression: 'attribute_not_exists(pk)',
          }));
        } catch (error) {
          if (!isConditionFailure(error)) throw error; // the same notices already kept: one item
        }
      }));
    },
    async waiting(partition, limit, after) {
      const { Items = [], LastEvaluatedKey } = await deps.doc.send(new QueryCommand({
        TableName, KeyConditionExpression: 'pk = :p', ExpressionAttributeValues: { ':p': partition }, ConsistentRead: true, Limit: limit,
        ...(after ? { ExclusiveStartKey: { pk: partition, sk: after } } : {}),
      }));
      return { items: Items.map(read), ...(LastEvaluatedKey ? { next: String(LastEvaluatedKey.sk) } : {}) };
    },
    async forget(id) {
      await deps.doc.send(new DeleteCommand({ TableName, Key: keyOf(id) }));
    },
    async failed(id) {
      try {
        const out = await deps.doc.send(new UpdateCommand({
          TableName, Key: keyOf(id), UpdateExpression: 'ADD tries :one', ConditionExpression: 'attribute_exists(pk)',
          ExpressionAttributeValues: { ':one': 1 }, ReturnValues: 'UPDATED_NEW',
        }));
        return Number(out.Attributes?.tries);
      } catch (error) {
        if (isConditionFailure(error)) return 0; // gone meanwhile (another sweep handed it over)
        throw error;
      }
    },
    async setAside(kept, reason, now) {
      const { sk } = keyOf(kept.id);
      await deps.doc.send(new PutCommand({
        TableName,
        Item: { pk: SET_ASIDE_PK, sk, entity: 'unqueued_notices', notices: JSON.stringify(kept.notices), keptAt: kept.keptAt, tries: kept.tries, reason, setAsideAt: now, expiresAt: expiresAtOf(now) },
      }));
      await deps.doc.send(new DeleteCommand({ TableName, Key: keyOf(kept.id) }));
    },
  };
}

export const unqueuedNoticesPort = depsPort<UnqueuedNoticesStore>('unqueuedNoticesStore', dynamoUnqueuedNoticesStore);
