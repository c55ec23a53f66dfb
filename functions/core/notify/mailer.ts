/**
 * The mailer's work on one queued message (docs/notifications.md "Sending"): a notice goes to each
 * confirmed recipient of its organization who picked its kind, composed for that recipient with
 * its own unsubscribe link; a confirmation goes to its pending address alone. Each (message key,
 * address) is sent at most once: a mark is claimed before sending and marked sent after
 * (notify/notice-mark-store.ts). A failed send gives its claim back and fails the message, which
 * the queue tries again later; the addresses already sent are skipped then. A failure of the
 * transport itself (refused, timed out, throttled) stops the message at once: its other addresses
 * would fail the same way, and the time left is the batch's (functions/mailer/sqs-batch.ts).
 * Logs name an address by a short hash of it and an error by its code, never the server's text
 * (which quotes the address).
 */
import { createHash } from 'node:crypto';
import type { Deps } from '../platform/deps.js';
import { BACKOFFS, retry } from '../platform/retry.js';
import { MetricUnit } from '@aws-lambda-powertools/metrics';
import { logger, metrics } from '../platform/observability.js';
import { composeNotice, type LeadSummaryData } from './compose.js';
import { noticeCapPort } from './notice-cap-store.js';
import { composeConfirmation } from './confirmation-mail.js';
import type { MailTransport, OutgoingMail } from './mail-transport.js';
import { linkUrl, signLink } from './notice-links.js';
import { noticeMarkStore, type MarkId } from './notice-mark-store.js';
import type { NoticeMessage } from './notice.js';
import type { QueuedMessage, ConfirmationMessage } from './notices-queue.js';
import { recipientStore } from './recipient-store.js';
import { rejectionCountPort, REJECTION_WINDOW_MS, type RefusalCounts } from './rejection-count-store.js';
import { CONFIRMATION_WRITE_GRACE_MS, picks, suppressRecipient } from './recipients.js';

export interface MailerOptions {
  transport: MailTransport;
  /** The noticeLinks secret (Secrets Manager, cached). */
  linkSecret: () => Promise<string>;
  /** The API's base URL, no trailing slash: the links' pages live there. */
  baseUrl: string;
  /** Epoch ms (deps.now) after which no send starts and a send still going counts as failed: the batch's deadline. */
  deadline?: number;
}

export class NoticeNotSent extends Error {
  override name = 'NoticeNotSent';
}

export interface Outcome {
  sent: number; skipped: number;
  /** Addresses the server refused for good (5xx): suppressed (`rejected`), not tried again. */
  rejected: number;
  /** Addresses refused for good while the breaker held their suppression: neither suppressed nor tried again for this message. */
  held: number;
}

/** Sends `message` to whoever should get it; throws NoticeNotSent when some address must be tried again. */
export async function sendQueuedMessage(deps: Deps, message: QueuedMessage, options: MailerOptions): Promise<Outcome> {
  const mails = message.kind === 'recipient.confirm' ? await confirmationMails(deps, message, options) : await noticeMails(deps, message, options);
  const outcome: Outcome = { sent: 0, skipped: 0, rejected: 0, held: 0 };
  const failures: string[] = [];
  for (const mail of mails) {
    const result = await sendOnce(deps, message, mail, options);
    if (result === 'sent') outcome.sent += 1;
    else if (result === 'already') outcome.skipped += 1;
    else if (result === 'rejected') outcome.rejected += 1;
    else if (result === 'held') outcome.held += 1;
    else {
      failures.push(result.failed);
      if (result.transportDown) break;
    }
  }
  if (failures.length) throw new NoticeNotSent(`${mails.length - outcome.sent - outcome.skipped - outcome.rejected - outcome.held} of ${mails.length} not sent (${message.kind}, ${message.key}): ${failures[0]}`);
  return outcome;
}

/** A short, stable name of an address for logs: the same address reads the same, and it cannot be read back. */
export const addressHash = (email: string) => createHash('sha256').update(email).digest('base64url').slice(0, 10);

/** What a log line may say of a send's error: its code or name, never its text. */
export const errorCode = (error: unknown): string => {
  const e = error as { code?: unknown; name?: unknown; responseCode?: unknown } | undefined;
  const code = typeof e?.code === 'string' ? e.code : typeof e?.name === 'string' ? e.name : 'Error';
  return typeof e?.responseCode === 'number' ? `${code} ${e.responseCode}` : code;
};

