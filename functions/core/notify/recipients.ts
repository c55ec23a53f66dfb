/**
 * Who is told (docs/notifications.md "Recipients"): an organization's notice recipients, at most
 * MAX_RECIPIENTS addresses, each with the notices it picked and a status. A new address is pending
 * and gets one confirmation e-mail, nothing else, until its link is followed and the page's button
 * POSTed (double opt-in: a settings link alone cannot make the service mail anyone); an
 * unsubscribe link, a bounce or a complaint suppresses it. The settings API, its page and the CLI
 * call these; the store is notify/recipient-store.ts.
 */
import type { Deps } from '../platform/deps.js';
import { conflict, DomainError, validationFailed, type FieldError } from '../platform/errors.js';
import { NOTICE_KINDS, type MessageKind, type NoticeKind } from './notice.js';
import { recipientStore, type AddressRecord, type Recipient, type SuppressedReason } from './recipient-store.js';
import { enqueueConfirmation } from './notices-queue.js';
import { verifyLink } from './notice-links.js';

/** Addresses per organization: a bound on how many people one settings link can have mailed. */
export const MAX_RECIPIENTS = 10;
/**
 * Confirmation e-mails per organization per UTC day: removing and adding addresses again cannot
 * turn the confirmations themselves into a mail cannon.
 */
export const MAX_CONFIRMATIONS_PER_DAY = 30;
/**
 * One confirmation e-mail per address this long: an address removed and added again within it is
 * pending again for its earlier addition (whose link still confirms), and is sent nothing new.
 */
export const CONFIRMATION_EVERY_DAYS = 7;
/**
 * A confirmation is queued just before its addition is written (setRecipients): a mailer that finds
 * no pending address of that addition yet tries again for this long after it, then sends nothing
 * (the write failed).
 */
export const CONFIRMATION_WRITE_GRACE_MS = 60_000;

export interface RecipientInput { email: string; notices: readonly string[] }

