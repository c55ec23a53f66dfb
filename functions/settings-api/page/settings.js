// The organization settings page (DESIGN §14). Plain DOM, no framework. Everything the API returns
// is set with textContent or attributes, never as HTML: the Content-Security-Policy forbids inline
// script, and this file never parses markup it did not write.

const TOKEN_KEY = 'crm-settings-token';
const $ = (id) => document.getElementById(id);

// ---------------------------------------------------------------------------------------------
// The session token: taken from the link's fragment (which never reaches a server log), kept for
// this tab only so a reload works, and removed from the address bar at once.

function takeToken() {
  const params = new URLSearchParams(location.hash.slice(1));
  const fromLink = params.get('token');
  if (fromLink) {
    sessionStorage.setItem(TOKEN_KEY, fromLink);
    history.replaceState(null, '', location.pathname + location.search);
  }
  return fromLink || sessionStorage.getItem(TOKEN_KEY);
}

/** The token's claims, unverified (the API verifies): only to show when the link stops working. */
function claimsOf(token) {
  try {
    const part = token.split('.')[1].replace(/-/g, '+').replace(/_/g, '/');
    return JSON.parse(atob(part.padEnd(part.length + ((4 - (part.length % 4)) % 4), '=')));
  } catch {
    return {};
  }
}

let token = null;

function showExpired() {
  sessionStorage.removeItem(TOKEN_KEY);
  token = null;
  for (const dialog of document.querySelectorAll('dialog[open]')) dialog.close();
  $('layout').hidden = true;
  $('boot').hidden = true;
  $('gate').hidden = false;
  $('org-name').textContent = 'Settings link needed';
  $('session-info').textContent = '';
  document.title = 'Link expired — Organization settings';
}

// ---------------------------------------------------------------------------------------------
// The API: relative to the page, so it works under an API Gateway stage prefix.

class ApiError extends Error {
  constructor(status, problem) {
    super(problem.detail || problem.title || `Request failed (${status})`);
    this.status = status;
    this.problem = problem;
  }
}

async function api(path, { method = 'GET', body } = {}) {
  if (!token) {
    showExpired();
    throw new ApiError(401, { title: 'Unauthorized' });
  }
  const headers = { Authorization: `Bearer ${token}`, Accept: 'application/json' };
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  let res;
  try {
    res = await fetch(new URL(`api/settings${path}`, document.baseURI), {
      method, headers, body: body === undefined ? undefined : JSON.stringify(body), cache: 'no-store',
    });
  } catch {
    throw new ApiError(0, { title: 'Network error', detail: 'Could not reach the server. Check your connection and try again.' });
  }
  const text = await res.text();
  let data = {};
  try {
    data = text ? JSON.parse(text) : {};
  } catch {
    data = { detail: `Unexpected answer from the server (${res.status}).` };
  }
  if (res.status === 401) {
    showExpired();
    throw new ApiError(401, data);
  }
  if (!res.ok) {
    if (res.status === 429 && !data.detail) data.detail = `Too many requests: try again in ${res.headers.get('Retry-After') || 'a few'} seconds.`;
    throw new ApiError(res.status, data);
  }
  return data;
}

// ---------------------------------------------------------------------------------------------
// DOM helpers: strings become text nodes; attributes are set, never HTML.

