// API keys (docs/settings.md "API keys"): each key told apart by its name, id and last 4
// characters; a rotated key's old one is labelled with when it stops working; a new key is shown
// once, with the `export` line that the quick start's commands read.

import { $, confirmAction, copy, dateTime, empty, fill, flash, h, loading, openForm, problemAlert, shownOnce, statusBadge, when } from './dom.js';
import { api } from './session.js';

let revocationSeconds = 5;
export const setRevocationSeconds = (seconds) => { revocationSeconds = seconds; };
/** "within 1 second", "within 30 seconds": how long a revoked key may still be accepted. */
const within = () => `within ${revocationSeconds} ${revocationSeconds === 1 ? 'second' : 'seconds'}`;

/** How a key is named everywhere on the page: “Name” (key_…, …x7Qa). */
export const keyLabel = (key) => `“${key.name || 'Unnamed key'}” (${key.id}${key.last4 ? `, …${key.last4}` : ''})`;

export async function loadKeys() {
  const body = $('keys-body');
  if (!body.querySelector('table')) fill(body, loading('Loading keys…'));
  try {
    const { keys } = await api('/keys');
    renderKeys(keys);
  } catch (error) {
    if (error.status !== 401) fill(body, problemAlert(error));
  }
}

function keyStatus(key) {
  if (key.status === 'expiring' && key.expiresAt) return [statusBadge('old'), h('span', { class: 'cell-sub' }, 'works until ', when(key.expiresAt))];
  return statusBadge(key.status);
}

function renderKeys(keys) {
  const body = $('keys-body');
  if (!keys.length) {
    fill(body, empty('No API keys yet', 'Generate a key to start sending leads from your website or tools.'));
    return;
  }
  const order = { active: 0, expiring: 1, expired: 2, revoked: 3 };
  const sorted = [...keys].sort((a, b) => (order[a.status] ?? 9) - (order[b.status] ?? 9) || String(b.createdAt).localeCompare(String(a.createdAt)));
  const rows = sorted.map((key) => {
    const live = key.status === 'active';
    const action = (text, run, tone = 'subtle') => h('button', { type: 'button', class: `btn ${tone} small`, 'aria-label': `${text} ${keyLabel(key)}`, onclick: () => run(key) }, text);
    return h('tr', { 'data-key-id': key.id },
      h('th', { scope: 'row' }, h('span', { class: 'cell-title', text: key.name || 'Unnamed key' }),
        h('span', { class: 'cell-sub', text: key.kind === 'publishable' ? `Publishable${key.origins?.length ? ` · ${key.origins.join(', ')}` : ''}` : 'Secret' })),
      h('td', { 'data-label': 'Key' }, h('code', { text: key.prefix }), h('span', { class: 'cell-sub' }, h('code', { text: key.id }))),
      h('td', { 'data-label': 'Status' }, keyStatus(key)),
      h('td', { 'data-label': 'Created' }, when(key.createdAt)),
      h('td', { 'data-label': 'Last used' }, when(key.lastUsedAt)),
      h('td', { class: 'actions', 'data-label': 'Actions' }, live
        ? [action('Rotate', rotateKey), action('Revoke', revokeKey, 'danger-subtle')]
        : key.status === 'expiring' ? action('Revoke now', revokeKey, 'danger-subtle') : null));
  });
  fill(body, h('div', { class: 'table-wrap' }, h('table', { class: 'data' },
    h('thead', {}, h('tr', {}, ['Name', 'Key', 'Status', 'Created', 'Last used', 'Actions'].map((t) => h('th', { scope: 'col', text: t })))),
    h('tbody', {}, rows))));
}

/** The new key, shown once, with the line that puts it where the quick start's commands read it. */
function revealKey(title, secret, note) {
  const line = `export CRM_API_KEY='${secret}'`;
  const copyLine = h('button', { type: 'button', class: 'btn subtle small', 'aria-label': 'Copy the export line' }, 'Copy');
  copyLine.addEventListener('click', () => copy(line, copyLine));
  shownOnce($('keys-reveal'), {
    title, secret, note,
    extra: h('div', { class: 'export-line' },
      h('p', { class: 'muted small', text: 'For the quick start below, in bash, zsh or sh:' }),
      h('div', { class: 'secret-row' }, h('code', { class: 'secret', 'data-testid': 'export-line', text: line }), copyLine)),
  });
}

export function generateKey() {
  const form = $('key-form');
  form.reset();
  $('key-origins-field').hidden = true;
  $('key-thanks-field').hidden = true;
  openForm($('key-dialog'), async () => {
    const kind = form.elements.kind.value;
    const name = form.elements.name.value.trim();
    const origins = form.elements.origins.value.split(/\s+/).map((s) => s.trim()).filter(Boolean);
    const thankYouUrl = form.elements.thankYouUrl.value.trim();
    const publishable = { name, kind, origins, ...(thankYouUrl ? { thank_you_url: thankYouUrl } : {}) };
    const created = await api('/keys', { method: 'POST', body: kind === 'publishable' ? publishable : { name, kind } });
    revealKey(`Your new key “${created.key.name || name}”`, created.secret, 'Copy it now and keep it somewhere safe: it will not be shown again.');
    await loadKeys();
    return true;
  });
  $('key-name').focus();
}

function rotateKey(key) {
  $('rotate-dialog-title').textContent = `Rotate ${keyLabel(key)}`;
  $('rotate-text').textContent = 'A new key replaces this one. Keep the old key working for a while so you can update your website and tools without missing leads.';
  $('rotate-form').reset();
  openForm($('rotate-dialog'), async (form) => {
    const graceHours = Number(form.elements.grace.value);
    const rotated = await api(`/keys/${encodeURIComponent(key.id)}/rotate`, { method: 'POST', body: { grace_hours: graceHours } });
    revealKey(`New key for “${rotated.key.name || key.name}”`, rotated.secret, graceHours > 0 && rotated.previous?.expiresAt
      ? `Copy it now: it will not be shown again. The old key (…${key.last4 ?? ''}) keeps working until ${dateTime.format(new Date(rotated.previous.expiresAt))}.`
      : `Copy it now: it will not be shown again. The old key is refused ${within()}.`);
    await loadKeys();
    return true;
  });
}

function revokeKey(key) {
  confirmAction({
    title: `Revoke ${keyLabel(key)}?`,
    text: `Requests with this key are refused ${within()} (servers keep a key they have checked for up to that long). This cannot be undone.`,
    action: 'Revoke key',
    run: async () => {
      await api(`/keys/${encodeURIComponent(key.id)}`, { method: 'DELETE' });
      flash($('keys-status'), `Key ${keyLabel(key)} revoked: refused ${within()}.`);
      await loadKeys();
    },
  });
}
