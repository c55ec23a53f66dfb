// The delivery log (docs/settings.md "Deliveries"): filters by status, endpoint, event type and
// time, search by event or delivery id; each delivery's attempts numbered over its life (a
// re-delivery continues the numbering and is marked manual); "Retry now" for one still retrying;
// "Re-deliver failed" and "Recover" (failed since a time: counted first, then queued). A
// re-delivery to a paused or disabled endpoint says so instead of waiting for an attempt.

import { $, badge, busy, confirmAction, count, dateTime, empty, fill, flash, h, httpBadge, loading, openForm, problemAlert, scrollable, statusBadge, stillTrying, timeOnly, upcoming, when } from './dom.js';
import { api } from './session.js';
import { endpoints, loadCatalog } from './webhooks.js';

let cursor = null;
/** Pages shown beyond the first ("Load more"): the live refresh leaves a longer list alone. */
let extraPages = 0;
// Filters change faster than answers come back: only the latest request's answer is shown.
let latest = 0;
let openId = null;
/** What the first page showed last: a live refresh that finds the same leaves the table (and the focus in it) alone. */
let shownFirstPage = '';

export function renderEndpointFilter() {
  for (const id of ['filter-endpoint', 'recover-endpoint']) {
    const select = $(id);
    const current = select.value;
    fill(select, h('option', { value: '', text: 'All endpoints' }), endpoints.map((e) => h('option', { value: e.id, text: e.url })));
    if (endpoints.some((e) => e.id === current)) select.value = current;
  }
}

export async function renderEventFilter() {
  try {
    const catalog = await loadCatalog();
    fill($('filter-event'), h('option', { value: '', text: 'All event types' }), h('option', { value: 'webhook.test', text: 'webhook.test' }),
      catalog.map((e) => h('option', { value: e.name, text: e.name })));
  } catch { /* the list still works without this filter's options */ }
}

/** A datetime-local value (the browser's time zone) as ISO 8601, or undefined. */
const isoOf = (local) => (local ? new Date(local).toISOString() : undefined);

function query(more) {
  const params = new URLSearchParams();
  const fields = { status: 'filter-status', endpoint: 'filter-endpoint', event_type: 'filter-event', search: 'filter-search' };
  for (const [name, id] of Object.entries(fields)) if ($(id).value.trim()) params.set(name, $(id).value.trim());
  for (const [name, id] of [['since', 'filter-since'], ['until', 'filter-until']]) if ($(id).value) params.set(name, isoOf($(id).value));
  if (more && cursor) params.set('cursor', cursor);
  params.set('limit', '25');
  return `/deliveries?${params}`;
}

const filtered = () => ['filter-status', 'filter-endpoint', 'filter-event', 'filter-search', 'filter-since', 'filter-until'].some((id) => $(id).value.trim());

/** `quiet`: the live refresh (settings.js): no spinner, errors left unshown, a longer list left alone. */
export async function loadDeliveries({ more = false, quiet = false } = {}) {
  const body = $('deliveries-body');
  if (quiet && extraPages > 0) return;
  if (!more && !quiet && !body.querySelector('table')) fill(body, loading('Loading deliveries…'));
  const request = ++latest;
  body.setAttribute('aria-busy', 'true');
  try {
    const page = await api(query(more));
    if (request !== latest) return;
    cursor = page.nextCursor;
    extraPages = more ? extraPages + 1 : 0;
    // Past next-try times fall out of view as time passes, so the clock is part of what is shown.
    const seen = JSON.stringify([page, page.deliveries.map((d) => upcoming(d.nextAttemptAt))]);
    if (quiet && !more && seen === shownFirstPage) return;
    if (!more) shownFirstPage = seen;
    render(page.deliveries, more);
  } catch (error) {
    if (error.status !== 401 && request === latest && !quiet) fill(body, problemAlert(error));
  } finally {
    if (request === latest) body.setAttribute('aria-busy', 'false');
  }
}