/**
 * Errors that concern one address (the server refused it, SES rejected the message): the next
 * address may still go. Anything else (a refused or timed-out connection, a throttle, a 4xx of the
 * server) is the transport's, and stops the message.
 */
const ADDRESS_ERRORS = new Set(['MessageRejected', 'BadRequestException']);
const concernsTheAddress = (error: unknown) => {
  const e = error as { code?: string; name?: string; command?: string; response?: unknown; responseCode?: number } | undefined;
  // An SMTP envelope error concerns the address only at its RCPT TO, put off (4xx) or refused as an
  // address; a policy refusal there (5.7.x), a 530, a refused MAIL FROM or DATA is the sender's or the server's.
  if (e?.code === 'EENVELOPE') {
    return e.command === 'RCPT TO' && ((typeof e.responseCode === 'number' && e.responseCode < 500) || addressRefusal(typeof e.response === 'string' ? e.response : ''));
  }
  return ADDRESS_ERRORS.has(e?.code ?? '') || ADDRESS_ERRORS.has(e?.name ?? '');
};

/**
 * The server refused this address for good (docs/notifications.md "Refused addresses"): its own
 * RCPT TO answered 5xx (nodemailer's EENVELOPE, `command` 'RCPT TO', the address among `rejected`)
 * with an address status: an enhanced code 5.1.x of the recipient's (no such user, bad domain), or a plain 550/553
 * with no enhanced code. Any other refusal is the transport's and is tried again: a refused MAIL
 * FROM or DATA, a policy refusal (5.7.x: relaying denied, sender not authorized), a 530 (auth
 * required), a 4xx (greylisting, a full mailbox). Suppressing on those would drop good addresses
 * for every organization. SES does not refuse an address when it is sent: a recipient's permanent
 * failure comes back as a permanent bounce event (notify/mail-feedback.ts).
 */
export const permanentlyRejected = (error: unknown, address: string): boolean => {
  const e = error as { code?: string; command?: string; rejected?: unknown; rejectedErrors?: unknown; response?: unknown; responseCode?: number } | undefined;
  if (e?.code !== 'EENVELOPE' || e.command !== 'RCPT TO') return false;
  const wanted = address.toLowerCase();
  if (!Array.isArray(e.rejected) || !e.rejected.some((r) => typeof r === 'string' && r.toLowerCase() === wanted)) return false;
  // This address's own reply when nodemailer kept it, else the message's.
  const own = Array.isArray(e.rejectedErrors)
    ? (e.rejectedErrors as { recipient?: unknown; response?: unknown }[]).find((r) => typeof r?.recipient === 'string' && r.recipient.toLowerCase() === wanted)
    : undefined;
  return addressRefusal(typeof own?.response === 'string' ? own.response : typeof e.response === 'string' ? e.response : '');
};

/**
 * The enhanced codes 5.1.x that concern the recipient's own address (RFC 3463, RFC 7505): 5.1.0
 * other address status, 5.1.1 bad mailbox, 5.1.2 bad system, 5.1.3 bad mailbox syntax, 5.1.4
 * ambiguous, 5.1.5 (destination valid), 5.1.6 mailbox moved, 5.1.10 null MX. 5.1.7 and 5.1.8 are the
 * sender's (bad sender's mailbox syntax, bad sender's system address: Postfix answers a RCPT TO
 * `550 5.1.8 <noreply@…>: Sender address rejected`), as is any code not listed.
 */
const RECIPIENT_ADDRESS_DETAILS = new Set(['0', '1', '2', '3', '4', '5', '6', '10']);

/** A reply that refuses the address itself: 5xx with an enhanced 5.1.x of the recipient's (above), or a plain 550/553 without an enhanced code. */
export function addressRefusal(reply: string): boolean {
  const m = /^(\d{3})(?:[ -](\d)\.(\d{1,3})\.(\d{1,3})\b)?/.exec(reply.trim());
  if (!m || m[1][0] !== '5') return false;
  if (m[2] !== undefined) return m[2] === '5' && m[3] === '1' && RECIPIENT_ADDRESS_DETAILS.has(String(Number(m[4])));
  return m[1] === '550' || m[1] === '553';
}

/** More distinct addresses than this refused within REJECTION_WINDOW_MS (a sliding estimate), and the breaker trips. */
export const REJECTION_LIMIT = 5;
/** At most this much of the breaker's count is any one organization's: one tenant's dead addresses cannot trip it for all. */
export const REJECTION_SHARE = 2;
/** A tripped breaker stays tripped this long, extended while fresh refusals go on past the limit. */
export const REJECTION_LATCH_MS = 60 * 60_000;

