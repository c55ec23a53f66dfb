/**
 * The mailer's work on one queued message (docs/notifications.md "Sending"): a notice goes to each
 * confirmed recipient of its organization who picked its kind, composed for that recipient with
 * its own unsubscribe link; a confirmation goes to its pending address alone. Each (message key,
 * address) is sent at most once: a mark is claimed before sending and marked sent after
 * (notify/notice-mark-store.ts). A failed send gives its claim back and fails the message, which
 * the queue tries again later; the addresses already sent are skipped then.
 */
import type { Deps } from '../platform/deps.js';
import { logger } from '../platform/observability.js';
import { composeNotice } from './compose.js';
import { composeConfirmation } from './confirmation-mail.js';
import type { MailTransport, OutgoingMail } from './mail-transport.js';
import { linkUrl, signLink } from './notice-links.js';
import { noticeMarkStore } from './notice-mark-store.js';
import type { NoticeMessage } from './notice.js';
import type { QueuedMessage, ConfirmationMessage } from './notices-queue.js';
import { recipientStore } from './recipient-store.js';
import { picks } from './recipients.js';

export interface MailerOptions {
  transport: MailTransport;
  /** The noticeLinks secret (Secrets Manager, cached). */
  linkSecret: () => Promise<string>;
  /** The API's base URL, no trailing slash: the links' pages live there. */
  baseUrl: string;
}

export class NoticeNotSent extends Error {
  override name = 'NoticeNotSent';
}

export interface Outcome { sent: number; skipped: number }

/** Sends `message` to whoever should get it; throws NoticeNotSent when some address must be tried again. */
export async function sendQueuedMessage(deps: Deps, message: QueuedMessage, options: MailerOptions): Promise<Outcome> {
  const mails = message.kind === 'recipient.confirm' ? await confirmationMails(deps, message, options) : await noticeMails(deps, message, options);
  const outcome: Outcome = { sent: 0, skipped: 0 };
  const failures: string[] = [];
  for (const mail of mails) {
    const result = await sendOnce(deps, message, mail, options.transport);
    if (result === 'sent') outcome.sent += 1;
    else if (result === 'already') outcome.skipped += 1;
    else failures.push(result.failed);
  }
  if (failures.length) throw new NoticeNotSent(`${failures.length} of ${mails.length} not sent (${message.kind}, ${message.key}): ${failures[0]}`);
  return outcome;
}

/** A claimed mark's lease: longer than one send can take (connect, greeting, data, each bounded by noticeSendTimeoutMs). */
const leaseMs = (deps: Deps) => 4 * deps.config.noticeSendTimeoutMs + 10_000;

async function sendOnce(deps: Deps, message: QueuedMessage, mail: OutgoingMail, transport: MailTransport): Promise<'sent' | 'already' | { failed: string }> {
  const marks = noticeMarkStore(deps);
  const mark = { organizationId: message.organizationId, key: `${message.kind}#${message.key}`, email: mail.to };
  const claim = await marks.claim(mark, deps.now(), deps.now() + leaseMs(deps));
  if (claim === 'sent') return 'already';
  // Another try holds it (the same notice queued twice, received together): this one checks again later.
  if (claim === 'busy') return { failed: 'another try is sending it' };
  try {
    await transport.send(mail);
  } catch (error) {
    await marks.release(mark).catch(() => undefined);
    logger.warn('mailer: send failed', { kind: message.kind, organizationId: message.organizationId, error: (error as Error).message });
    return { failed: (error as Error).message };
  }
  await marks.markSent(mark, deps.now());
  return 'sent';
}

async function noticeMails(deps: Deps, message: NoticeMessage, options: MailerOptions): Promise<OutgoingMail[]> {
  const recipients = (await recipientStore(deps).listRecipients(message.organizationId)).filter((r) => r.status === 'confirmed' && picks(r.notices, message.kind));
  if (recipients.length === 0) return [];
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
  // Confirmed meanwhile, removed, added again (its own message follows), suppressed: nothing to send.
  if (!recipient || recipient.status !== 'pending' || recipient.addedAt !== addedAt) return [];
  const organizationName = await recipientStore(deps).organizationName(message.organizationId);
  const secret = await options.linkSecret();
  const confirmUrl = linkUrl(options.baseUrl, 'confirm', signLink(secret, { organizationId: message.organizationId, email, purpose: 'confirm', addedAt }));
  return [{ organizationId: message.organizationId, to: email, ...composeConfirmation({ organizationName: organizationName ?? '', email, confirmUrl }) }];
}