// One address, no display name, no whitespace or controls (it becomes a header: nothing to inject).
const ADDRESS = /^[A-Za-z0-9.!#$%&'*+/=?^_`{|}~-]+@[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)+$/;

/** The address as stored and compared: trimmed and lower-cased (mail systems treat the local part case-blind in practice). Undefined when not one address. */
export function normalizeAddress(email: string): string | undefined {
  const address = email.trim().toLowerCase();
  return address.length <= 254 && ADDRESS.test(address) ? address : undefined;
}

/** Whether a recipient who picked `notices` gets a message of `kind`: a returning lead and a leads summary go with `lead.created`. */
export function picks(notices: readonly NoticeKind[], kind: MessageKind): boolean {
  const picked: NoticeKind | undefined = kind === 'lead.returning' || kind === 'lead.summary' ? 'lead.created' : (NOTICE_KINDS as readonly string[]).includes(kind) ? kind as NoticeKind : undefined;
  return picked !== undefined && notices.includes(picked);
}

export function listRecipients(deps: Deps, organizationId: string): Promise<Recipient[]> {
  return recipientStore(deps).listRecipients(organizationId);
}

/** The list checked whole (422 naming each bad field, nothing written), normalized. */
function checked(list: readonly RecipientInput[]): { email: string; notices: NoticeKind[] }[] {
  const errors: FieldError[] = [];
  if (list.length > MAX_RECIPIENTS) errors.push({ field: 'recipients', message: `at most ${MAX_RECIPIENTS} addresses per organization` });
  const seen = new Set<string>();
  const out = list.map((r, i) => {
    const email = normalizeAddress(r.email);
    if (!email) errors.push({ field: `recipients[${i}].email`, message: 'must be one e-mail address' });
    else if (seen.has(email)) errors.push({ field: `recipients[${i}].email`, message: `${email} is listed twice` });
    else seen.add(email);
    const unknown = r.notices.filter((n) => !(NOTICE_KINDS as readonly string[]).includes(n));
    if (unknown.length) errors.push({ field: `recipients[${i}].notices`, message: `unknown notices: ${unknown.join(', ')} (one of ${NOTICE_KINDS.join(', ')})` });
    return { email: email ?? '', notices: [...new Set(r.notices)] as NoticeKind[] };
  });
  if (errors.length) throw validationFailed(errors, 'The recipients are not valid: nothing was changed.');
  return out;
}

export interface RecipientsChange { recipients: Recipient[]; added: string[]; removed: string[]; changed: string[] }

/**
 * Makes `list` the organization's recipients: new addresses are added pending and sent their
 * confirmation (one per address per CONFIRMATION_EVERY_DAYS), known ones keep their status (a
 * suppressed one stays suppressed) with the new picks, the others are removed. An address that
 * unsubscribed, bounced or complained is never added again (422 naming it), removed or not; one the
 * mail server refused (`rejected`), once removed, may be (pending, a fresh confirmation). All or nothing.
 */
export async function setRecipients(deps: Deps, organizationId: string, list: readonly RecipientInput[]): Promise<RecipientsChange> {
  const next = checked(list);
  const store = recipientStore(deps);
  const current = new Map((await store.listRecipients(organizationId)).map((r) => [r.email, r]));
  const now = deps.now();
  const fresh = next.filter((r) => !current.has(r.email));
  const records = fresh.length ? await store.addressRecords(organizationId, fresh.map((r) => r.email)) : new Map<string, AddressRecord>();
  // A `rejected` address (the mail server refused it) may be added again: a mailbox fixed, or a
  // server's mistake; it starts over with a fresh confirmation. One that unsubscribed, bounced or complained may not.
  const refused: FieldError[] = next.flatMap((r, i) => {
    const reason = records.get(r.email)?.suppressed;
    return reason && reason !== 'rejected' ? [{ field: `recipients[${i}].email`, message: `${r.email} ${reason}: it stays suppressed and cannot be added again` }] : [];
  });
  if (refused.length) throw validationFailed(refused, 'Some addresses asked not to be mailed: nothing was changed.');
  const since = now - CONFIRMATION_EVERY_DAYS * 86_400_000;
  const add = fresh.map((r): Recipient => {
    // A `rejected` address added again gets a fresh confirmation: one sent before its rejection confirms nothing now.
    const record = records.get(r.email);
    const rejectedAt = record?.suppressed ? Date.parse(record.suppressedAt ?? new Date(now).toISOString()) : undefined;
    const earlier = record?.confirmationAddedAt;
    const stillValid = earlier !== undefined && earlier > since && (rejectedAt === undefined || earlier > rejectedAt);
    return { ...r, status: 'pending', addedAt: stillValid ? earlier : now };
  });
  const mailed = add.filter((r) => r.addedAt === now);
  const addedAt = now;
  const update = next.filter((r) => {
    const known = current.get(r.email);
    return known && (known.notices.length !== r.notices.length || known.notices.some((n) => !r.notices.includes(n)));
  });
  const remove = [...current.keys()].filter((email) => !next.some((r) => r.email === email));
  // Counted before the write: a refused change writes nothing (a count without its addition only lowers the day's bound).
  if (mailed.length && !(await store.countConfirmations(organizationId, new Date(addedAt).toISOString().slice(0, 10), mailed.length, MAX_CONFIRMATIONS_PER_DAY))) {
    throw new DomainError(429, 'too-many-confirmations', 'Too many new addresses',
      `At most ${MAX_CONFIRMATIONS_PER_DAY} confirmation e-mails a day per organization: add these addresses tomorrow (UTC). Nothing was changed.`, { headers: { 'Retry-After': '3600' } });
  }
  // Queued before the write: a queue that refuses fails the PUT with nothing written (but the day's
  // count), and the admin saves again. Should the write then fail (a 409), the queued confirmation
  // finds no pending address of its addition and sends nothing (notify/mailer.ts); the mailer waits
  // for a write still under way (CONFIRMATION_WRITE_GRACE_MS).
  try {
    for (const r of mailed) await enqueueConfirmation(deps, { organizationId, email: r.email, addedAt });
  } catch {
    throw new DomainError(503, 'confirmation-not-queued', 'Confirmation e-mails unavailable',
      'The confirmation e-mails could not be queued: nothing was changed. Save again in a minute.', { headers: { 'Retry-After': '60' } });
  }
  try {
    // A suppressed recipient removed is remembered (items written before SUPPRESSED# records existed too).
    const suppressed = remove.flatMap((email) => {
      const r = current.get(email)!;
      return r.status === 'suppressed' ? [{ email, reason: r.suppressedReason ?? 'unsubscribed', at: r.suppressedAt ?? new Date(now).toISOString() }] : [];
    });
    const count = { before: current.size, after: current.size + add.length - remove.length };
    await store.changeRecipients(organizationId, { add, update, remove, suppressed, confirmations: mailed.map((r) => ({ email: r.email, addedAt })), count });
  } catch (error) {
    if ((error as Error).name === 'TransactionCanceledException') throw conflict('The recipients changed meanwhile: read them again, then save.');
    throw error;
  }
  return { recipients: await store.listRecipients(organizationId), added: add.map((r) => r.email), removed: remove, changed: update.map((u) => u.email) };
}

/** Adds one address (or changes its picks), keeping the others: the CLI's `recipients add`. */
export async function addRecipient(deps: Deps, organizationId: string, input: RecipientInput): Promise<RecipientsChange> {
  const current = await listRecipients(deps, organizationId);
  const email = normalizeAddress(input.email) ?? input.email;
  return setRecipients(deps, organizationId, [...current.filter((r) => r.email !== email), { email, notices: input.notices }]);
}

export async function removeRecipient(deps: Deps, organizationId: string, email: string): Promise<RecipientsChange> {
  const current = await listRecipients(deps, organizationId);
  const address = normalizeAddress(email) ?? email;
  return setRecipients(deps, organizationId, current.filter((r) => r.email !== address));
}

export type LinkOutcome = { done: true; organizationId: string; email: string } | { done: false; reason: 'invalid' | 'not-pending' | 'gone' };

/** The confirm page's POST: the pending address of that addition becomes confirmed. */
export async function confirmRecipient(deps: Deps, secret: string, token: string): Promise<LinkOutcome> {
  const claims = verifyLink(secret, token, 'confirm', deps.now());
  if (!claims) return { done: false, reason: 'invalid' };
  const moved = await recipientStore(deps).setStatus(claims.organizationId, claims.email, {
    to: 'confirmed', from: ['pending'], addedAt: claims.addedAt, at: new Date(deps.now()).toISOString(),
  });
  if (moved) return { done: true, organizationId: claims.organizationId, email: claims.email };
  const now = await recipientStore(deps).getRecipient(claims.organizationId, claims.email);
  // Confirming twice (a double click, a second visit) answers as done.
  if (now?.status === 'confirmed' && now.addedAt === claims.addedAt) return { done: true, organizationId: claims.organizationId, email: claims.email };
  return { done: false, reason: now && now.addedAt === claims.addedAt ? 'not-pending' : 'gone' };
}

/** The unsubscribe link (the page's button, or a mail client's one-click POST): the address gets nothing more. */
export async function unsubscribeRecipient(deps: Deps, secret: string, token: string): Promise<LinkOutcome> {
  const claims = verifyLink(secret, token, 'unsubscribe', deps.now());
  if (!claims) return { done: false, reason: 'invalid' };
  await suppressRecipient(deps, claims.organizationId, claims.email, 'unsubscribed');
  // Done whether or not it was still listed: an unsubscribe never fails for the person asking.
  return { done: true, organizationId: claims.organizationId, email: claims.email };
}

/**
 * An address that unsubscribed, bounced or complained: suppressed, whatever it was, and remembered
 * so (listed or not) that it is never added again. False when it is not a recipient of that organization.
 */
export async function suppressRecipient(deps: Deps, organizationId: string, email: string, reason: SuppressedReason): Promise<boolean> {
  const at = new Date(deps.now()).toISOString();
  const store = recipientStore(deps);
  await store.rememberSuppressed(organizationId, email, reason, at);
  return store.setStatus(organizationId, email, { to: 'suppressed', from: ['pending', 'confirmed'], reason, at });
}
