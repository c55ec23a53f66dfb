/**
 * The confirmation e-mail of a new recipient (double opt-in, docs/notifications.md "Recipients"):
 * the organization's name (its admins' text: one line, escaped) and the confirm link, which opens a
 * page whose button confirms. Nothing else is mailed to the address until then. The "I did not
 * ask for this" link (an unsubscribe link) suppresses the address: the organization cannot add it again.
 */
import { escapeHtml, oneLine, type ComposedNotice } from './compose.js';

export function composeConfirmation(input: { organizationName: string; email: string; confirmUrl: string; rejectUrl: string }): ComposedNotice {
  const org = oneLine(input.organizationName, 80) || 'an organization';
  const subject = oneLine(`Confirm notices from ${org}`, 120);
  const text = [
    `${input.email} was added to receive notices from ${org} (new leads, webhook endpoints that stop working, a daily digest).`,
    '',
    'To receive them, open this link and press Confirm:',
    input.confirmUrl,
    '',
    'If you did not expect this, ignore this e-mail: nothing more will be sent to this address.',
    'I did not ask for this (never add this address again):',
    input.rejectUrl,
  ].join('\n');
  const html = `<!doctype html><html><body><p>${escapeHtml(input.email)} was added to receive notices from <strong>${escapeHtml(org)}</strong> (new leads, webhook endpoints that stop working, a daily digest).</p>`
    + `<p><a href="${escapeHtml(input.confirmUrl)}">Open the confirmation page</a> and press Confirm to receive them.</p>`
    + '<p>If you did not expect this, ignore this e-mail: nothing more will be sent to this address.</p>'
    + `<p><a href="${escapeHtml(input.rejectUrl)}">I did not ask for this</a>: this address is never added again.</p></body></html>`;
  return { subject, text, html };
}
