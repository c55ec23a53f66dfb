/**
 * The lead notices' cap counter (docs/notifications.md "Bulk-safe: the cap"): one item per
 * organization per window in the rateWindows table (`NOTICES#<organizationId>#<window start>`,
 * kept a day by TTL), counting the lead notices of the window exactly. The fan-out counts a stream
 * batch's leads of an organization and window with one conditional write (not one per lead), and
 * the item remembers what it told every batch (`b_<batch>`: how many the window had counted before
 * it), so a batch retried in any order, beside any other lane, gets its first answer and is never
 * counted twice. The mailer claims the window's count once per summary round, when it sends it
 * (`round_<k>`): a batch counted after the last claim learns it, and its leads go into the next
 * round's follow-up summary (events/lead-notices.ts), so no lead is ever dropped.
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
  /**
   * The window's summaries claimed so far, in order: the count each reported up to (round 1 is the
   * window's summary, round k + 1 a follow-up of the leads counted after round k's claim).
   */
  claims: number[];
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
   * The window's count as its summary of `round` reports it (1: the window's summary; 2, 3, …: the
   * follow-ups): the first call fixes it (the leads counted so far), every later call answers the
   * same. With it, what the round before reported (the cap for round 1). Undefined when the
   * window's counter is gone (expired).
   */
  claimSummary(organizationId: string, windowStart: number, round: number): Promise<{ upTo: number; from?: number } | undefined>;
}

const capKey = (organizationId: string, windowStart: number) => ({ pk: `NOTICES#${organizationId}#${windowStart}` });
/** A batch's attribute: top-level (a nested map would need to exist before its first entry). */
const batchAttribute = (batch: string) => `b_${batch}`;

const roundAttribute = (round: number) => `round_${round}`;

/** The claims an item holds, rounds 1, 2, … up to the first unclaimed one. */
const claimsOf = (item: Record<string, unknown> | undefined): number[] => {
  const claims: number[] = [];
  for (let round = 1; item?.[roundAttribute(round)] !== undefined; round++) claims.push(Number(item[roundAttribute(round)]));
  return claims;
};

const countOf = (item: Record<string, unknown> | undefined, batch: string): LeadCount => ({ before: Number(item?.[batchAttribute(batch)] ?? 0), claims: claimsOf(item) });

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

    async claimSummary(organizationId, windowStart, round) {
      try {
        const out = await deps.doc.send(new UpdateCommand({
          TableName: deps.tables.rateWindows,
          Key: capKey(organizationId, windowStart),
          UpdateExpression: 'SET #r = if_not_exists(#r, leads)',
          ConditionExpression: 'attribute_exists(leads)',
          ExpressionAttributeNames: { '#r': roundAttribute(round) },
          ReturnValues: 'ALL_NEW',
        }));
        const claims = claimsOf(out.Attributes);
        return { upTo: Number(out.Attributes?.[roundAttribute(round)]), ...(round > 1 && claims[round - 2] !== undefined ? { from: claims[round - 2] } : {}) };
      } catch (error) {
        if (isConditionFailure(error)) return undefined;
        throw error;
      }
    },
  };
}

export const noticeCapPort = depsPort<NoticeCapStore>('noticeCapStore', dynamoNoticeCapStore);