/**
 * What the count says (a sliding estimate: the window so far plus the previous window weighed by
 * the part of it still within REJECTION_WINDOW_MS): each organization's refused addresses, and the
 * service's, where an organization counts REJECTION_SHARE at most.
 */
export function refusalEstimate(counts: Pick<RefusalCounts, 'current' | 'previous'>, windowStart: number, now: number, organizationKey: string): { own: number; all: number } {
  const byOrganization = new Map<string, number>();
  const weigh = (entries: string[], weight: number) => {
    for (const entry of entries) {
      const organization = organizationOf(entry);
      byOrganization.set(organization, (byOrganization.get(organization) ?? 0) + weight);
    }
  };
  weigh(counts.current, 1);
  weigh(counts.previous, Math.max(0, 1 - (now - windowStart) / REJECTION_WINDOW_MS));
  let all = 0;
  for (const n of byOrganization.values()) all += Math.min(n, REJECTION_SHARE);
  return { own: byOrganization.get(organizationKey) ?? 0, all };
}

/** The organization an entry counts for (the previous version's entries, an address's hash alone, read as an organization each). */
const organizationOf = (entry: string) => (entry.includes('.') ? entry.slice(0, entry.indexOf('.')) : entry);

/**
 * A breaker on suppression (docs/notifications.md "An address refused for good"): more than
 * REJECTION_LIMIT distinct addresses refused within 10 minutes (counted across every mailer
 * instance, notify/rejection-count-store.ts; an organization's at most REJECTION_SHARE of it) is not
 * a run of dead mailboxes but a server refusing everything (a misconfigured relay, a blocklisted
 * sender): the breaker trips (`tripped`) and stays latched REJECTION_LATCH_MS; so does one
 * organization's own count past REJECTION_LIMIT, for that organization alone (`held`). A latch is
 * extended only by a fresh refusal past the limit (an address in neither window nor the latch's own
 * entries): a held address tried again by every later notice does not keep it latched. An
 * organization adds at most REJECTION_LIMIT + 1 entries to a window, none while it is held, so one
 * organization cannot fill the window's set. Latched, nothing is suppressed: an error is logged and
 * MailRejectionsHeld (alarmed) counts them. A count that cannot be read or written suppresses
 * nothing either (`unknown`): suppression is the step an admin must undo by hand.
 */
async function breaker(deps: Deps, organizationKey: string, address: string): Promise<'closed' | 'tripped' | 'held' | 'unknown'> {
  const now = deps.now();
  const windowStart = now - (now % REJECTION_WINDOW_MS);
  const store = rejectionCountPort.of(deps);
  const entry = `${organizationKey}.${addressHash(address)}`;
  try {
    const counts = await store.read(windowStart, organizationKey);
    const latched = { all: (counts.latches.all?.until ?? 0) > now, organization: (counts.latches.organization?.until ?? 0) > now };
    const fresh = ![counts.current, counts.previous, counts.latches.all?.refused ?? [], counts.latches.organization?.refused ?? []].some((list) => list.includes(entry));
    let current = counts.current;
    const own = current.filter((e) => organizationOf(e) === organizationKey).length;
    // A full set adds nothing and trips nothing: the estimate is its contents.
    if (!latched.organization && !current.includes(entry) && own <= REJECTION_LIMIT) current = (await store.add(windowStart, entry)).current;
    const estimate = refusalEstimate({ current, previous: counts.previous }, windowStart, now, organizationKey);
    if (estimate.all > REJECTION_LIMIT && (fresh || !latched.all)) await store.trip({}, now + REJECTION_LATCH_MS, entry, !latched.all);
    if (estimate.all > REJECTION_LIMIT || latched.all) return 'tripped';
    if (estimate.own > REJECTION_LIMIT && (fresh || !latched.organization)) await store.trip({ organizationKey }, now + REJECTION_LATCH_MS, entry, !latched.organization);
    return estimate.own > REJECTION_LIMIT || latched.organization ? 'held' : 'closed';
  } catch (error) {
    logger.warn('mailer: refused addresses not counted: none suppressed, tried again', { to: addressHash(address), error: errorCode(error) });
    return 'unknown';
  }
}

export class OutOfTime extends Error {
  override name = 'OutOfTime';
  readonly code = 'OutOfTime';
}