function row(d) {
  const retryNow = h('button', { type: 'button', class: 'btn small', 'aria-label': `Retry now: ${d.eventType} to ${d.url}` }, 'Retry now');
  retryNow.addEventListener('click', () => busy(retryNow, 'Queuing…', async () => {
    const answer = await api(`/deliveries/${encodeURIComponent(d.id)}/redeliver`, { method: 'POST', body: {} });
    flash($('deliveries-status'), whereItGoes(answer.endpoint) ?? `Retrying ${d.eventType} to ${d.url ?? 'its endpoint'} now.`, answer.endpoint?.state === 'ready' ? 'ok' : 'info');
    await loadDeliveries();
  }, $('deliveries-status')));
  return h('tr', { 'data-delivery-id': d.id },
    h('td', { 'data-label': 'Time' }, when(d.createdAt)),
    h('th', { scope: 'row', 'data-label': 'Event' }, h('code', { text: d.eventType })),
    h('td', { 'data-label': 'Endpoint', class: 'truncate', title: d.url, text: d.url }),
    h('td', { 'data-label': 'Status' }, statusBadge(d.status),
      stillTrying(d) && upcoming(d.nextAttemptAt) ? h('span', { class: 'cell-sub' }, 'next try ', when(d.nextAttemptAt, timeOnly)) : null,
      d.reason ? h('span', { class: 'cell-sub', text: d.reason }) : null),
    h('td', { 'data-label': 'Attempts', class: 'num', text: String(d.attemptCount) }),
    h('td', { 'data-label': 'Last answer' }, d.attemptCount ? httpBadge(d.lastStatusCode) : h('span', { class: 'muted', text: '—' })),
    h('td', { class: 'actions', 'data-label': 'Actions' },
      d.status === 'retrying' ? retryNow : null,
      h('button', { type: 'button', class: 'btn subtle small', 'aria-label': `Details of ${d.eventType} delivery to ${d.url}`, onclick: () => openDelivery(d.id) }, 'Details')));
}

function render(deliveries, more) {
  const body = $('deliveries-body');
  let tbody = body.querySelector('tbody');
  if (!more || !tbody) {
    if (!deliveries.length) {
      // A cursor without rows: the server looked at its read limit of deliveries and found no match yet; older ones may.
      fill(body, cursor
        ? empty('None found in the newest deliveries', 'No delivery among the newest ones looked at matches these filters. Older ones may: load more to keep looking.')
        : filtered()
          ? empty('No deliveries match these filters')
          : empty('No deliveries yet', 'When an event is sent to one of your endpoints, it shows up here with every attempt.'));
      if (cursor) body.append(loadMoreButton());
      return;
    }
    tbody = h('tbody', {});
    fill(body, h('div', { class: 'table-wrap' }, h('table', { class: 'data' },
      h('thead', {}, h('tr', {}, ['Time', 'Event', 'Endpoint', 'Status', 'Attempts', 'Last answer', 'Actions'].map((t) => h('th', { scope: 'col', text: t })))),
      tbody)));
  }
  tbody.append(...deliveries.map(row));
  body.querySelector('.more')?.remove();
  if (cursor) body.append(loadMoreButton());
}

function loadMoreButton() {
  const button = h('button', { type: 'button', class: 'btn subtle more' }, 'Load more');
  button.addEventListener('click', () => busy(button, 'Loading…', () => loadDeliveries({ more: true }), $('deliveries-status')));
  return button;
}

export async function openDelivery(id) {
  openId = id;
  const dialog = $('delivery-dialog');
  fill($('delivery-detail'), loading());
  if (!dialog.open) dialog.showModal();
  await showDelivery(id);
}

export const closedDelivery = () => { openId = null; };

async function showDelivery(id, note) {
  try {
    const { delivery } = await api(`/deliveries/${encodeURIComponent(id)}`);
    if (openId === id) renderDelivery(delivery, note);
    return delivery;
  } catch (error) {
    if (error.status !== 401) fill($('delivery-detail'), problemAlert(error));
    return undefined;
  }
}

