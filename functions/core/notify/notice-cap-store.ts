/**
 * The lead notices' cap counter (docs/notifications.md "Bulk-safe: the cap"): one item per
 * organization per window in the rateWindows table (`NOTICES#<organizationId>#<window start>`,
 * kept a day by TTL), counting the lead notices of the window exactly. The fan-out counts a stream
 * batch's leads of an organization and window with one conditional write (not one per lead), and
 * the item remembers what it told every batch (`b_<batch>`: how many the window had counted before
 * it), so a batch retried in any order, beside any other lane, gets its first answer and is never
 * counted twice. The mailer claims the window's count once, when it sends the window's summary
 * (`summarized`): a batch counted after that claim learns it, and its leads go into a follow-up
 * summary of their own (events/lead-notices.ts), so no lead is ever dropped.
 * The only module that reads or writes these items; tests use the twin
 * (test/support/stores/memory-notice-cap-store.ts) through `noticeCapPort.with`.
 */
import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import type { Deps } from '../platform/deps.js';
import { isConditionFailure } from '../platform/dynamo-store.js';
import { depsPort } from '../platform/deps-port.js';

export interface LeadCount {
  /** Lead notices the window had counted before this batch's (the same answer every time the batch asks). */
  before: number;
  /** The window's count the summary claimed when it was sent, if it was: leads counted after it are not in it. */
  summarized?: number;
}

export interface NoticeCapStore {
  /**
   * Counts `count` lead notices of a stream batch (`batch`: an id of the batch's leads of this
   * organization and window) in the window starting at `windowStart` (epoch ms). The same batch
   * counted again (a stream retry, however many batches of other lanes came between) is not
   * counted twice: it gets the `before` it got the first time.
   */
  countLeadNotices(organizationId: string, windowStart: number, batch: string, count: number, expiresAt: number): Promise<LeadCount>;
  /**
   * The window's count as its summary reports it: the first call fixes it (the leads counted so
   * far), every later call answers the same. Undefined when the window's counter is gone (expired).
   */
  claimSummary(organizationId: string, windowStart: number): Promise<number | undefined>;
}

const capKey = (organizationId: string, windowStart: number) => ({ pk: `NOTICES#${organizationId}#${windowStart}` });
/** A batch's attribute: top-level (a nested map would need to exist before its first entry). */
const batchAttribute = (batch: string) => `b_${batch}`;

const countOf = (item: Record<string, unknown> | undefined, batch: string): LeadCount => ({
  before: Number(item?.[batchAttribute(batch)] ?? 0),
  ...(item?.summarized !== undefined ? { summarized: Number(item.summarized) } : {}),
});

export function dynamoNoticeCapStore(deps: Deps): NoticeCapStore {
  return {
    async countLeadNotices(organizationId, windowStart, batch, count, expiresAt) {
      try {
        // Every operand reads the item as it was: `#b` gets the count before this batch's ADD.
        const out = await deps.doc.send(new UpdateCommand({
          TableName: deps.tables.rateWindows,
          Key: capKey(organizationId, windowStart),
          UpdateExpression: 'ADD leads :n SET #b = if_not_exists(leads, :zero), expiresAt = :e',
          ConditionExpression: 'attribute_not_exists(#b)',
          ExpressionAttributeNames: { '#b': batchAttribute(batch) },
          ExpressionAttributeValues: { ':n': count, ':zero': 0, ':e': expiresAt },
          ReturnValues: 'ALL_NEW',
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
        }));
        return countOf(out.Attributes, batch);
      } catch (error) {
        // The same batch again: what it was told the first time (its notices carry the same keys).
        if (isConditionFailure(error)) return countOf(error.Item ? unmarshall(error.Item) : undefined, batch);
        throw error;
      }
    },

    async claimSummary(organizationId, windowStart) {
      try {
        const out = await deps.doc.send(new UpdateCommand({
          TableName: deps.tables.rateWindows,
          Key: capKey(organizationId, windowStart),
          UpdateExpression: 'SET summarized = if_not_exists(summarized, leads)',
          ConditionExpression: 'attribute_exists(leads)',
          ReturnValues: 'UPDATED_NEW',
        }));
        return Number(out.Attributes?.summarized);
      } catch (error) {
        if (isConditionFailure(error)) return undefined;
        throw error;
      }
    },
  };
}

export const noticeCapPort = depsPort<NoticeCapStore>('noticeCapStore', dynamoNoticeCapStore);
