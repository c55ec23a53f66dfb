/**
 * The lead notices a stream batch produces (docs/notifications.md "The notices"): a client a lead
 * created is a `lead.created` notice, a submission merged into a client a `lead.returning` one,
 * each keyed by the client (and the submission), so a stream retry, a replay or a double-submit
 * (which writes no new client) never repeats one, and a merge never sends a second `lead.created`.
 *
 * Bulk-safe: past the organization's cap (leadNoticeCap in leadNoticeWindowSeconds) leads fold
 * into one `lead.summary` for the window. The cap costs one counter update (and its batch's answer)
 * per organization per stream batch (notify/notice-cap-store.ts), and the whole batch's notices are
 * one hand-over to the notices queue (notify/produce.ts), whatever the batch holds.
 */
import { createHash } from 'node:crypto';
import { MetricUnit } from '@aws-lambda-powertools/metrics';
import type { Deps } from '../platform/deps.js';
import { logger, metrics } from '../platform/observability.js';
import type { EventPayload } from '../platform/model.js';
import type { LeadNoticeData, LeadSummaryData } from '../notify/compose.js';
import type { NoticeMessage } from '../notify/notice.js';
import { leadSourceOf } from '../delivery/statistics.js';
import { noticeCapPort, type LeadCount } from '../notify/notice-cap-store.js';
import { handOverNotices } from '../notify/produce.js';
import { submissionOf, submissionRequestId } from './lead-events.js';
import type { Item, StreamChange } from './stream-changes.js';

/** A change of the batch with the events it derived (none: no notice either, e.g. another organization's key or a restore). */
export interface DerivedChange { change: StreamChange; events: EventPayload[] }

const text = (v: unknown) => (typeof v === 'string' && v ? v : undefined);

/** The lead notice a change stands for, if any. */
export function leadNoticeOf(change: StreamChange, events: EventPayload[], now: number): NoticeMessage | undefined {
  const after = change.newImage;
  const submission = submissionOf(change.kind, change.oldImage, after);
  if (submission === undefined || !after || events.length === 0) return undefined;
  const organizationId = events[0].organization_id;
  const clientId = after.id as string;
  const name = [text(after.first_name), text(after.last_name)].filter(Boolean).join(' ') || undefined;
  const contact = { ...(name ? { name } : {}), ...(text(after.email) ? { email: after.email as string } : {}), ...(text(after.phone) ? { phone: after.phone as string } : {}) };
  const at = new Date(now).toISOString();
  if (submission === 1) {
    const data: LeadNoticeData = {
      clientId, ...contact,
      ...Object.fromEntries((['address', 'service', 'notes'] as const).filter((f) => text(after[f])).map((f) => [f, after[f]])),
      // The leads statistics' channel names (delivery/statistics.ts leadSourceOf): one reading of where a lead came in.
      source: leadSourceOf(after),
      ...(text(after.possible_duplicate_of) ? { possibleDuplicateOf: after.possible_duplicate_of as string } : {}),
    };
    return { organizationId, kind: 'lead.created', key: `lead.created|${organizationId}|${clientId}`, at, data: { ...data } };
  }
  const listed = Array.isArray(after.submissions) ? (after.submissions as Item[])[submission - 2] : undefined;
  const requestId = submissionRequestId(after, submission);
  const data: LeadNoticeData = { clientId, ...contact, submission, ...(text(listed?.service) ? { service: listed!.service as string } : {}) };
  return { organizationId, kind: 'lead.returning', key: `lead.returning|${organizationId}|${clientId}|${submission}${requestId ? `|${requestId}` : ''}`, at, data: { ...data } };
}

/** A stable id of one organization's leads of one window in a batch: the same batch retried counts once. */
const batchId = (notices: NoticeMessage[]) => createHash('sha256').update(notices.map((n) => n.key).join('\n')).digest('base64url').slice(0, 22);

/**
 * A window's summary waits for the window's end, and at least this long (or the window's length, if
 * shorter), before it goes: the leads of batches still on their way are counted by then, and the
 * summary claims them all at once (notify/notice-cap-store.ts claimSummary). A queue delay, at most
 * SQS's 900 s: the window plus this is bounded by it (platform/config.ts leadNoticeWindowSeconds).
 */
export const SUMMARY_SETTLE_SECONDS = 30;

/** A queue delay's bound (SQS DelaySeconds): a notice's notBefore is never further than this. */
export const MAX_NOTICE_DELAY_SECONDS = 900;

/**
 * How long a follow-up round waits (round ≥ 2): a window, then twice that, …, at most the queue's
 * longest delay, so a lane lagging past the window's end makes a follow-up at most every window at
 * first, then at most one every 15 minutes, however many batches lag.
 */
export function followUpWaitMs(round: number, windowMs: number): number {
  const grown = windowMs * 2 ** Math.min(round - 2, 10);
  return Math.min(MAX_NOTICE_DELAY_SECONDS * 1000, Math.max(SUMMARY_SETTLE_SECONDS * 1000, grown));
}

/** When a lead came in: its client's last write (a creation or a merge), so a retried batch counts in the window it first counted in. */
function leadTime(change: StreamChange, now: number): number {
  const at = Date.parse(String(change.newImage?.updated_at ?? ''));
  return Number.isNaN(at) ? now : at;
}

