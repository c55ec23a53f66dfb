// The overview, the quick start, the request log and the audit log (docs/settings.md). The request
// log lists every call made with one of the organization's keys, refused ones (401) included, each
// with its key's name; the audit log lists every change made here, by whom.

import { $, busy, confirmAction, copy, count, empty, fill, h, httpBadge, loading, money, problemAlert, scrollable, when } from './dom.js';
import { api, signedOut } from './session.js';
import { openTrail } from './trail.js';

export function renderOverview(settings) {
  const { organization: org, usage } = settings;
  $('org-name').textContent = org.name;
  document.title = `${org.name} — Organization settings`;
  const stat = (label, value, sub) => h('div', { class: 'stat' },
    h('p', { class: 'stat-label', text: label }), h('p', { class: 'stat-value', text: value }), sub ? h('p', { class: 'stat-sub', text: sub }) : null);
  const prepaid = org.billing === 'prepaid';
  // What the usage counters count: leads created (billed calls); refused and test calls are in the request log, not here.
  fill($('overview-stats'),
    stat('Plan', org.plan ? org.plan[0].toUpperCase() + org.plan.slice(1) : '—', prepaid ? 'Prepaid wallet' : 'Billed monthly'),
    stat('Billed calls today', count.format(usage.today.calls), `${money(usage.today.billed, org.currency)} · leads created`),
    stat('Billed calls this month', count.format(usage.month.calls), `${money(usage.month.billed, org.currency)} · leads created`),
    stat('Wallet balance', prepaid ? money(org.walletBalance, org.currency) : 'Not used', prepaid ? 'Calls are paid from this balance' : 'Postpaid plan'));
  const endpoint = h('code', { text: settings.leadEndpoint });
  const copyButton = h('button', { type: 'button', class: 'btn subtle small', onclick: () => copy(settings.leadEndpoint, copyButton) }, 'Copy');
  fill($('overview-facts'),
    h('div', {}, h('dt', { text: 'Lead endpoint' }), h('dd', { class: 'copy-line' }, endpoint, copyButton)),
    h('div', {}, h('dt', { text: 'Organization ID' }), h('dd', {}, h('code', { text: org.id }))),
    duplicatePolicyFact(org),
    signOutFact());
}

/** Signs out every settings link of the organization (a leaked link, an admin who left): docs/settings.md "Signing out every link". */
function signOutFact() {
  const button = h('button', { type: 'button', class: 'btn subtle small', id: 'sign-out-links' }, 'Sign out every link');
  button.addEventListener('click', () => confirmAction({
    title: 'Sign out every settings link?',
    text: 'Every settings link of this organization issued until now stops working at once, this one included: its next request is refused. Whoever still needs the settings opens a new link from the CRM. Recorded in the audit log.',
    action: 'Sign out every link',
    run: async () => {
      await api('/links/revoke', { method: 'POST' });
      signedOut();
    },
  }));
  return h('div', {}, h('dt', { text: 'Settings links' }), h('dd', {}, button));
}

/** What a lead matching an existing client does (docs/leads.md "Duplicates"): a select that saves on change. */
function duplicatePolicyFact(org) {
  let saved = org.duplicatePolicy || 'flag';
  const select = h('select', { id: 'duplicate-policy', 'aria-describedby': 'duplicate-policy-status' },
    h('option', { value: 'flag', text: 'Flag as a possible duplicate' }),
    h('option', { value: 'merge', text: 'Merge into the existing client' }));
  select.value = saved;
  const status = h('span', { id: 'duplicate-policy-status', class: 'stat-sub', role: 'status' });
  select.addEventListener('change', async () => {
    select.disabled = true;
    try {
      const changed = await api('', { method: 'PATCH', body: { duplicate_policy: select.value } });
      saved = changed.organization.duplicatePolicy || 'flag';
      status.textContent = 'Saved';
    } catch (error) {
      select.value = saved;
      status.textContent = error.message;
    } finally {
      select.disabled = false;
    }
  });
  return h('div', {}, h('dt', {}, h('label', { for: 'duplicate-policy', text: 'Duplicate leads' })), h('dd', {}, select, ' ', status));
}

export function renderQuickstart(settings) {
  const examples = settings.curlExamples || [];
  if (!examples.length) {
    fill($('quickstart-body'), empty('No examples available'));
    return;
  }
  fill($('quickstart-body'), examples.map((example) => {
    const copyButton = h('button', { type: 'button', class: 'btn subtle small', 'aria-label': `Copy: ${example.title}` }, 'Copy');
    copyButton.addEventListener('click', () => copy(example.command, copyButton));
    return h('figure', { class: 'example' },
      h('figcaption', {}, h('span', { text: example.title }), copyButton),
      scrollable(example.title, example.command, 'code'));
  }));
}

