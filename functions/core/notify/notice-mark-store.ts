/**
 * The sent marks: one item per (notice, recipient) in the idempotency table (`id = notice#<hash>`,
 * beside the lead endpoint's idempotency records, under a prefix of their own, gone after
 * MARK_TTL_DAYS by the table's TTL), the only module that writes them. The mailer claims a mark
 * before sending and marks it sent after (docs/notifications.md "Once per recipient"): a claim
 * held by a try in flight is a lease, which a crashed try leaves to expire.
 */
import { GetCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import { createHash } from 'node:crypto';
import type { Deps } from '../platform/deps.js';
import { depsPort } from '../platform/deps-port.js';

/** Longer than a notice can stay queued (14 days' retention is the queue's; its tries end within hours). */
export const MARK_TTL_DAYS = 14;

/** `claimed`: this try may send; `sent`: already sent, nothing to do; `busy`: another try holds the lease. */
export type Claim = 'claimed' | 'sent' | 'busy';

export interface NoticeMarkStore {
  /** Claims (organization, notice key, address) until `leaseUntil` (epoch ms), unless sent or leased to another try. */
  claim(mark: MarkId, now: number, leaseUntil: number): Promise<Claim>;
  markSent(mark: MarkId, now: number): Promise<void>;
  /** Gives a failed try's lease back, so the next try need not wait for it to expire. */
  release(mark: MarkId): Promise<void>;
}

export interface MarkId { organizationId: string; key: string; email: string }

/** The item's id: a hash, so neither the address nor the key is stored in the clear. */
export const markId = (m: MarkId) => `notice#${createHash('sha256').update(`${m.organizationId}\u0000${m.key}\u0000${m.email}`).digest('base64url')}`;
const expiresAt = (now: number) => Math.floor(now / 1000) + MARK_TTL_DAYS * 86_400;

export function dynamoNoticeMarkStore(deps: Deps): NoticeMarkStore {
  const TableName = deps.tables.idempotency;
  return {
    async claim(mark, now, leaseUntil) {
      try {
        await deps.doc.send(new UpdateCommand({
          TableName, Key: { id: markId(mark) },
          UpdateExpression: 'SET #s = :claimed, leaseUntil = :lease, expiration = :exp',
          ConditionExpression: 'attribute_not_exists(id) OR (#s = :claimed AND leaseUntil < :now)',
          ExpressionAttributeNames: { '#s': 'status' },
          ExpressionAttributeValues: { ':claimed': 'notice_claimed', ':lease': leaseUntil, ':exp': expiresAt(now), ':now': now },
        }));
        return 'claimed';
      } catch (error) {
        if (!(error instanceof ConditionalCheckFailedException)) throw error;
        const { Item } = await deps.doc.send(new GetCommand({ TableName, Key: { id: markId(mark) }, ConsistentRead: true }));
        return Item?.status === 'notice_sent' ? 'sent' : 'busy';
      }
    },
    async markSent(mark, now) {
      await deps.doc.send(new UpdateCommand({
        TableName, Key: { id: markId(mark) }, UpdateExpression: 'SET #s = :sent, sentAt = :now, expiration = :exp REMOVE leaseUntil',
        ExpressionAttributeNames: { '#s': 'status' }, ExpressionAttributeValues: { ':sent': 'notice_sent', ':now': now, ':exp': expiresAt(now) },
      }));
    },
    async release(mark) {
      try {
        await deps.doc.send(new UpdateCommand({
          TableName, Key: { id: markId(mark) }, UpdateExpression: 'SET leaseUntil = :zero',
          ConditionExpression: '#s = :claimed', ExpressionAttributeNames: { '#s': 'status' }, ExpressionAttributeValues: { ':zero': 0, ':claimed': 'notice_claimed' },
        }));
      } catch (error) {
        if (!(error instanceof ConditionalCheckFailedException)) throw error;
      }
    },
  };
}

export const noticeMarkPort = depsPort<NoticeMarkStore>('noticeMarkStore', dynamoNoticeMarkStore);
export const noticeMarkStore = noticeMarkPort.of;