/**
 * One organization's lead notices of a batch in one window, given what the window's counter told
 * the batch: those within the cap as they are; the batch that crosses the cap makes the window's
 * summary (round 1: its key is the window's, so only one is ever sent; it goes at the window's end
 * and reports every lead counted until the mailer claims the count); the rest are folded into it.
 * A batch counted after the last claim (a lane lagging past the window's end) is in none yet: it
 * makes the next round's follow-up summary, whose key every such batch shares (one e-mail per
 * round, rounds spaced a window and more apart: followUpWaitMs). No lead is dropped, none is in two
 * summaries.
 */
export function capped(notices: NoticeMessage[], count: LeadCount, window: { start: number; end: number }, cap: number, now: number): NoticeMessage[] {
  const { before, claims } = count;
  const out = notices.filter((_, i) => before + i < cap);
  const folded = notices.length - out.length;
  if (folded === 0) return out;
  const { organizationId } = notices[0];
  const settleMs = Math.min(SUMMARY_SETTLE_SECONDS * 1000, window.end - window.start);
  const data: LeadSummaryData = { folded, since: new Date(window.start).toISOString(), until: new Date(window.end).toISOString(), cap };
  const lastClaim = claims.at(-1);
  if (lastClaim === undefined || lastClaim > before) {
    // Round 1 (the window's summary) is made by the batch that crosses the cap; a batch counted before a claim is in it.
    if (before <= cap && lastClaim === undefined) {
      out.push({ organizationId, kind: 'lead.summary', key: `lead.summary|${organizationId}|${window.start}`, at: notices[0].at, notBefore: new Date(Math.max(window.end, now + settleMs)).toISOString(), data: { ...data, round: 1 } });
    } else if (before <= cap) {
      // The crossing batch retried after its summary was claimed: the same round-1 message (sent once).
      out.push({ organizationId, kind: 'lead.summary', key: `lead.summary|${organizationId}|${window.start}`, at: notices[0].at, data: { ...data, round: 1 } });
    }
    return out;
  }
  const round = claims.length + 1;
  const notBefore = Math.max(window.end, now + followUpWaitMs(round, window.end - window.start));
  out.push({ organizationId, kind: 'lead.summary', key: `lead.summary|${organizationId}|${window.start}|${round}`, at: notices[0].at, notBefore: new Date(notBefore).toISOString(), data: { ...data, round } });
  return out;
}

/**
 * A batch the cap counter could not count: the window's count never holds its leads, so they are
 * in no claimed summary. Within the cap they go one by one (a bulk batch is at most the cap's
 * worth of mail); past it, one summary of its own (keyed by the batch: a retry is the same
 * message) that the mailer sends with the batch's number, claiming nothing (data.unclaimed).
 */
export function uncounted(notices: NoticeMessage[], batch: string, window: { start: number; end: number }, cap: number): NoticeMessage[] {
  if (notices.length <= cap) return notices;
  const { organizationId } = notices[0];
  const data: LeadSummaryData = { folded: notices.length, since: new Date(window.start).toISOString(), until: new Date(window.end).toISOString(), cap, unclaimed: true };
  return [{ organizationId, kind: 'lead.summary', key: `lead.summary|${organizationId}|${window.start}|nocount|${batch}`, at: notices[0].at, data: { ...data } }];
}

/**
 * The batch's lead notices, capped per organization and window, handed to the notices queue in one
 * call; a queue that refuses them does not fail the batch (notify/produce.ts handOverNotices keeps
 * them for the sweeper), so a mail problem never holds back nor repeats the batch's deliveries.
 */
export async function produceLeadNotices(deps: Deps, derived: DerivedChange[]): Promise<void> {
  const now = deps.now();
  const found = derived.flatMap(({ change, events }) => {
    const notice = leadNoticeOf(change, events, now);
    return notice ? [{ change, notice }] : [];
  });
  if (found.length === 0) return;
  const { leadNoticeCap: cap, leadNoticeWindowSeconds } = deps.config;
  const windowMs = leadNoticeWindowSeconds * 1000;
  const groups = new Map<string, { organizationId: string; start: number; notices: NoticeMessage[] }>();
  for (const { change, notice } of found) {
    const start = Math.floor(leadTime(change, now) / windowMs) * windowMs;
    const id = `${notice.organizationId}#${start}`;
    const group = groups.get(id) ?? { organizationId: notice.organizationId, start, notices: [] };
    if (!group.notices.some((n) => n.key === notice.key)) group.notices.push(notice); // a record the stream carries twice in one batch
    groups.set(id, group);
  }
  const counter = noticeCapPort.of(deps);
  const kept = await Promise.all([...groups.values()].map(async ({ organizationId, start, notices }) => {
    const window = { start, end: start + windowMs };
    const expiresAt = Math.ceil((window.end + 86_400_000) / 1000);
    const id = batchId(notices);
    const count = await counter.countLeadNotices(organizationId, start, id, notices.length, expiresAt, cap).catch((error: unknown) => {
      // A counter that fails never fails the batch (every organization of the lane would wait on it).
      logger.error('lead notices: the cap counter failed, the batch\'s leads go uncounted', { organizationId, windowStart: start, leads: notices.length, error: (error as Error).name });
      metrics.addMetric('NoticeCapFailed', MetricUnit.Count, 1);
      return undefined;
    });
    return count ? capped(notices, count, window, cap, now) : uncounted(notices, id, window, cap);
  }));
  await handOverNotices(deps, kept.flat());
}