/** A paged list (newest first) with "Load more": the request log and the audit log. */
function pagedList({ body, path, key, columns, row, emptyText }) {
  let cursor = null;
  let latest = 0;
  const load = async ({ more = false } = {}) => {
    const el = $(body);
    if (!more && !el.querySelector('table')) fill(el, loading());
    const request = ++latest;
    el.setAttribute('aria-busy', 'true');
    try {
      const params = new URLSearchParams({ limit: '25' });
      if (more && cursor) params.set('cursor', cursor);
      const page = await api(`${path}?${params}`);
      if (request !== latest) return;
      cursor = page.nextCursor ?? null;
      let tbody = el.querySelector('tbody');
      if (!more || !tbody) {
        // An empty page with a cursor (the request log's read of clients stopped on the CRM's): more to load.
        if (!page[key].length && !cursor) {
          fill(el, empty(...emptyText));
          return;
        }
        tbody = h('tbody', {});
        // Focusable and named: a wide entry may make it scroll sideways at 375 px, and a keyboard must reach it.
        fill(el, h('div', { class: 'table-wrap', tabindex: '0', role: 'region', 'aria-label': key === 'entries' ? 'Audit log entries' : 'Request log rows' }, h('table', { class: 'data' },
          h('thead', {}, h('tr', {}, columns.map((t) => h('th', { scope: 'col', text: t })))), tbody)));
      }
      tbody.append(...page[key].map(row));
      el.querySelector('.more')?.remove();
      if (cursor) {
        const button = h('button', { type: 'button', class: 'btn subtle more' }, 'Load more');
        button.addEventListener('click', () => busy(button, 'Loading…', () => load({ more: true }), el));
        el.append(button);
      }
    } catch (error) {
      if (error.status !== 401 && request === latest) fill(el, problemAlert(error));
    } finally {
      if (request === latest) el.setAttribute('aria-busy', 'false');
    }
  };
  return load;
}

const keyCell = (r) => (r.keyId
  ? [h('span', { class: 'cell-title', text: r.keyName ?? 'Deleted key' }), h('span', { class: 'cell-sub' }, h('code', { text: r.keyId }), r.keyLast4 ? ` · …${r.keyLast4}` : '')]
  : h('span', { class: 'muted', text: '—' }));

export const loadRequests = pagedList({
  body: 'requests-body', path: '/requests', key: 'requests',
  columns: ['Time', 'Request', 'Status', 'Key', 'Duration', 'Request ID', 'Lead'],
  emptyText: ['No requests yet', 'Calls to your lead endpoint will be listed here.'],
  row: (r) => h('tr', {},
    h('td', { 'data-label': 'Time' }, when(r.at)),
    h('th', { scope: 'row', 'data-label': 'Request' }, h('code', { text: `${r.method} ${r.path}` }), r.detail ? h('span', { class: 'cell-sub', text: r.detail }) : null),
    h('td', { 'data-label': 'Status' }, httpBadge(r.status)),
    h('td', { 'data-label': 'Key' }, keyCell(r)),
    h('td', { 'data-label': 'Duration', class: 'num', text: r.durationMs === null || r.durationMs === undefined ? '—' : `${count.format(r.durationMs)} ms` }),
    h('td', { 'data-label': 'Request ID' }, h('code', { class: 'request-id', title: r.requestId, text: r.requestId })),
    h('td', { 'data-label': 'Lead' }, r.clientId
      ? h('button', { type: 'button', class: 'btn subtle small', 'aria-label': `Trail of lead ${r.clientId}`, onclick: () => openTrail(r.clientId, r.requestId) }, 'Trail')
      : h('span', { class: 'muted', text: '—' }))),
});

/** An audit entry's facts in words: names, URLs, counts (never a key or a secret: the API has none). */
const facts = (detail) => Object.entries(detail ?? {}).filter(([, v]) => v !== undefined && v !== null)
  .map(([k, v]) => `${k}: ${Array.isArray(v) ? v.join(', ') : typeof v === 'object' ? JSON.stringify(v) : v}`).join(' · ');

export const loadAudit = pagedList({
  body: 'audit-body', path: '/audit', key: 'entries',
  columns: ['Time', 'Change', 'By', 'Target', 'Details'],
  emptyText: ['No changes yet', 'Every change made on this page (keys, endpoints, re-deliveries) is listed here.'],
  row: (e) => h('tr', {},
    h('td', { 'data-label': 'Time' }, when(e.at)),
    h('th', { scope: 'row', 'data-label': 'Change' }, h('code', { text: e.action })),
    h('td', { 'data-label': 'By', text: e.userId }),
    h('td', { 'data-label': 'Target' }, e.targetId ? h('code', { text: e.targetId }) : h('span', { class: 'muted', text: '—' })),
    h('td', { 'data-label': 'Details', class: 'wrap', text: facts(e.detail) })),
});