/** `send` unless the deadline passes first (a hung server): then OutOfTime. */
async function beforeDeadline(deps: Deps, deadline: number | undefined, send: () => Promise<void>): Promise<void> {
  if (deadline === undefined) return send();
  const left = deadline - deps.now();
  if (left <= 0) throw new OutOfTime();
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([send(), new Promise<never>((_, reject) => { timer = setTimeout(() => reject(new OutOfTime()), left); })]);
  } finally {
    clearTimeout(timer);
  }
}

/** A claimed mark's lease: longer than one send can take (connect, greeting, data, each bounded by noticeSendTimeoutMs). */
const leaseMs = (deps: Deps) => 4 * deps.config.noticeSendTimeoutMs + 10_000;

async function sendOnce(deps: Deps, message: QueuedMessage, mail: OutgoingMail, options: MailerOptions): Promise<'sent' | 'already' | 'rejected' | 'held' | { failed: string; transportDown: boolean }> {
  if (options.deadline !== undefined && deps.now() >= options.deadline) return { failed: 'OutOfTime', transportDown: true };
  const marks = noticeMarkStore(deps);
  const mark = { organizationId: message.organizationId, key: `${message.kind}#${message.key}`, email: mail.to };
  const claim = await marks.claim(mark, deps.now(), deps.now() + leaseMs(deps));
  if (claim === 'sent') return 'already';
  // Another try holds it (the same notice queued twice, received together): this one checks again later.
  if (claim === 'busy') return { failed: 'another try is sending it', transportDown: false };
  try {
    await beforeDeadline(deps, options.deadline, () => options.transport.send(mail));
  } catch (error) {
    if (permanentlyRejected(error, mail.to)) {
      const organizationKey = addressHash(message.organizationId);
      const state = await breaker(deps, organizationKey, mail.to);
      if (state === 'closed') return rejected(deps, message, mail, mark, error);
      await marks.release(mark).catch(() => undefined);
      if (state === 'unknown') return { failed: errorCode(error), transportDown: false };
      // A refusal of one address (5.1.x at its RCPT TO), whatever the breaker says: the other
      // recipients go on, and this message is done with it (a retry would only be refused again and
      // keep the latch alive); a later notice tries it again. The runbook finds the latch by `organizationKey`.
      metrics.addMetric('MailRejectionsHeld', MetricUnit.Count, 1);
      const context = { organizationId: message.organizationId, organizationKey, to: addressHash(mail.to), error: errorCode(error) };
      if (state === 'held') logger.error('mailer: too many of this organization\'s addresses refused at once: none suppressed, not sent (a bad list or a relay refusing it)', context);
      else logger.error('mailer: too many addresses refused at once: none suppressed, not sent (the mail server or its sender setup is likely at fault)', context);
      return 'held';
    }
    await marks.release(mark).catch(() => undefined);
    const transportDown = !concernsTheAddress(error);
    logger.warn('mailer: send failed', { kind: message.kind, organizationId: message.organizationId, to: addressHash(mail.to), error: errorCode(error), transportDown });
    return { failed: errorCode(error), transportDown };
  }
  // Sent: a lost mark would send it again on the message's next try, so a throttle or a blip is retried here.
  await retry(() => marks.markSent(mark, deps.now()), { backoff: BACKOFFS.markSent, attempts: 4, shouldRetry: () => true });
  return 'sent';
}

/**
 * A permanent refusal: the address is suppressed (`rejected`, shown on the settings page with when),
 * so no later notice tries it, and this notice's mark is closed as done, so a retry of the message
 * (for its other addresses) does not try it either. Its other addresses go on. A suppression that
 * cannot be written fails this address like any failure: the message is tried again.
 */
async function rejected(deps: Deps, message: QueuedMessage, mail: OutgoingMail, mark: MarkId, error: unknown): Promise<'rejected' | { failed: string; transportDown: boolean }> {
  try {
    await retry(() => suppressRecipient(deps, message.organizationId, mail.to, 'rejected'), { backoff: BACKOFFS.markSent, attempts: 3, shouldRetry: () => true });
    await retry(() => noticeMarkStore(deps).markSent(mark, deps.now()), { backoff: BACKOFFS.markSent, attempts: 4, shouldRetry: () => true });
  } catch (writeError) {
    await noticeMarkStore(deps).release(mark).catch(() => undefined);
    logger.warn('mailer: address refused for good, not recorded: tried again', { organizationId: message.organizationId, to: addressHash(mail.to), error: errorCode(writeError) });
    return { failed: errorCode(error), transportDown: false };
  }
  logger.warn('mailer: address refused for good: suppressed (rejected)', { kind: message.kind, organizationId: message.organizationId, to: addressHash(mail.to), error: errorCode(error) });
  return 'rejected';
}

