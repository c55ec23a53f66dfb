/**
 * Notices a producer could not hand to the notices queue (docs/notifications.md "Once, never
 * twice"), kept until the delivery sweeper re-drives them (notify/produce.ts redriveUnqueuedNotices):
 * one item per hand-over in the deliveries table, all in one partition (`UNQUEUED_NOTICES`, written
 * only while the notices queue fails, read by one Query a minute), kept 14 days by TTL like a sent
 * mark. Not a delivery record: the statistics' stream filter (`DELIVERY#`) and the `byCreated` index
 * (no `createdAt`) never see it. The only module that reads or writes these items; tests use
 * `unqueuedNoticesPort.with` and an in-memory twin.
 */
import { createHash } from 'node:crypto';
import { DeleteCommand, PutCommand, QueryCommand } from '@aws-sdk/lib-dynamodb';
import type { Deps } from '../platform/deps.js';
import { depsPort } from '../platform/deps-port.js';
import type { NoticeMessage } from './notice.js';

export const UNQUEUED_NOTICES_PK = 'UNQUEUED_NOTICES';
const KEEP_DAYS = 14;

export interface UnqueuedNotices { id: string; notices: NoticeMessage[] }

export interface UnqueuedNoticesStore {
  /** Keeps notices for a later hand-over (the same notices kept twice are one item). */
  keep(notices: NoticeMessage[], now: number): Promise<void>;
  /** What waits, oldest first, at most `limit` items. */
  waiting(limit: number): Promise<UnqueuedNotices[]>;
  /** Handed over: forgotten. */
  forget(id: string): Promise<void>;
}

const idOf = (notices: NoticeMessage[]) => createHash('sha256').update(notices.map((n) => n.key).join('\n')).digest('base64url').slice(0, 22);

export function dynamoUnqueuedNoticesStore(deps: Deps): UnqueuedNoticesStore {
  const TableName = deps.tables.deliveries;
  return {
    async keep(notices, now) {
      const id = `${new Date(now).toISOString()}#${idOf(notices)}`;
      await deps.doc.send(new PutCommand({
        TableName,
        Item: { pk: UNQUEUED_NOTICES_PK, sk: id, entity: 'unqueued_notices', notices: JSON.stringify(notices), expiresAt: Math.ceil(now / 1000) + KEEP_DAYS * 86_400 },
      }));
    },
    async waiting(limit) {
      const { Items = [] } = await deps.doc.send(new QueryCommand({
        TableName, KeyConditionExpression: 'pk = :p', ExpressionAttributeValues: { ':p': UNQUEUED_NOTICES_PK }, ConsistentRead: true, Limit: limit,
      }));
      return Items.map((item) => ({ id: String(item.sk), notices: JSON.parse(String(item.notices)) as NoticeMessage[] }));
    },
    async forget(id) {
      await deps.doc.send(new DeleteCommand({ TableName, Key: { pk: UNQUEUED_NOTICES_PK, sk: id } }));
    },
  };
}

export const unqueuedNoticesPort = depsPort<UnqueuedNoticesStore>('unqueuedNoticesStore', dynamoUnqueuedNoticesStore);
