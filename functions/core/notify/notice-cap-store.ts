/**
 * The lead notices' cap counter (docs/notifications.md "Bulk-safe: the cap"): one item per
 * organization per window in the rateWindows table (`NOTICES#<organizationId>#<window start>`,
 * kept a day by TTL), counting the lead notices of the window. The fan-out counts a stream batch's
 * leads of an organization and window with one read and two small writes (not one per lead), and
 * each batch's answer (how many the window had counted before it) is an item of its own
 * (`NOTICES#<organizationId>#<window start>#<batch>`, the same TTL), so a batch retried in any
 * order, beside any other lane, gets its first answer and is not counted twice, and the counter stays
 * a few attributes however busy the window (one write unit an update). Items the previous version
 * wrote (an answer per batch as `b_<batch>` on the counter) are still read. The mailer claims the
 * window's count once per summary round, when it sends it (`round_<k>` on the counter): a batch
 * counted after the last claim learns it, and its leads go into the next round's follow-up summary
 * (events/lead-notices.ts), so no lead is dropped. Not exact under a stream's bisection: a bisected
 * batch's halves are new batches, so leads counted before the split count again (they fold sooner).
 * The only module that reads or writes these items; tests use the twin
 * (test/support/stores/memory-notice-cap-store.ts) through `noticeCapPort.with`.
 */
import { GetCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import type { Deps } from '../platform/deps.js';
import { isConditionFailure } from '../platform/dynamo-store.js';
import { depsPort } from '../platform/deps-port.js';
import { logger } from '../platform/observability.js';
import { BACKOFFS, retry } from '../platform/retry.js';

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
   * counted twice: it gets the `before` it got the first time. `claims` are read only when the
   * batch has leads past `cap` (the only leads they matter to); otherwise empty. Throws only when
   * the batch was not counted; counted, a failure after (its answer, the claims) answers without
   * claims (docs/notifications.md "Counted once per batch").
   */
  countLeadNotices(organizationId: string, windowStart: number, batch: string, count: number, expiresAt: number, cap: number): Promise<LeadCount>;
  /**
   * The window's count as its summary of `round` reports it (1: the window's summary; 2, 3, …: the
   * follow-ups): the first call fixes it (the leads counted so far), every later call answers the
   * same. With it, what the round before reported (the cap for round 1). Undefined when the
   * window's counter is gone (expired).
   */
  claimSummary(organizationId: string, windowStart: number, round: number): Promise<{ upTo: number; from?: number } | undefined>;
}

/** Tries of each call after a batch was counted (its answer's write, the claims' read) before the batch is answered without claims. */
export const NOTICE_CAP_FOLLOW_UP_TRIES = 3;

const capKey = (organizationId: string, windowStart: number) => ({ pk: `NOTICES#${organizationId}#${windowStart}` });
/** A batch's answer: its own small item beside the counter (the counter stays a few attributes however many batches count). */
const batchKey = (organizationId: string, windowStart: number, batch: string) => ({ pk: `NOTICES#${organizationId}#${windowStart}#${batch}` });
/** A batch's answer as the previous version kept it, on the counter itself (still read: a retry of such a batch is not counted twice). */
const legacyBatchAttribute = (batch: string) => `b_${batch}`;

const roundAttribute = (round: number) => `round_${round}`;

/** The claims an item holds, rounds 1, 2, … up to the first unclaimed one. */
const claimsOf = (item: Record<string, unknown> | undefined): number[] => {
  const claims: number[] = [];
  for (let round = 1; item?.[roundAttribute(round)] !== undefined; round++) claims.push(Number(item[roundAttribute(round)]));
  return claims;
};

export function dynamoNoticeCapStore(deps: Deps): NoticeCapStore {
  const TableName = deps.tables.rateWindows;
  const claimsNow = async (organizationId: string, windowStart: number) =>
    claimsOf((await deps.doc.send(new GetCommand({ TableName, Key: capKey(organizationId, windowStart), ConsistentRead: true }))).Item);
  return {
    async countLeadNotices(organizationId, windowStart, batch, count, expiresAt, cap) {
      // A retry of a batch already counted: its first answer.
      const answered = async (): Promise<number | undefined> => {
        const { Item } = await deps.doc.send(new GetCommand({ TableName, Key: batchKey(organizationId, windowStart, batch), ConsistentRead: true }));
        return Item ? Number(Item.before) : undefined;
      };
      const first = await answered();
      if (first !== undefined) return { before: first, claims: await claimsNow(organizationId, windowStart) };
      let before: number;
      try {
        // The condition reads a batch the previous version counted (its answer on the counter itself).
        const out = await deps.doc.send(new UpdateCommand({
          TableName,
          Key: capKey(organizationId, windowStart),
          UpdateExpression: 'ADD leads :n SET expiresAt = :e',
          ConditionExpression: 'attribute_not_exists(#b)',
          ExpressionAttributeNames: { '#b': legacyBatchAttribute(batch) },
          ExpressionAttributeValues: { ':n': count, ':e': expiresAt },
          ReturnValues: 'UPDATED_NEW',
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
        }));
        before = Number(out.Attributes?.leads) - count;
      } catch (error) {
        if (!isConditionFailure(error)) throw error;
        const item = error.Item ? unmarshall(error.Item) : undefined;
        return { before: Number(item?.[legacyBatchAttribute(batch)] ?? 0), claims: claimsOf(item) };
      }
      // Counted: the batch's leads are in the window's count (and in any summary claimed from now on),
      // so a failure from here on must not make the batch "uncounted" (mailed apart as well). Its
      // follow-ups are tried a few times, then the batch keeps the answer it has, with no claims.
      const followUp = <T>(step: () => Promise<T>) => retry(step, { backoff: BACKOFFS.noticeCapFollowUp, attempts: NOTICE_CAP_FOLLOW_UP_TRIES, shouldRetry: () => true });
      try {
        before = await followUp(async () => {
          try {
            await deps.doc.send(new UpdateCommand({
              TableName,
              Key: batchKey(organizationId, windowStart, batch),
              UpdateExpression: 'SET #before = :b, expiresAt = :e',
              ConditionExpression: 'attribute_not_exists(pk)',
              ExpressionAttributeNames: { '#before': 'before' },
              ExpressionAttributeValues: { ':b': before, ':e': expiresAt },
            }));
            return before;
          } catch (error) {
            // Two tries of the same batch at once: the first answer stands (this one's leads were counted twice: they fold sooner, none is lost).
            if (!isConditionFailure(error)) throw error;
            return (await answered()) ?? before;
          }
        });
        // Claims matter only to leads past the cap; a claim made after the ADD above already holds this batch's leads.
        const claims = before + count > cap ? await followUp(() => claimsNow(organizationId, windowStart)) : [];
        return { before, claims };
      } catch (error) {
        // A retry of the batch may count it again if its answer was not written (docs/notifications.md "Counted once per batch").
        logger.error('lead notices: the cap counter counted the batch but its answer or the claims failed, answered without claims', { organizationId, windowStart, leads: count, error: (error as Error).name });
        return { before, claims: [] };
      }
    },

    async claimSummary(organizationId, windowStart, round) {
      try {
        const out = await deps.doc.send(new UpdateCommand({
          TableName,
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
