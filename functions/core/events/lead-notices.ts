/**
 * The lead notices a stream batch produces (docs/notifications.md "The notices"): a client a lead
 * created is a `lead.created` notice, a submission merged into a client a `lead.returning` one,
 * each keyed by the client (and the submission), so a stream retry, a replay or a double-submit
 * (which writes no new client) never repeats one, and a merge never sends a second `lead.created`.
 *
 * Bulk-safe: past the organization's cap (leadNoticeCap in leadNoticeWindowSeconds) leads fold
 * into one `lead.summary` for the window. The cap costs one conditional counter write per
 * organization per stream batch (notify/notice-cap-store.ts), and the whole batch's notices are
 * one hand-over to the notices queue (notify/produce.ts), whatever the batch holds.
 */
import { createHash } from 'node:crypto';
import type { Deps } from '../platform/deps.js';
import type { EventPayload } from '../platform/model.js';
import type { LeadNoticeData, LeadSummaryData } from '../notify/compose.js';
import type { NoticeMessage } from '../notify/notice.js';
import { leadSourceOf } from '../delivery/statistics.js';
import { noticeCapPort } from '../notify/notice-cap-store.js';
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

/** A stable id of one organization's leads in a batch: the same batch retried counts once. */
const batchId = (notices: NoticeMessage[]) => createHash('sha256').update(notices.map((n) => n.key).join('\n')).digest('base64url').slice(0, 22);

/**
 * One organization's lead notices of a batch, given how many its window had counted before: those
 * within the cap as they are; the one that crosses it becomes the window's summary (its key is the
 * window's, so only one is ever sent); the rest are folded.
 */
export function capped(notices: NoticeMessage[], before: number, window: { start: number; end: number }, cap: number): NoticeMessage[] {
  const out = notices.filter((_, i) => before + i < cap);
  const folded = notices.length - out.length;
  if (folded > 0 && before <= cap) {
    const { organizationId } = notices[0];
    const data: LeadSummaryData = { folded, since: new Date(window.start).toISOString(), until: new Date(window.end).toISOString(), cap };
    out.push({ organizationId, kind: 'lead.summary', key: `lead.summary|${organizationId}|${window.start}`, at: notices[0].at, data: { ...data } });
  }
  return out;
}

/**
 * The batch's lead notices, capped per organization, handed to the notices queue in one call; a
 * queue that refuses them does not fail the batch (notify/produce.ts handOverNotices keeps them for
 * the sweeper), so a mail problem never holds back nor repeats the batch's deliveries.
 */
export async function produceLeadNotices(deps: Deps, derived: DerivedChange[]): Promise<void> {
  const now = deps.now();
  const byOrganization = new Map<string, NoticeMessage[]>();
  for (const { change, events } of derived) {
    const notice = leadNoticeOf(change, events, now);
    if (!notice) continue;
    const list = byOrganization.get(notice.organizationId) ?? [];
    if (!list.some((n) => n.key === notice.key)) list.push(notice); // a record the stream carries twice in one batch
    byOrganization.set(notice.organizationId, list);
  }
  if (byOrganization.size === 0) return;
  const { leadNoticeCap: cap, leadNoticeWindowSeconds } = deps.config;
  const windowMs = leadNoticeWindowSeconds * 1000;
  const start = Math.floor(now / windowMs) * windowMs;
  const window = { start, end: start + windowMs };
  const expiresAt = Math.ceil((window.end + 86_400_000) / 1000);
  const counter = noticeCapPort.of(deps);
  const kept = await Promise.all([...byOrganization].map(async ([organizationId, notices]) => {
    const before = await counter.countLeadNotices(organizationId, start, batchId(notices), notices.length, expiresAt);
    return capped(notices, before, window, cap);
  }));
  await handOverNotices(deps, kept.flat());
}