function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (value === undefined || value === null || value === false) continue;
    if (name === 'class') el.className = value;
    else if (name === 'text') el.textContent = value;
    else if (name.startsWith('on')) el.addEventListener(name.slice(2), value);
    else if (value === true) el.setAttribute(name, '');
    else el.setAttribute(name, String(value));
  }
  for (const child of children.flat()) {
    if (child === undefined || child === null || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return el;
}

/** Text whose `backticked` parts become <code>: the catalog's descriptions are written that way. */
const withCode = (text) => text.split(/`([^`]+)`/).map((part, i) => (i % 2 ? h('code', { text: part }) : part));

const fill = (container, ...children) => container.replaceChildren(...children.flat().filter(Boolean));

const dateTime = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'short' });
// Tables: this year's dates without the year.
const shortDateTime = new Intl.DateTimeFormat(undefined, { month: 'short', day: 'numeric', hour: 'numeric', minute: '2-digit' });
const compact = { format: (date) => (date.getFullYear() === new Date().getFullYear() ? shortDateTime : dateTime).format(date) };
const timeOnly = new Intl.DateTimeFormat(undefined, { hour: '2-digit', minute: '2-digit', second: '2-digit' });
const count = new Intl.NumberFormat();

/** A <time> in the browser's time zone, the ISO value in its datetime and title. */
function when(iso, format = compact) {
  if (!iso) return h('span', { class: 'muted', text: 'Never' });
  const date = new Date(iso);
  if (Number.isNaN(date.getTime())) return h('span', { text: iso });
  return h('time', { datetime: iso, title: iso, text: format.format(date) });
}

function money(amount, currency = 'USD') {
  if (amount === null || amount === undefined) return '—';
  return new Intl.NumberFormat(undefined, { style: 'currency', currency, maximumFractionDigits: amount !== 0 && Math.abs(amount) < 1 ? 4 : 2 }).format(amount);
}

const loading = (text = 'Loading…') => h('p', { class: 'loading' }, h('span', { class: 'spinner', 'aria-hidden': 'true' }), text);
const empty = (title, text) => h('div', { class: 'empty' }, h('p', { class: 'empty-title', text: title }), text ? h('p', { class: 'muted', text }) : null);

/** A problem+json answer as an alert: its detail, the field errors, the request id for support. */
function problemAlert(error) {
  const problem = error.problem || {};
  const fields = Array.isArray(problem.errors) ? problem.errors : [];
  return h('div', { class: 'alert error', role: 'alert' },
    h('p', { class: 'alert-title', text: problem.title && problem.detail ? problem.title : 'Something went wrong' }),
    h('p', { text: error.message }),
    fields.length ? h('ul', {}, fields.map((f) => h('li', { text: [f.field, f.message].filter(Boolean).join(': ') }))) : null,
    problem.instance ? h('p', { class: 'muted small', text: `Reference: ${problem.instance}` }) : null);
}

function badge(text, tone = 'neutral') {
  return h('span', { class: `badge ${tone}`, text });
}

const statusTone = {
  active: 'ok', delivered: 'ok', enabled: 'ok', closed: 'ok',
  expiring: 'warn', pending: 'info', retrying: 'warn', 'half-open': 'warn',
  expired: 'neutral', revoked: 'neutral', skipped: 'neutral', disabled: 'neutral',
  failed: 'bad', open: 'bad',
};
/** Only a delivery still being retried has a next attempt worth showing. */
const stillTrying = (d) => d.status === 'pending' || d.status === 'retrying';
const statusBadge = (status) => badge(status, statusTone[status] || 'neutral');

function httpBadge(code) {
  if (code === null || code === undefined) return badge('no answer', 'bad');
  return badge(String(code), code >= 200 && code < 300 ? 'ok' : code >= 500 ? 'bad' : 'warn');
}

async function copy(text, button) {
  const label = button.textContent;
  try {
    await navigator.clipboard.writeText(text);
    button.textContent = 'Copied';
  } catch {
    button.textContent = 'Select and copy';
  }
  setTimeout(() => { button.textContent = label; }, 2000);
}

/** A secret shown once: the only time the API returns it. */
function shownOnce(container, { title, secret, note }) {
  const value = h('code', { class: 'secret', 'data-testid': 'shown-once', text: secret });
  const copyButton = h('button', { type: 'button', class: 'btn small', onclick: () => copy(secret, copyButton) }, 'Copy');
  const panel = h('div', { class: 'reveal', role: 'region', 'aria-label': title },
    h('div', { class: 'reveal-head' },
      h('p', { class: 'reveal-title', text: title }),
      h('button', { type: 'button', class: 'btn subtle small', onclick: () => panel.remove() }, 'Done')),
    h('p', { class: 'muted', text: note }),
    h('div', { class: 'secret-row' }, value, copyButton));
  fill(container, panel);
  panel.scrollIntoView({ block: 'nearest', behavior: 'smooth' });
  return panel;
}

function flash(container, text, tone = 'ok') {
  fill(container, h('p', { class: `flash ${tone}`, text }));
}

/** Runs `work` with the button busy (disabled, with a progress label), showing errors in `errorsIn`. */
async function busy(button, label, work, errorsIn) {
  const original = button.textContent;
  button.disabled = true;
  button.setAttribute('aria-busy', 'true');
  button.textContent = label;
  try {
    return await work();
  } catch (error) {
    if (error.status !== 401 && errorsIn) fill(errorsIn, problemAlert(error));
    return undefined;
  } finally {
    button.disabled = false;
    button.removeAttribute('aria-busy');
    button.textContent = original;
  }
}

// ---------------------------------------------------------------------------------------------
// Dialogs: one confirm dialog reused; every dialog closes on its [data-close] button.

for (const dialog of document.querySelectorAll('dialog')) {
  for (const close of dialog.querySelectorAll('[data-close]')) close.addEventListener('click', () => dialog.close());
}

function formError(form, error) {
  const slot = form.querySelector('.form-error');
  if (!error) {
    slot.replaceChildren();
    return;
  }
  const fields = Array.isArray(error.problem?.errors) ? error.problem.errors : [];
  fill(slot, h('span', { text: error.message }),
    fields.length ? h('ul', {}, fields.map((f) => h('li', { text: [f.field, f.message].filter(Boolean).join(': ') }))) : null);
}

/** Opens `dialog` with its form; `onSubmit` returning true closes it. */
function openForm(dialog, onSubmit) {
  const form = dialog.querySelector('form');
  formError(form);
  form.onsubmit = async (event) => {
    event.preventDefault();
    const submit = form.querySelector('[type=submit]');
    formError(form);
    submit.disabled = true;
    submit.setAttribute('aria-busy', 'true');
    try {
      if (await onSubmit(form)) dialog.close();
    } catch (error) {
      if (error.status !== 401) formError(form, error);
    } finally {
      submit.disabled = false;
      submit.removeAttribute('aria-busy');
    }
  };
  dialog.showModal();
}

function confirmAction({ title, text, action, run }) {
  $('confirm-title').textContent = title;
  $('confirm-text').textContent = text;
  $('confirm-submit').textContent = action;
  openForm($('confirm-dialog'), async () => {
    await run();
    return true;
  });
}

// ---------------------------------------------------------------------------------------------
// Overview

let settings = null;

function renderOverview() {
  const { organization: org, usage } = settings;
  $('org-name').textContent = org.name;
  document.title = `${org.name} — Organization settings`;
  const stat = (label, value, sub) => h('div', { class: 'stat' },
    h('p', { class: 'stat-label', text: label }), h('p', { class: 'stat-value', text: value }), sub ? h('p', { class: 'stat-sub', text: sub }) : null);
  const prepaid = org.billing === 'prepaid';
  fill($('overview-stats'),
    stat('Plan', org.plan ? org.plan[0].toUpperCase() + org.plan.slice(1) : '—', prepaid ? 'Prepaid wallet' : 'Billed monthly'),
    stat('API calls today', count.format(usage.today.calls), `${money(usage.today.billed, org.currency)} billed`),
    stat('API calls this month', count.format(usage.month.calls), `${money(usage.month.billed, org.currency)} billed`),
    stat('Wallet balance', prepaid ? money(org.walletBalance, org.currency) : 'Not used', prepaid ? 'Calls are paid from this balance' : 'Postpaid plan'));
  const endpoint = h('code', { text: settings.leadEndpoint });
  const copyButton = h('button', { type: 'button', class: 'btn subtle small', onclick: () => copy(settings.leadEndpoint, copyButton) }, 'Copy');
  fill($('overview-facts'),
    h('div', {}, h('dt', { text: 'Lead endpoint' }), h('dd', { class: 'copy-line' }, endpoint, copyButton)),
    h('div', {}, h('dt', { text: 'Organization ID' }), h('dd', {}, h('code', { text: org.id }))),
    duplicatePolicyFact(org));
}

/** What a lead matching an existing client does (docs/leads.md "Duplicates"): a select that saves on change. */
function duplicatePolicyFact(org) {
  const select = h('select', { id: 'duplicate-policy', 'aria-describedby': 'duplicate-policy-status' },
    h('option', { value: 'flag', text: 'Flag as a possible duplicate' }),
    h('option', { value: 'merge', text: 'Merge into the existing client' }));
  select.value = org.duplicatePolicy || 'flag';
  const status = h('span', { id: 'duplicate-policy-status', class: 'stat-sub', role: 'status' });
  select.addEventListener('change', async () => {
    select.disabled = true;
    try {
      settings = await api('', { method: 'PATCH', body: { duplicate_policy: select.value } });
      status.textContent = 'Saved';
    } catch (error) {
      select.value = settings.organization.duplicatePolicy || 'flag';
      status.textContent = error.message;
    } finally {
      select.disabled = false;
    }
  });
  return h('div', {}, h('dt', {}, h('label', { for: 'duplicate-policy', text: 'Duplicate leads' })), h('dd', {}, select, ' ', status));
}

// ---------------------------------------------------------------------------------------------
// API keys

async function loadKeys() {
  const body = $('keys-body');
  if (!body.querySelector('table')) fill(body, loading('Loading keys…'));
  try {
    const { keys } = await api('/keys');
    renderKeys(keys);
  } catch (error) {
    if (error.status !== 401) fill(body, problemAlert(error));
  }
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
    return h('tr', { 'data-key-id': key.id },
      h('th', { scope: 'row' }, h('span', { class: 'cell-title', text: key.name || 'Unnamed key' }),
        h('span', { class: 'cell-sub', text: key.kind === 'publishable' ? `Publishable${key.origins?.length ? ` · ${key.origins.join(', ')}` : ''}` : 'Secret' })),
      h('td', { 'data-label': 'Key' }, h('code', { text: key.prefix })),
      h('td', { 'data-label': 'Status' }, statusBadge(key.status),
        key.status === 'expiring' && key.expiresAt ? h('span', { class: 'cell-sub' }, 'until ', when(key.expiresAt)) : null),
      h('td', { 'data-label': 'Created' }, when(key.createdAt)),
      h('td', { 'data-label': 'Last used' }, when(key.lastUsedAt)),
      h('td', { class: 'actions' }, live
        ? [h('button', { type: 'button', class: 'btn subtle small', onclick: () => rotateKey(key) }, 'Rotate'),
           h('button', { type: 'button', class: 'btn danger-subtle small', onclick: () => revokeKey(key) }, 'Revoke')]
        : key.status === 'expiring'
          ? h('button', { type: 'button', class: 'btn danger-subtle small', onclick: () => revokeKey(key) }, 'Revoke now')
          : null));
  });
  fill(body, h('div', { class: 'table-wrap' }, h('table', { class: 'data' },
    h('thead', {}, h('tr', {}, ['Name', 'Key', 'Status', 'Created', 'Last used', ''].map((t) => h('th', { scope: 'col', text: t })))),
    h('tbody', {}, rows))));
}

function generateKey() {
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
    shownOnce($('keys-reveal'), {
      title: `Your new key “${created.key.name || name}”`,
      secret: created.secret,
      note: 'Copy it now and keep it somewhere safe: it will not be shown again.',
    });
    await loadKeys();
    return true;
  });
  $('key-name').focus();
}

function rotateKey(key) {
  $('rotate-dialog-title').textContent = `Rotate “${key.name || key.prefix}”`;
  $('rotate-text').textContent = 'A new key replaces this one. Keep the old key working for a while so you can update your website and tools without missing leads.';
  $('rotate-form').reset();
  openForm($('rotate-dialog'), async (form) => {
    const graceHours = Number(form.elements.grace.value);
    const rotated = await api(`/keys/${encodeURIComponent(key.id)}/rotate`, { method: 'POST', body: { grace_hours: graceHours } });
    shownOnce($('keys-reveal'), {
      title: `New key for “${rotated.key.name || key.name}”`,
      secret: rotated.secret,
      note: graceHours > 0 && rotated.previous?.expiresAt
        ? `Copy it now: it will not be shown again. The old key keeps working until ${dateTime.format(new Date(rotated.previous.expiresAt))}.`
        : 'Copy it now: it will not be shown again. The old key has stopped working.',
    });
    await loadKeys();
    return true;
  });
}

function revokeKey(key) {
  confirmAction({
    title: `Revoke “${key.name || key.prefix}”?`,
    text: 'Anything still using this key will be refused at once. This cannot be undone.',
    action: 'Revoke key',
    run: async () => {
      await api(`/keys/${encodeURIComponent(key.id)}`, { method: 'DELETE' });
      flash($('keys-status'), `Key “${key.name || key.prefix}” revoked.`);
      await loadKeys();
    },
  });
}

// ---------------------------------------------------------------------------------------------
// Webhooks

let catalog = null;
let endpoints = [];

async function loadCatalog() {
  if (catalog) return catalog;
  const { events } = await api('/events');
  catalog = events;
  return catalog;
}

async function loadWebhooks() {
  const body = $('webhooks-body');
  if (!body.querySelector('.endpoint')) fill(body, loading('Loading endpoints…'));
  try {
    ({ endpoints } = await api('/webhooks'));
    renderWebhooks();
    renderEndpointFilter();
  } catch (error) {
    if (error.status !== 401) fill(body, problemAlert(error));
  }
}

function renderWebhooks() {
  const body = $('webhooks-body');
  if (!endpoints.length) {
    fill(body, empty('No webhooks yet — add an endpoint to get events', 'An endpoint is a URL on your server that receives a signed POST for each event.'));
    return;
  }
  fill(body, endpoints.map(renderEndpoint));
}

function renderEndpoint(endpoint) {
  const outcome = h('div', { class: 'test-outcome', role: 'status', 'aria-live': 'polite' });
  const errors = h('div', {});
  const testButton = h('button', { type: 'button', class: 'btn small', disabled: !endpoint.enabled }, 'Send test event');
  testButton.addEventListener('click', () => sendTest(endpoint, testButton, outcome, errors));
  const circuit = endpoint.circuit && endpoint.circuit.state !== 'closed'
    ? h('span', { class: 'cell-sub' }, badge(endpoint.circuit.state === 'open' ? 'paused after failures' : 'recovering', 'warn'),
      endpoint.circuit.until ? [' until ', when(endpoint.circuit.until)] : null)
    : null;
  const events = endpoint.events.length
    ? h('ul', { class: 'chips', 'aria-label': 'Subscribed events' }, endpoint.events.map((e) => h('li', {}, h('code', { text: e }))))
    : h('p', { class: 'muted', text: 'No events selected.' });
  return h('article', { class: `endpoint${endpoint.enabled ? '' : ' is-disabled'}`, 'aria-label': endpoint.url, 'data-endpoint-id': endpoint.id },
    h('div', { class: 'endpoint-head' },
      h('div', { class: 'endpoint-id' },
        h('p', { class: 'endpoint-url' }, h('code', { text: endpoint.url })),
        h('p', { class: 'cell-sub' }, statusBadge(endpoint.enabled ? 'enabled' : 'disabled'), ' ',
          endpoint.description ? h('span', { text: endpoint.description }) : null,
          endpoint.description ? ' · ' : null, 'Added ', when(endpoint.createdAt)),
        circuit,
        endpoint.disabledReason ? h('p', { class: 'cell-sub warn-text', text: `Disabled automatically: ${endpoint.disabledReason}` }) : null,
        endpoint.failingSince && !endpoint.disabledReason ? h('p', { class: 'cell-sub warn-text' }, 'Failing since ', when(endpoint.failingSince)) : null),
      h('div', { class: 'endpoint-actions' },
        testButton,
        h('button', { type: 'button', class: 'btn subtle small', onclick: () => editEndpoint(endpoint) }, 'Edit'),
        h('button', { type: 'button', class: 'btn subtle small', onclick: (e) => toggleEndpoint(endpoint, e.currentTarget) }, endpoint.enabled ? 'Disable' : 'Enable'),
        h('button', { type: 'button', class: 'btn subtle small', onclick: () => rotateSecret(endpoint) }, 'Rotate secret'),
        h('button', { type: 'button', class: 'btn danger-subtle small', onclick: () => deleteEndpoint(endpoint) }, 'Delete'))),
    events, outcome, errors);
}

const lastAttempt = (delivery) => delivery.attempts?.[delivery.attempts.length - 1] ?? null;

async function sendTest(endpoint, button, outcome, errors) {
  errors.replaceChildren();
  fill(outcome, h('p', { class: 'loading' }, h('span', { class: 'spinner', 'aria-hidden': 'true' }), 'Sending a test event and waiting for your endpoint to answer…'));
  const result = await busy(button, 'Sending…', () => api(`/webhooks/${encodeURIComponent(endpoint.id)}/test`, { method: 'POST', body: {} }), errors);
  if (!result) {
    outcome.replaceChildren();
    return;
  }
  const { delivery } = result;
  const attempt = lastAttempt(delivery);
  const ok = delivery.status === 'delivered';
  const headline = ok ? 'Test event delivered' : delivery.status === 'pending' && !attempt ? 'Test event queued' : 'Test event not delivered';
  fill(outcome, h('div', { class: `outcome ${ok ? 'ok' : delivery.status === 'pending' && !attempt ? 'info' : 'bad'}` },
    h('p', { class: 'outcome-title' }, headline, ' ', attempt ? httpBadge(attempt.statusCode) : null,
      attempt?.durationMs !== undefined && attempt?.durationMs !== null ? h('span', { class: 'muted', text: ` in ${count.format(attempt.durationMs)} ms` }) : null),
    h('p', { class: 'muted small' }, h('code', { text: delivery.eventType }), ' at ', when(attempt?.at || delivery.updatedAt || delivery.createdAt, timeOnly),
      attempt?.error ? ` · ${attempt.error}` : '',
      !attempt ? ' · the outcome will appear under Deliveries' : ''),
    attempt?.responseExcerpt ? h('pre', { class: 'excerpt', text: attempt.responseExcerpt }) : null,
    h('button', { type: 'button', class: 'btn link small', onclick: () => openDelivery(delivery.id) }, 'View delivery')));
  loadDeliveries();
}

function renderEventsPicker(selected) {
  const groups = new Map();
  for (const event of catalog) {
    if (!groups.has(event.group)) groups.set(event.group, []);
    groups.get(event.group).push(event);
  }
  fill($('events-groups'), [...groups].map(([group, events]) => h('div', { class: 'event-group' },
    h('p', { class: 'event-group-title', text: group }),
    events.map((event) => h('label', { class: 'event-option' },
      h('input', { type: 'checkbox', name: 'events', value: event.name, checked: selected.has(event.name) }),
      h('span', { class: 'event-names' }, h('code', { text: event.name }), event.alias ? h('span', { class: 'alias' }, 'also ', h('code', { text: event.alias })) : null),
      event.description ? h('span', { class: 'event-description' }, withCode(event.description)) : null)))));
}

async function endpointDialog(endpoint) {
  const form = $('endpoint-form');
  form.reset();
  $('endpoint-dialog-title').textContent = endpoint ? 'Edit endpoint' : 'Add endpoint';
  $('endpoint-submit').textContent = endpoint ? 'Save changes' : 'Save endpoint';
  $('endpoint-url').value = endpoint?.url || '';
  $('endpoint-description').value = endpoint?.description || '';
  fill($('events-groups'), loading('Loading events…'));
  openForm($('endpoint-dialog'), async () => {
    const events = [...form.querySelectorAll('input[name=events]:checked')].map((i) => i.value);
    const body = { url: $('endpoint-url').value.trim(), events, description: $('endpoint-description').value.trim() || undefined };
    if (endpoint) {
      await api(`/webhooks/${encodeURIComponent(endpoint.id)}`, { method: 'PATCH', body: { ...body, description: body.description ?? null } });
      flash($('webhooks-status'), 'Endpoint saved.');
    } else {
      const created = await api('/webhooks', { method: 'POST', body });
      shownOnce($('webhooks-reveal'), {
        title: `Signing secret for ${created.endpoint.url}`,
        secret: created.secret,
        note: 'Use it to verify the webhook-signature header of each request (Standard Webhooks). Copy it now: it will not be shown again.',
      });
    }
    await loadWebhooks();
    return true;
  });
  try {
    await loadCatalog();
    renderEventsPicker(new Set(endpoint?.events || []));
  } catch (error) {
    if (error.status !== 401) fill($('events-groups'), problemAlert(error));
  }
}
const editEndpoint = (endpoint) => endpointDialog(endpoint);

async function toggleEndpoint(endpoint, button) {
  const done = await busy(button, endpoint.enabled ? 'Disabling…' : 'Enabling…',
    () => api(`/webhooks/${encodeURIComponent(endpoint.id)}`, { method: 'PATCH', body: { enabled: !endpoint.enabled } }), $('webhooks-status'));
  if (done) {
    flash($('webhooks-status'), `Endpoint ${endpoint.enabled ? 'disabled: no events will be sent to it' : 'enabled'}.`);
    await loadWebhooks();
  }
}

function rotateSecret(endpoint) {
  $('rotate-dialog-title').textContent = 'Rotate signing secret';
  $('rotate-text').textContent = `A new secret signs events sent to ${endpoint.url}. During the grace period each request carries both signatures, so you can switch your server over without failures.`;
  $('rotate-form').reset();
  openForm($('rotate-dialog'), async (form) => {
    const rotated = await api(`/webhooks/${encodeURIComponent(endpoint.id)}/rotate-secret`, { method: 'POST', body: { grace_hours: Number(form.elements.grace.value) } });
    shownOnce($('webhooks-reveal'), {
      title: `New signing secret for ${endpoint.url}`,
      secret: rotated.secret,
      note: 'Copy it now: it will not be shown again.',
    });
    await loadWebhooks();
    return true;
  });
}

function deleteEndpoint(endpoint) {
  confirmAction({
    title: 'Delete this endpoint?',
    text: `Events will no longer be sent to ${endpoint.url}. Its delivery history stays available for 30 days.`,
    action: 'Delete endpoint',
    run: async () => {
      await api(`/webhooks/${encodeURIComponent(endpoint.id)}`, { method: 'DELETE' });
      flash($('webhooks-status'), 'Endpoint deleted.');
      await loadWebhooks();
    },
  });
}

// ---------------------------------------------------------------------------------------------
// Deliveries

let deliveryCursor = null;
// Filters change faster than answers come back: only the latest request's answer is shown.
let deliveriesRequest = 0;

function renderEndpointFilter() {
  const select = $('filter-endpoint');
  const current = select.value;
  fill(select, h('option', { value: '', text: 'All endpoints' }), endpoints.map((e) => h('option', { value: e.id, text: e.url })));
  if (endpoints.some((e) => e.id === current)) select.value = current;
}

function deliveryQuery(cursor) {
  const params = new URLSearchParams();
  if ($('filter-status').value) params.set('status', $('filter-status').value);
  if ($('filter-endpoint').value) params.set('endpoint', $('filter-endpoint').value);
  if (cursor) params.set('cursor', cursor);
  params.set('limit', '25');
  return `/deliveries?${params}`;
}

async function loadDeliveries({ more = false } = {}) {
  const body = $('deliveries-body');
  if (!more && !body.querySelector('table')) fill(body, loading('Loading deliveries…'));
  const request = ++deliveriesRequest;
  body.setAttribute('aria-busy', 'true');
  try {
    const page = await api(deliveryQuery(more ? deliveryCursor : null));
    if (request !== deliveriesRequest) return;
    deliveryCursor = page.nextCursor;
    renderDeliveries(page.deliveries, more);
  } catch (error) {
    if (error.status !== 401 && request === deliveriesRequest) fill(body, problemAlert(error));
  } finally {
    if (request === deliveriesRequest) body.setAttribute('aria-busy', 'false');
  }
}

function deliveryRow(d) {
  return h('tr', { 'data-delivery-id': d.id },
    h('td', { 'data-label': 'Time' }, when(d.createdAt)),
    h('th', { scope: 'row', 'data-label': 'Event' }, h('code', { text: d.eventType })),
    h('td', { 'data-label': 'Endpoint', class: 'truncate', title: d.url, text: d.url }),
    h('td', { 'data-label': 'Status' }, statusBadge(d.status),
      d.nextAttemptAt && stillTrying(d) ? h('span', { class: 'cell-sub' }, 'next try ', when(d.nextAttemptAt, timeOnly)) : null,
      d.reason ? h('span', { class: 'cell-sub', text: d.reason }) : null),
    h('td', { 'data-label': 'Attempts', class: 'num', text: String(d.attemptCount) }),
    h('td', { 'data-label': 'Last answer' }, d.attemptCount ? httpBadge(d.lastStatusCode) : h('span', { class: 'muted', text: '—' })),
    h('td', { class: 'actions' }, h('button', { type: 'button', class: 'btn subtle small', 'aria-label': `Details of ${d.eventType} delivery to ${d.url}`, onclick: () => openDelivery(d.id) }, 'Details')));
}

function renderDeliveries(deliveries, more) {
  const body = $('deliveries-body');
  let tbody = body.querySelector('tbody');
  if (!more || !tbody) {
    const filtered = $('filter-status').value || $('filter-endpoint').value;
    if (!deliveries.length) {
      fill(body, filtered
        ? empty('No deliveries match these filters')
        : empty('No deliveries yet', 'When an event is sent to one of your endpoints, it shows up here with every attempt.'));
      return;
    }
    tbody = h('tbody', {});
    fill(body, h('div', { class: 'table-wrap' }, h('table', { class: 'data' },
      h('thead', {}, h('tr', {}, ['Time', 'Event', 'Endpoint', 'Status', 'Attempts', 'Last answer', ''].map((t) => h('th', { scope: 'col', text: t })))),
      tbody)));
  }
  tbody.append(...deliveries.map(deliveryRow));
  body.querySelector('.more')?.remove();
  if (deliveryCursor) {
    const button = h('button', { type: 'button', class: 'btn subtle more' }, 'Load more');
    button.addEventListener('click', () => busy(button, 'Loading…', () => loadDeliveries({ more: true }), $('deliveries-status')));
    body.append(button);
  }
}

let openDeliveryId = null;

async function openDelivery(id) {
  openDeliveryId = id;
  const dialog = $('delivery-dialog');
  fill($('delivery-detail'), loading());
  if (!dialog.open) dialog.showModal();
  await showDelivery(id);
}

async function showDelivery(id, note) {
  try {
    const { delivery } = await api(`/deliveries/${encodeURIComponent(id)}`);
    if (openDeliveryId === id) renderDelivery(delivery, note);
    return delivery;
  } catch (error) {
    if (error.status !== 401) fill($('delivery-detail'), problemAlert(error));
    return undefined;
  }
}

function renderDelivery(d, note) {
  $('delivery-dialog-title').textContent = `Delivery of ${d.eventType}`;
  const status = h('div', { role: 'status', class: 'inline-status' }, note ? h('p', { class: 'flash info', text: note }) : null);
  const redeliver = h('button', { type: 'button', class: 'btn primary small' }, 'Re-deliver');
  redeliver.addEventListener('click', () => redeliverOne(d, redeliver, status));
  const attempts = d.attempts || [];
  fill($('delivery-detail'),
    h('dl', { class: 'facts compact' },
      h('div', {}, h('dt', { text: 'Status' }), h('dd', {}, statusBadge(d.status), d.reason ? h('span', { class: 'cell-sub', text: d.reason }) : null)),
      h('div', {}, h('dt', { text: 'Endpoint' }), h('dd', {}, h('code', { text: d.url }))),
      h('div', {}, h('dt', { text: 'Event ID' }), h('dd', {}, h('code', { text: d.eventId }))),
      h('div', {}, h('dt', { text: 'Created' }), h('dd', {}, when(d.createdAt))),
      d.nextAttemptAt && stillTrying(d) ? h('div', {}, h('dt', { text: 'Next attempt' }), h('dd', {}, when(d.nextAttemptAt))) : null),
    h('div', { class: 'row-actions' }, redeliver),
    status,
    h('h3', { text: `Attempts (${attempts.length})` }),
    attempts.length
      ? h('ol', { class: 'attempts' }, attempts.map((a) => h('li', { class: 'attempt' },
        h('div', { class: 'attempt-head' },
          h('span', { class: 'attempt-no', text: `#${a.attempt}` }), httpBadge(a.statusCode),
          h('span', { class: 'muted' }, when(a.at, dateTime), a.durationMs !== null && a.durationMs !== undefined ? ` · ${count.format(a.durationMs)} ms` : '')),
        a.error ? h('p', { class: 'attempt-error', text: a.error }) : null,
        a.responseExcerpt ? h('pre', { class: 'excerpt', 'aria-label': `Response to attempt ${a.attempt}`, text: a.responseExcerpt }) : null)))
      : h('p', { class: 'muted', text: 'No attempts yet.' }),
    h('details', { class: 'payload' }, h('summary', { text: 'Payload' }), h('pre', { class: 'excerpt', text: JSON.stringify(d.payload, null, 2) })));
}