export function attemptItem(a) {
  return h('li', { class: 'attempt' },
    h('div', { class: 'attempt-head' },
      h('span', { class: 'attempt-no', text: `#${a.number ?? a.attempt}` }), a.manual ? badge('manual', 'info') : null, httpBadge(a.statusCode),
      h('span', { class: 'muted' }, when(a.at, dateTime), a.durationMs !== null && a.durationMs !== undefined ? ` · ${count.format(a.durationMs)} ms` : '')),
    a.error ? h('p', { class: 'attempt-error', text: a.error }) : null,
    a.responseExcerpt ? scrollable(`Response to attempt ${a.number ?? a.attempt}`, a.responseExcerpt) : null,
    a.requestHeaders || a.responseHeaders ? h('details', { class: 'headers' }, h('summary', { text: 'Headers' }),
      a.requestHeaders ? scrollable(`Request headers of attempt ${a.number}`, headerLines(a.requestHeaders)) : null,
      a.responseHeaders ? scrollable(`Response headers of attempt ${a.number}`, headerLines(a.responseHeaders)) : null) : null);
}

const headerLines = (headers) => Object.entries(headers).map(([name, value]) => `${name}: ${value}`).join('\n');

function renderDelivery(d, note) {
  $('delivery-dialog-title').textContent = `Delivery of ${d.eventType}`;
  const status = h('div', { role: 'status', class: 'inline-status' }, note ? h('p', { class: 'flash info', text: note }) : null);
  const redeliver = h('button', { type: 'button', class: 'btn primary small' }, d.status === 'retrying' ? 'Retry now' : 'Re-deliver');
  redeliver.addEventListener('click', () => redeliverOne(d, redeliver, status));
  const attempts = d.attempts || [];
  fill($('delivery-detail'),
    h('dl', { class: 'facts compact' },
      h('div', {}, h('dt', { text: 'Status' }), h('dd', {}, statusBadge(d.status), d.reason ? h('span', { class: 'cell-sub', text: d.reason }) : null)),
      h('div', {}, h('dt', { text: 'Endpoint' }), h('dd', {}, h('code', { text: d.url }))),
      h('div', {}, h('dt', { text: 'Event ID' }), h('dd', {}, h('code', { text: d.eventId }))),
      h('div', {}, h('dt', { text: 'Delivery ID' }), h('dd', {}, h('code', { text: d.id }))),
      h('div', {}, h('dt', { text: 'Created' }), h('dd', {}, when(d.createdAt))),
      stillTrying(d) && upcoming(d.nextAttemptAt) ? h('div', {}, h('dt', { text: 'Next attempt' }), h('dd', {}, when(d.nextAttemptAt))) : null),
    h('div', { class: 'row-actions' }, redeliver),
    status,
    h('h3', { text: `Attempts (${attempts.length})` }),
    attempts.length ? h('ol', { class: 'attempts' }, attempts.map(attemptItem)) : h('p', { class: 'muted', text: 'No attempts yet.' }),
    h('details', { class: 'payload' }, h('summary', { text: 'Payload' }), scrollable('Payload', JSON.stringify(d.payload, null, 2))));
}

/** What happens to a re-queued delivery at its endpoint, when it is not simply sent now. */
function whereItGoes(endpoint) {
  if (endpoint?.state === 'paused') {
    return `Queued, but the endpoint is paused after failures${endpoint.until ? ` until ${timeOnly.format(new Date(endpoint.until))}` : ''}: the new attempt is made then (none is used meanwhile).`;
  }
  if (endpoint?.state === 'removed') return 'Queued, but the endpoint was deleted: nothing will be sent.';
  return undefined;
}

async function redeliverOne(d, button, status) {
  const before = d.attempts?.length ?? d.attemptCount;
  const queued = await busy(button, 'Queuing…', () => api(`/deliveries/${encodeURIComponent(d.id)}/redeliver`, { method: 'POST', body: {} }), status);
  if (!queued) return;
  const held = whereItGoes(queued.endpoint);
  if (queued.endpoint?.state === 'removed') {
    flash(status, held, 'info');
    loadDeliveries();
    return;
  }
  // A paused endpoint: say so, and still watch, since a pause is often over in seconds.
  const waiting = held ?? 'Queued for re-delivery. Waiting for the new attempt…';
  flash(status, waiting, 'info');
  // The new attempt is made by the delivery worker: watch for it for a while.
  for (let i = 0; i < 20 && openId === d.id && $('delivery-dialog').open; i++) {
    await new Promise((resolve) => setTimeout(resolve, 1000));
    const now = await showDelivery(d.id, waiting);
    if (!now) break;
    if ((now.attempts?.length ?? now.attemptCount) > before) {
      renderDelivery(now, now.status === 'delivered' ? 'Re-delivered.' : 'The new attempt is recorded below.');
      break;
    }
    if (i === 19) renderDelivery(now, 'No new attempt yet: the delivery is queued, and its attempt will show here and in the list when it is made.');
  }
  loadDeliveries();
}

