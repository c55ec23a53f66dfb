/**
 * The lead notices' cap counter (docs/notifications.md "The notices"): one item per organization per
 * window in the rateWindows table (`NOTICES#<organizationId>#<window start>`, kept a day by TTL),
 * counting the lead notices the window has produced. The fan-out counts a stream batch's leads of
 * an organization with one conditional write (not one per lead); the counter decides which leads
 * are mailed one by one and which fold into the window's summary (events/lead-notices.ts).
 * The only module that reads or writes these items; tests use the twin
 * (test/support/stores/memory-notice-cap-store.ts) through `noticeCapPort.with`.
 */
import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import type { Deps } from '../platform/deps.js';
import { isConditionFailure } from '../platform/dynamo-store.js';
import { depsPort } from '../platform/deps-port.js';

export interface NoticeCapStore {
  /**
   * Counts `count` lead notices of a stream batch (`batch`: an id of the batch's leads) in the
   * organization's window starting at `windowStart` (epoch ms); answers how many the window had
   * counted before them. The same batch counted again (a stream retry) is not counted twice: it
   * answers what the first count answered. Only the organization's last batch is remembered: a
   * lane retries its failed batch before it moves on, so a retry meets its own count (a bisected
   * retry counts its halves again: fewer leads mailed one by one, never more).
   */
  countLeadNotices(organizationId: string, windowStart: number, batch: string, count: number, expiresAt: number): Promise<number>;
}

const capKey = (organizationId: string, windowStart: number) => ({ pk: `NOTICES#${organizationId}#${windowStart}` });

export function dynamoNoticeCapStore(deps: Deps): NoticeCapStore {
  return {
    async countLeadNotices(organizationId, windowStart, batch, count, expiresAt) {
      try {
        const out = await deps.doc.send(new UpdateCommand({
          TableName: deps.tables.rateWindows,
          Key: capKey(organizationId, windowStart),
          UpdateExpression: 'ADD leads :n SET lastBatch = :b, lastBefore = if_not_exists(leads, :zero), expiresAt = :e',
          ConditionExpression: 'attribute_not_exists(lastBatch) OR lastBatch <> :b',
          ExpressionAttributeValues: { ':n': count, ':b': batch, ':zero': 0, ':e': expiresAt },
          ReturnValues: 'UPDATED_NEW',
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
        }));
        return Number(out.Attributes?.leads ?? count) - count;
      } catch (error) {
        // The same batch again: what it was told the first time (its notices carry the same keys).
        if (isConditionFailure(error)) return Number(error.Item ? unmarshall(error.Item).lastBefore ?? 0 : 0);
        throw error;
      }
    },
  };
}

export const noticeCapPort = depsPort<NoticeCapStore>('noticeCapStore', dynamoNoticeCapStore);