async function redeliverOne(d, button, status) {
  const before = d.attempts?.length ?? d.attemptCount;
  const queued = await busy(button, 'Queuing…', () => api(`/deliveries/${encodeURIComponent(d.id)}/redeliver`, { method: 'POST', body: {} }), status);
  if (!queued) return;
  flash(status, 'Queued for re-delivery. Waiting for the new attempt…', 'info');
  // The new attempt is made by the delivery worker: watch for it for a while.
  for (let i = 0; i < 20 && openDeliveryId === d.id && $('delivery-dialog').open; i++) {
    await new Promise((resolve) => setTimeout(resolve, 1000));
    const latest = await showDelivery(d.id, 'Queued for re-delivery. Waiting for the new attempt…');
    if (!latest || (latest.attempts?.length ?? latest.attemptCount) > before) {
      if (latest) renderDelivery(latest, latest.status === 'delivered' ? 'Re-delivered.' : 'The new attempt is recorded below.');
      break;
    }
  }
  loadDeliveries();
}

function redeliverAllFailed() {
  const endpointId = $('filter-endpoint').value;
  const endpoint = endpoints.find((e) => e.id === endpointId);
  confirmAction({
    title: 'Re-deliver all failed deliveries?',
    text: endpoint
      ? `Every failed delivery to ${endpoint.url} will be sent again.`
      : 'Every failed delivery to any of your endpoints will be sent again.',
    action: 'Re-deliver',
    run: async () => {
      const { count: queued, notRedeliverable, remaining } = await api('/deliveries/redeliver', { method: 'POST', body: endpointId ? { endpoint: endpointId } : {} });
      const skipped = (notRedeliverable ? ` ${count.format(notRedeliverable)} could not be sent again: their content is no longer kept.` : '')
        + (remaining ? ` ${count.format(remaining)} more are waiting: press “Re-deliver all failed” again to queue them.` : '');
      flash($('deliveries-status'), (queued ? `${count.format(queued)} failed ${queued === 1 ? 'delivery' : 'deliveries'} queued for re-delivery.` : 'There were no failed deliveries to send again.') + skipped, queued ? 'ok' : 'info');
      await loadDeliveries();
    },
  });
}