/** The answer of a bulk re-delivery, in words: what was queued, what is still retrying on its own, what is left. */
function bulkOutcome({ count: queued, retrying, notRedeliverable, endpointDisabled, more }) {
  return [
    queued ? `${count.format(queued)} failed ${queued === 1 ? 'delivery' : 'deliveries'} queued for re-delivery.` : 'No delivery has failed for good (used all its attempts).',
    retrying ? `${count.format(retrying)} ${retrying === 1 ? 'is' : 'are'} still being retried on ${retrying === 1 ? 'its' : 'their'} own: use “Retry now” on one to send it at once.` : '',
    notRedeliverable ? `${count.format(notRedeliverable)} could not be sent again: their content is no longer kept.` : '',
    endpointDisabled ? `${count.format(endpointDisabled)} ${endpointDisabled === 1 ? 'was' : 'were'} left out: ${endpointDisabled === 1 ? 'its endpoint is' : 'their endpoints are'} disabled (enable ${endpointDisabled === 1 ? 'it' : 'them'} first).` : '',
    more ? 'There may be more: run it again to queue them.' : '',
  ].filter(Boolean).join(' ');
}

export function redeliverAllFailed() {
  const endpointId = $('filter-endpoint').value;
  const endpoint = endpoints.find((e) => e.id === endpointId);
  confirmAction({
    title: 'Re-deliver all failed deliveries?',
    text: `Every delivery that used all its attempts${endpoint ? ` to ${endpoint.url}` : ''} is sent again. Deliveries still being retried keep their own schedule.`,
    action: 'Re-deliver',
    run: async () => {
      const answer = await api('/deliveries/redeliver', { method: 'POST', body: endpointId ? { endpoint: endpointId } : {} });
      flash($('deliveries-status'), bulkOutcome(answer), answer.count ? 'ok' : 'info');
      await loadDeliveries();
    },
  });
}

/** "Recover": the failed deliveries since a time, counted first; the second press queues them. */
export function recover() {
  const form = $('recover-form');
  form.reset();
  renderEndpointFilter();
  $('recover-endpoint').value = $('filter-endpoint').value;
  const dayAgo = new Date(Date.now() - 86_400_000 - new Date().getTimezoneOffset() * 60_000).toISOString().slice(0, 16);
  $('recover-since').value = dayAgo;
  let counted = null;
  const reset = () => {
    counted = null;
    $('recover-submit').textContent = 'Count failed deliveries';
    $('recover-count').replaceChildren();
  };
  reset();
  form.oninput = reset;
  openForm($('recover-dialog'), async () => {
    const body = { since: isoOf($('recover-since').value), ...($('recover-endpoint').value ? { endpoint_id: $('recover-endpoint').value } : {}) };
    if (counted === null) {
      const { count: found, notRedeliverable, endpointDisabled, more } = await api('/deliveries/recover', { method: 'POST', body: { ...body, dry_run: true } });
      counted = found;
      // With `more`, the count is a lower bound: one call queues at most as many as it counted.
      flash($('recover-count'), `${more ? 'At least ' : ''}${count.format(found)} failed ${found === 1 ? 'delivery' : 'deliveries'} since ${dateTime.format(new Date(body.since))} can be sent again.`
        + (notRedeliverable ? ` ${count.format(notRedeliverable)} cannot: their content is no longer kept.` : '')
        + (endpointDisabled ? ` ${count.format(endpointDisabled)} ${endpointDisabled === 1 ? 'goes' : 'go'} to a disabled endpoint and ${endpointDisabled === 1 ? 'is' : 'are'} left out.` : ''), found ? 'info' : 'ok');
      $('recover-submit').textContent = found ? `Re-deliver ${count.format(found)}` : 'Count again';
      if (!found) counted = null;
      return false;
    }
    const answer = await api('/deliveries/recover', { method: 'POST', body });
    flash($('deliveries-status'), bulkOutcome(answer), answer.count ? 'ok' : 'info');
    await loadDeliveries();
    return true;
  });
}
