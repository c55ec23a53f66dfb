// Notifications (docs/settings.md "Notifications"): who is sent notices by e-mail and which ones,
// each address with its status. A new address is sent a confirmation e-mail and gets nothing else
// until it is confirmed; a suppressed one (unsubscribed, bounced, complained, rejected) gets
// nothing, and says why and since when.
// Changes are made here, then saved at once (PUT /api/settings/notifications, the whole list).

import { $, badge, empty, fill, flash, h, loading, problemAlert } from './dom.js';
import { api } from './session.js';

const NOTICES = [
  ['lead.created', 'New leads'],
  ['endpoint.paused', 'Endpoint paused'],
  ['endpoint.disabled', 'Endpoint disabled'],
  ['daily_digest', 'Daily digest'],
];
const MAX = 10;
const statusText = {
  pending: ['waiting for confirmation', 'info'],
  confirmed: ['confirmed', 'ok'],
  suppressed: ['suppressed: gets nothing', 'bad'],
};

const reasonText = {
  unsubscribed: 'unsubscribed',
  bounced: 'its mail bounced',
  complained: 'marked as spam',
  // Unlike the others it may be added again (docs/notifications.md "An address refused for good").
  rejected: 'the mail server refused it; remove it, save, and add it again to send a new confirmation',
};
/** Why and since when a suppressed address gets nothing (recipients suppressed before reasons were kept have neither). */
function suppressedText(suppressed) {
  const why = suppressed?.reason ? reasonText[suppressed.reason] ?? suppressed.reason : undefined;
  const at = suppressed?.at ? `${suppressed.at.slice(0, 16).replace('T', ' ')} UTC` : undefined;
  return `suppressed${why ? `: ${why}` : ''}${at ? ` (${at})` : ''}; gets nothing`;
}

/** The list as edited (saved with Save). */
let recipients = [];

export async function loadNotifications() {
  const body = $('notifications-body');
  if (!body.querySelector('table')) fill(body, loading('Loading recipients…'));
  try {
    ({ recipients } = await api('/notifications'));
    render();
  } catch (error) {
    if (error.status !== 401) fill(body, problemAlert(error));
  }
}

function render() {
  const body = $('notifications-body');
  $('add-recipient').disabled = recipients.length >= MAX;
  if (!recipients.length) {
    fill(body, empty('No one is sent notices yet', 'Add an address: it is sent a confirmation e-mail first.'));
    return;
  }
  const rows = recipients.map((r, i) => {
    const [text, tone] = r.status === 'suppressed' ? [suppressedText(r.suppressed), 'bad'] : statusText[r.status] ?? [r.status ?? 'new: saved on Save', 'neutral'];
    return h('tr', {},
      h('th', { scope: 'row' }, h('span', { class: 'cell-title', text: r.email })),
      h('td', { 'data-label': 'Status' }, badge(text, tone)),
      NOTICES.map(([kind, label]) => h('td', { 'data-label': label }, h('input', {
        type: 'checkbox', 'aria-label': `${label} for ${r.email}`, checked: r.notices.includes(kind),
        onchange: (e) => { r.notices = e.currentTarget.checked ? [...r.notices, kind] : r.notices.filter((n) => n !== kind); },
      }))),
      h('td', { class: 'actions', 'data-label': 'Actions' }, h('button', {
        type: 'button', class: 'btn danger-subtle small', 'aria-label': `Remove ${r.email}`,
        onclick: () => { recipients.splice(i, 1); render(); },
      }, 'Remove')));
  });
  fill(body, h('div', { class: 'table-wrap' }, h('table', { class: 'data' },
    h('thead', {}, h('tr', {}, ['Address', 'Status', ...NOTICES.map(([, label]) => label), 'Actions'].map((t) => h('th', { scope: 'col', text: t })))),
    h('tbody', {}, rows))));
}

export function addRecipient(event) {
  event.preventDefault();
  const input = $('recipient-email');
  const email = input.value.trim();
  if (!email || recipients.length >= MAX) return;
  if (!recipients.some((r) => r.email.toLowerCase() === email.toLowerCase())) recipients.push({ email, notices: NOTICES.map(([kind]) => kind) });
  input.value = '';
  render();
}

export async function saveNotifications(event) {
  const button = event.currentTarget;
  button.disabled = true;
  try {
    ({ recipients } = await api('/notifications', { method: 'PUT', body: { recipients: recipients.map((r) => ({ email: r.email, notices: r.notices })) } }));
    render();
    const pending = recipients.filter((r) => r.status === 'pending').length;
    flash($('notifications-status'), pending === 1 ? 'Saved. 1 address waits for its confirmation e-mail to be followed.'
      : pending ? `Saved. ${pending} addresses wait for their confirmation e-mail to be followed.` : 'Saved.');
  } catch (error) {
    if (error.status !== 401) fill($('notifications-status'), problemAlert(error));
  } finally {
    button.disabled = false;
  }
}