// ---------------------------------------------------------------------------------------------
// Quick start and request log

function renderQuickstart() {
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
      h('pre', { class: 'code' }, h('code', { text: example.command })));
  }));
}

let requestCursor = null;
let requestsRequest = 0;

async function loadRequests({ more = false } = {}) {
  const body = $('requests-body');
  if (!more && !body.querySelector('table')) fill(body, loading('Loading requests…'));
  const request = ++requestsRequest;
  body.setAttribute('aria-busy', 'true');
  try {
    const params = new URLSearchParams({ limit: '25' });
    if (more && requestCursor) params.set('cursor', requestCursor);
    const page = await api(`/requests?${params}`);
    if (request !== requestsRequest) return;
    requestCursor = page.nextCursor;
    renderRequests(page.requests, more);
  } catch (error) {
    if (error.status !== 401 && request === requestsRequest) fill(body, problemAlert(error));
  } finally {
    if (request === requestsRequest) body.setAttribute('aria-busy', 'false');
  }
}

function renderRequests(requests, more) {
  const body = $('requests-body');
  let tbody = body.querySelector('tbody');
  if (!more || !tbody) {
    if (!requests.length) {
      fill(body, empty('No requests yet', 'Calls to your lead endpoint will be listed here.'));
      return;
    }
    tbody = h('tbody', {});
    fill(body, h('div', { class: 'table-wrap' }, h('table', { class: 'data' },
      h('thead', {}, h('tr', {}, ['Time', 'Request', 'Status', 'Key', 'Duration', 'Request ID'].map((t) => h('th', { scope: 'col', text: t })))),
      tbody)));
  }
  tbody.append(...requests.map((r) => h('tr', {},
    h('td', { 'data-label': 'Time' }, when(r.at)),
    h('th', { scope: 'row', 'data-label': 'Request' }, h('code', { text: `${r.method} ${r.path}` }), r.detail ? h('span', { class: 'cell-sub', text: r.detail }) : null),
    h('td', { 'data-label': 'Status' }, httpBadge(r.status)),
    h('td', { 'data-label': 'Key' }, r.keyId ? h('code', { text: r.keyId }) : h('span', { class: 'muted', text: '—' })),
    h('td', { 'data-label': 'Duration', class: 'num', text: r.durationMs === null || r.durationMs === undefined ? '—' : `${count.format(r.durationMs)} ms` }),
    h('td', { 'data-label': 'Request ID' }, h('code', { class: 'request-id', title: r.requestId, text: r.requestId })))));
  body.querySelector('.more')?.remove();
  if (requestCursor) {
    const button = h('button', { type: 'button', class: 'btn subtle more' }, 'Load more');
    button.addEventListener('click', () => busy(button, 'Loading…', () => loadRequests({ more: true }), body));
    body.append(button);
  }
}