/**
 * A window's leads summary as sent: the window's count claimed now for its round, once
 * (notify/notice-cap-store.ts), so it reports every lead counted until it goes (less what the round
 * before reported), and a retry or another recipient reads the same number. A window whose counter
 * expired keeps the count the producer saw; an unclaimed summary (a batch the counter missed) its own.
 */
async function withClaimedCount(deps: Deps, message: NoticeMessage): Promise<NoticeMessage> {
  const data = message.data as Partial<LeadSummaryData>;
  const start = Date.parse(String(data.since ?? ''));
  if (message.kind !== 'lead.summary' || Number.isNaN(start) || typeof data.cap !== 'number' || data.unclaimed === true) return message;
  const round = typeof data.round === 'number' && data.round >= 1 ? data.round : 1;
  const claimed = await noticeCapPort.of(deps).claimSummary(message.organizationId, start, round);
  if (!claimed) return message;
  return { ...message, data: { ...message.data, folded: Math.max(0, claimed.upTo - Math.max(claimed.from ?? 0, data.cap)) } };
}

async function noticeMails(deps: Deps, queued: NoticeMessage, options: MailerOptions): Promise<OutgoingMail[]> {
  const recipients = (await recipientStore(deps).listRecipients(queued.organizationId)).filter((r) => r.status === 'confirmed' && picks(r.notices, queued.kind));
  if (recipients.length === 0) return [];
  const message = await withClaimedCount(deps, queued);
  // A summary of no lead ("0 more new leads"): nothing to tell.
  if (message.kind === 'lead.summary' && message.data.folded === 0) return [];
  const secret = await options.linkSecret();
  return recipients.map((r) => {
    const unsubscribe = linkUrl(options.baseUrl, 'unsubscribe', signLink(secret, { organizationId: message.organizationId, email: r.email, purpose: 'unsubscribe' }));
    const composed = composeNotice(message, { email: r.email }, { unsubscribe, settings: `${options.baseUrl}/settings` });
    // RFC 8058 one-click: a mail client POSTs `List-Unsubscribe=One-Click` to the link (the page's own form posts the same).
    return { organizationId: message.organizationId, to: r.email, ...composed, headers: { 'List-Unsubscribe': `<${unsubscribe}>`, 'List-Unsubscribe-Post': 'List-Unsubscribe=One-Click' } };
  });
}

async function confirmationMails(deps: Deps, message: ConfirmationMessage, options: MailerOptions): Promise<OutgoingMail[]> {
  const { email, addedAt } = message.data;
  const recipient = await recipientStore(deps).getRecipient(message.organizationId, email);
  // Queued just before its addition is written (recipients.ts setRecipients): not there yet, this try waits.
  if ((!recipient || recipient.addedAt < addedAt) && deps.now() - addedAt < CONFIRMATION_WRITE_GRACE_MS) {
    throw new NoticeNotSent(`${message.kind} ${message.key}: its addition is not written yet`);
  }
  // Confirmed meanwhile, removed, added again (its own message follows), suppressed, never written: nothing to send.
  if (!recipient || recipient.status !== 'pending' || recipient.addedAt !== addedAt) return [];
  const organizationName = await recipientStore(deps).organizationName(message.organizationId);
  const secret = await options.linkSecret();
  const confirmUrl = linkUrl(options.baseUrl, 'confirm', signLink(secret, { organizationId: message.organizationId, email, purpose: 'confirm', addedAt }));
  // "I did not ask for this": the unsubscribe link, which suppresses the address for good (it is never added again).
  const rejectUrl = linkUrl(options.baseUrl, 'unsubscribe', signLink(secret, { organizationId: message.organizationId, email, purpose: 'unsubscribe' }));
  return [{
    organizationId: message.organizationId, to: email, ...composeConfirmation({ organizationName: organizationName ?? '', email, confirmUrl, rejectUrl }),
    headers: { 'List-Unsubscribe': `<${rejectUrl}>`, 'List-Unsubscribe-Post': 'List-Unsubscribe=One-Click' },
  }];
}
