// An endpoint's options in its dialog (docs/settings.md "Webhooks"): custom headers (the stored
// ones by name with a masked value, each removable; new ones typed as name and value) and a rate
// limit in deliveries a second. Only changes are sent: a header's value is a secret the API never
// shows again, so a header left alone is simply not named.

import { $, fill, h } from './dom.js';

let removed = new Set();
let rows = 0;

function newHeaderRow() {
  rows += 1;
  const n = rows;
  const row = h('li', { class: 'header-row' },
    h('input', { class: 'header-name', 'aria-label': `Header name ${n}`, placeholder: 'X-Api-Key', autocomplete: 'off', spellcheck: 'false', maxlength: '64' }),
    h('input', { class: 'header-value', 'aria-label': `Header value ${n}`, placeholder: 'value', autocomplete: 'off', spellcheck: 'false', maxlength: '1000' }),
    h('button', { type: 'button', class: 'btn subtle small', 'aria-label': `Remove header row ${n}`, onclick: () => row.remove() }, 'Remove'));
  $('endpoint-new-headers').append(row);
  return row;
}

/** Fills the dialog's options with the endpoint's (none for a new one). */
export function fillOptions(endpoint) {
  removed = new Set();
  rows = 0;
  const stored = Object.entries(endpoint?.headers ?? {});
  fill($('endpoint-headers'), stored.map(([name, masked]) => {
    const toggle = h('button', { type: 'button', class: 'btn subtle small', 'aria-pressed': 'false', 'aria-label': `Remove header ${name}` }, 'Remove');
    const item = h('li', { class: 'header-stored' }, h('code', { text: name }), h('span', { class: 'muted', text: masked }), toggle);
    toggle.addEventListener('click', () => {
      const gone = !removed.has(name);
      if (gone) removed.add(name); else removed.delete(name);
      item.classList.toggle('is-removed', gone);
      toggle.setAttribute('aria-pressed', String(gone));
      toggle.textContent = gone ? 'Keep' : 'Remove';
    });
    return item;
  }));
  fill($('endpoint-new-headers'));
  newHeaderRow();
  $('endpoint-rate-limit').value = endpoint?.rateLimitPerSecond ?? '';
}

$('header-add').addEventListener('click', () => newHeaderRow().querySelector('input').focus());

/** What the dialog changes: `headers` (a value sets one, null removes one) and `rate_limit_per_second`, only if changed. */
export function readOptions(endpoint) {
  const headers = {};
  for (const name of removed) headers[name] = null;
  for (const row of $('endpoint-new-headers').querySelectorAll('.header-row')) {
    const name = row.querySelector('.header-name').value.trim();
    const value = row.querySelector('.header-value').value;
    if (name || value) headers[name] = value.trim();
  }
  const typed = $('endpoint-rate-limit').value.trim();
  const rate = typed === '' ? null : Number(typed);
  return {
    ...(Object.keys(headers).length ? { headers } : {}),
    ...(rate !== (endpoint?.rateLimitPerSecond ?? null) ? { rate_limit_per_second: rate } : {}),
  };
}

/** The card's line: header names and the limit (never a value). */
export function optionsNote(endpoint) {
  const names = Object.keys(endpoint.headers ?? {});
  if (!names.length && !endpoint.rateLimitPerSecond) return null;
  return h('p', { class: 'cell-sub', 'data-testid': 'endpoint-options' },
    names.length ? 'Custom headers: ' : null,
    names.flatMap((n, i) => [i ? ', ' : null, h('code', { text: n })]),
    names.length && endpoint.rateLimitPerSecond ? ' · ' : null,
    endpoint.rateLimitPerSecond ? `At most ${endpoint.rateLimitPerSecond} ${endpoint.rateLimitPerSecond === 1 ? 'delivery' : 'deliveries'} a second` : null);
}