// ---------------------------------------------------------------------------------------------
// Start

function wire() {
  $('generate-key').addEventListener('click', generateKey);
  $('add-endpoint').addEventListener('click', () => endpointDialog(null));
  $('redeliver-failed').addEventListener('click', redeliverAllFailed);
  $('refresh-deliveries').addEventListener('click', (e) => busy(e.currentTarget, 'Refreshing…', () => loadDeliveries(), $('deliveries-status')));
  $('refresh-requests').addEventListener('click', (e) => busy(e.currentTarget, 'Refreshing…', () => loadRequests(), $('requests-body')));
  $('filter-status').addEventListener('change', () => loadDeliveries());
  $('filter-endpoint').addEventListener('change', () => loadDeliveries());
  $('delivery-filters').addEventListener('submit', (e) => e.preventDefault());
  $('delivery-dialog').addEventListener('close', () => { openDeliveryId = null; });
  for (const radio of document.querySelectorAll('#key-form input[name=kind]')) {
    radio.addEventListener('change', () => {
      const secret = $('key-form').elements.kind.value !== 'publishable';
      $('key-origins-field').hidden = secret;
      $('key-thanks-field').hidden = secret;
    });
  }
  $('events-all').addEventListener('click', () => { for (const box of document.querySelectorAll('#events-groups input')) box.checked = true; });
  $('events-none').addEventListener('click', () => { for (const box of document.querySelectorAll('#events-groups input')) box.checked = false; });
}

async function start() {
  token = takeToken();
  if (!token) {
    showExpired();
    return;
  }
  const { exp } = claimsOf(token);
  if (typeof exp === 'number') {
    const left = exp * 1000 - Date.now();
    if (left <= 0) {
      showExpired();
      return;
    }
    $('session-info').replaceChildren('Link valid until ', when(new Date(exp * 1000).toISOString(), timeOnly));
    // A page left open past the link's expiry says so before the next click fails.
    if (left < 2 ** 31) setTimeout(showExpired, left);
  }
  wire();
  try {
    settings = await api('');
  } catch (error) {
    if (error.status === 401) return;
    $('boot').hidden = true;
    $('gate').hidden = false;
    $('gate-title').textContent = 'Your settings could not be loaded';
    fill($('gate-text'), error.message);
    return;
  }
  $('boot').hidden = true;
  $('layout').hidden = false;
  renderOverview();
  renderQuickstart();
  await Promise.all([loadKeys(), loadWebhooks().then(() => loadDeliveries()), loadRequests()]);
}

start();
