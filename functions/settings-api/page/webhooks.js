// Webhook endpoints (docs/settings.md "Webhooks"): add, edit, enable, rotate the secret, delete;
// each signs with HMAC or ed25519 (docs/webhooks.md#verifying-ed25519-signatures): an ed25519
// endpoint shows its public key(s), a retiring one with the end of its grace;
// a test event of any type the endpoint subscribes to (its catalog example, marked as a test);
// "Check my receiver" and the last check's verdict table (receiver-check.js);
// the event picker shows each event's description, example payload and JSON Schema. The pause of
// an endpoint after failures is shown as the live refresh (settings.js) finds it.

import { $, badge, busy, confirmAction, copy, count, empty, fill, flash, h, httpBadge, loading, openForm, problemAlert, scrollable, shownOnce, statusBadge, timeOnly, when, withCode } from './dom.js';
import { api } from './session.js';
import { fillOptions, optionsNote, readOptions } from './endpoint-options.js';
import { checkButton, checkResult } from './receiver-check.js';
import { endpointChart } from './charts.js';

let catalog = null;
export let endpoints = [];
/** Hooks the deliveries section sets: open a delivery, reload the list. */
export const hooks = { openDelivery: () => {}, reloadDeliveries: () => {}, endpointsChanged: () => {} };

export async function loadCatalog() {
  if (catalog) return catalog;
  const { events } = await api('/events');
  catalog = events;
  return catalog;
}

/** `quiet`: a live refresh, which leaves what is shown on an error. */
export async function loadWebhooks({ quiet = false } = {}) {
  const body = $('webhooks-body');
  if (!quiet && !body.querySelector('.endpoint')) fill(body, loading('Loading endpoints…'));
  try {
    ({ endpoints } = await api('/webhooks'));
    renderWebhooks();
    hooks.endpointsChanged(endpoints);
  } catch (error) {
    if (error.status !== 401 && !quiet) fill(body, problemAlert(error));
  }
}

/** The endpoint each card was drawn from (as JSON), to redraw only the changed ones. */
const drawn = new WeakMap();

function renderWebhooks() {
  const body = $('webhooks-body');
  if (!endpoints.length) {
    fill(body, empty('No webhooks yet — add an endpoint to get events', 'An endpoint is a URL on your server that receives a signed POST for each event.'));
    return;
  }
  // A live refresh keeps a card whose endpoint did not change (a test in progress, its outcome);
  // a changed one (paused, resumed) is drawn anew with its test's outcome and chosen type moved over.
  const cards = new Map([...body.querySelectorAll('.endpoint')].map((card) => [card.dataset.endpointId, card]));
  fill(body, endpoints.map((endpoint) => {
    const old = cards.get(endpoint.id);
    const state = JSON.stringify(endpoint);
    if (old && drawn.get(old) === state) return old;
    const card = renderEndpoint(endpoint);
    drawn.set(card, state);
    if (old) {
      for (const slot of ['.test-outcome', '.test-errors']) card.querySelector(slot).replaceChildren(...old.querySelector(slot).childNodes);
      card.querySelector('select').value = old.querySelector('select').value;
    }
    return card;
  }));
}

/** The endpoint's pause, as its owner needs to know it: why nothing is sent, and until when. */
export function pauseNote(endpoint) {
  if (!endpoint.circuit || endpoint.circuit.state === 'closed') return null;
  return h('p', { class: 'cell-sub warn-text', 'data-testid': 'paused' },
    badge(endpoint.circuit.state === 'open' ? 'paused after failures' : 'recovering', 'warn'),
    endpoint.circuit.state === 'open' && endpoint.circuit.until ? [' — nothing is sent until ', when(endpoint.circuit.until, timeOnly), '; no attempts are used meanwhile'] : ' — the next delivery tests it');
}

/** A public key with its copy button: not a secret, shown at any time. */
function publicKeyRow(publicKey, label) {
  const copyButton = h('button', { type: 'button', class: 'btn subtle small', 'aria-label': `Copy ${label}`, onclick: () => copy(publicKey, copyButton) }, 'Copy');
  return h('span', { class: 'secret-row' }, h('code', { class: 'public-key', text: publicKey }), copyButton);
}

/**
 * How the endpoint signs: the scheme, an ed25519 endpoint's public key, and every other key still
 * signing through a rotation's or a switch's grace, with its end (signing_keys).
 */
export function signingNote(endpoint) {
  const keys = endpoint.signing_keys ?? [];
  const retiring = keys.filter((k) => k.expires_at);
  const scheme = endpoint.signing === 'ed25519' ? 'ed25519 (v1a)' : 'HMAC (v1)';
  return h('div', { class: 'cell-sub signing-note', 'data-testid': 'endpoint-signing' },
    h('p', {}, 'Signing: ', h('strong', { text: scheme }),
      endpoint.signing === 'ed25519' ? ' · public key ' : null,
      endpoint.public_key ? publicKeyRow(endpoint.public_key, `public key of ${endpoint.url}`) : null),
    retiring.map((k) => h('p', {}, 'Also signing until ', when(k.expires_at), ': ',
      k.scheme === 'ed25519' ? ['the previous ed25519 key ', publicKeyRow(k.public_key, `previous public key of ${endpoint.url}`)] : 'the previous HMAC secret')));
}

function renderEndpoint(endpoint) {
  const outcome = h('div', { class: 'test-outcome', role: 'status', 'aria-live': 'polite' });
  const errors = h('div', { class: 'test-errors' });
  const subscribed = endpoint.events.includes('*') ? (catalog ?? []).map((e) => e.name) : endpoint.events;
  const typeSelect = h('select', { class: 'small', 'aria-label': `Test event type for ${endpoint.url}` },
    h('option', { value: 'webhook.test', text: 'webhook.test' }), subscribed.map((e) => h('option', { value: e, text: e })));
  const testButton = h('button', { type: 'button', class: 'btn small', disabled: !endpoint.enabled }, 'Send test event');
  testButton.addEventListener('click', () => sendTest(endpoint, typeSelect.value, testButton, outcome, errors));
  // The last check's table, kept on the endpoint: there when the page opens.
  const checkSlot = h('div', { class: 'check-slot', role: 'status', 'aria-live': 'polite' }, checkResult(endpoint.lastCheck));
  const events = endpoint.events.length
    ? h('ul', { class: 'chips', 'aria-label': 'Subscribed events' }, endpoint.events.map((e) => h('li', {}, h('code', { text: e === '*' ? 'all events' : e }))))
    : h('p', { class: 'muted', text: 'No events selected.' });
  const action = (text, run, tone = 'subtle') => h('button', { type: 'button', class: `btn ${tone} small`, onclick: run }, text);
  // Drawn with the card (a live refresh redraws only a changed card, so the chart is not re-read every few seconds).
  const chart = h('div', { class: 'endpoint-stats' });
  endpointChart(endpoint, chart);
  return h('article', { class: `endpoint${endpoint.enabled ? '' : ' is-disabled'}`, 'aria-label': endpoint.url, 'data-endpoint-id': endpoint.id },
    h('div', { class: 'endpoint-head' },
      h('div', { class: 'endpoint-id' },
        h('p', { class: 'endpoint-url' }, h('code', { text: endpoint.url })),
        h('p', { class: 'cell-sub' }, statusBadge(endpoint.enabled ? 'enabled' : 'disabled'), ' ',
          endpoint.description ? h('span', { text: endpoint.description }) : null,
          endpoint.description ? ' · ' : null, 'Added ', when(endpoint.createdAt)),
        signingNote(endpoint),
        optionsNote(endpoint),
        pauseNote(endpoint),
        endpoint.disabledReason ? h('p', { class: 'cell-sub warn-text', text: `Disabled automatically: ${endpoint.disabledReason}` }) : null,
        endpoint.failingSince && !endpoint.disabledReason ? h('p', { class: 'cell-sub warn-text' }, 'Failing since ', when(endpoint.failingSince)) : null),
      h('div', { class: 'endpoint-actions' },
        h('span', { class: 'test-picker' }, typeSelect, testButton),
        checkButton(endpoint, () => slotOf(endpoint, 'check-slot') ?? checkSlot, errors),
        action('Edit', () => endpointDialog(endpoint)),
        action(endpoint.enabled ? 'Disable' : 'Enable', (e) => toggleEndpoint(endpoint, e.currentTarget)),
        action(endpoint.signing === 'ed25519' ? 'Rotate key' : 'Rotate secret', () => rotateSecret(endpoint)),
        action('Delete', () => deleteEndpoint(endpoint), 'danger-subtle'))),
    events, outcome, checkSlot, errors, chart);
}

const lastAttempt = (delivery) => delivery.attempts?.[delivery.attempts.length - 1] ?? null;

/** The card's slot as it is now: a live refresh may have drawn the card anew meanwhile. */
const slotOf = (endpoint, name) => document.querySelector(`[data-endpoint-id="${CSS.escape(endpoint.id)}"] .${name}`);

async function sendTest(endpoint, eventType, button, firstOutcome, errors) {
  errors.replaceChildren();
  let outcome = firstOutcome;
  fill(outcome, h('p', { class: 'loading' }, h('span', { class: 'spinner', 'aria-hidden': 'true' }), `Sending a test ${eventType} event and waiting for your endpoint to answer…`));
  const body = eventType === 'webhook.test' ? {} : { event_type: eventType };
  const result = await busy(button, 'Sending…', () => api(`/webhooks/${encodeURIComponent(endpoint.id)}/test`, { method: 'POST', body }), errors);
  outcome = slotOf(endpoint, 'test-outcome') ?? outcome;
  if (!result) {
    outcome.replaceChildren();
    return;
  }
  const { delivery } = result;
  const attempt = lastAttempt(delivery);
  const ok = delivery.status === 'delivered';
  const queued = (delivery.status === 'pending' || delivery.status === 'retrying') && !attempt;
  const headline = ok ? 'Test event delivered' : queued ? 'Test event queued' : 'Test event not delivered';
  fill(outcome, h('div', { class: `outcome ${ok ? 'ok' : queued ? 'info' : 'bad'}` },
    h('p', { class: 'outcome-title' }, headline, ' ', attempt ? httpBadge(attempt.statusCode) : null,
      attempt?.durationMs !== undefined && attempt?.durationMs !== null ? h('span', { class: 'muted', text: ` in ${count.format(attempt.durationMs)} ms` }) : null),
    h('p', { class: 'muted small' }, h('code', { text: delivery.eventType }), ' at ', when(attempt?.at || delivery.updatedAt || delivery.createdAt, timeOnly),
      attempt?.error ? ` · ${attempt.error}` : '',
      !attempt ? ' · the outcome will appear under Deliveries' : ''),
    attempt?.responseExcerpt ? scrollable(`Response to the test ${delivery.eventType}`, attempt.responseExcerpt) : null,
    h('button', { type: 'button', class: 'btn link small', onclick: () => hooks.openDelivery(delivery.id) }, 'View delivery')));
  hooks.reloadDeliveries();
}

/** Each event with its description, and its example payload and JSON Schema a click away. */
function renderEventsPicker(selected) {
  const groups = new Map();
  for (const event of catalog) {
    if (!groups.has(event.group)) groups.set(event.group, []);
    groups.get(event.group).push(event);
  }
  fill($('events-groups'), [...groups].map(([group, events]) => h('div', { class: 'event-group' },
    h('p', { class: 'event-group-title', text: group }),
    events.map((event) => h('div', { class: 'event-option' },
      h('label', { class: 'event-check' },
        h('input', { type: 'checkbox', name: 'events', value: event.name, checked: selected.has(event.name) || selected.has('*') }),
        h('span', { class: 'event-names' }, h('code', { text: event.name }), event.alias ? h('span', { class: 'alias' }, 'also ', h('code', { text: event.alias })) : null)),
      event.description ? h('span', { class: 'event-description' }, withCode(event.description)) : null,
      h('details', { class: 'event-detail' }, h('summary', { text: 'Example and schema' }),
        scrollable(`Example payload of ${event.name}`, JSON.stringify(event.example, null, 2)),
        scrollable(`JSON Schema of ${event.name}`, JSON.stringify(event.schema, null, 2))))))));
}

export async function endpointDialog(endpoint) {
  const form = $('endpoint-form');
  form.reset();
  $('endpoint-dialog-title').textContent = endpoint ? 'Edit endpoint' : 'Add endpoint';
  $('endpoint-submit').textContent = endpoint ? 'Save changes' : 'Save endpoint';
  $('endpoint-url').value = endpoint?.url || '';
  $('endpoint-description').value = endpoint?.description || '';
  fillOptions(endpoint);
  const signing = endpoint?.signing ?? 'hmac';
  $(`endpoint-signing-${signing}`).checked = true;
  $('signing-hint').hidden = !endpoint;
  const keep = keepHeadersChoice(endpoint);
  fill($('events-groups'), loading('Loading events…'));
  openForm($('endpoint-dialog'), async () => {
    const events = [...form.querySelectorAll('input[name=events]:checked')].map((i) => i.value);
    const chosen = form.querySelector('input[name=signing]:checked')?.value ?? 'hmac';
    const body = { url: $('endpoint-url').value.trim(), events, description: $('endpoint-description').value.trim() || undefined, ...readOptions(endpoint), ...keep() };
    if (endpoint) {
      const switched = chosen !== signing ? { signing: chosen } : {};
      const saved = await api(`/webhooks/${encodeURIComponent(endpoint.id)}`, { method: 'PATCH', body: { ...body, description: body.description ?? null, ...switched } });
      if (saved.secret) revealSecret(`New signing secret for ${saved.endpoint.url}`, saved.secret);
      else if (switched.signing) revealPublicKey(saved.endpoint);
      else flash($('webhooks-status'), 'Endpoint saved.');
    } else {
      const created = await api('/webhooks', { method: 'POST', body: { ...body, ...(chosen === 'ed25519' ? { signing: 'ed25519' } : {}) } });
      if (created.secret) revealSecret(`Signing secret for ${created.endpoint.url}`, created.secret);
      else revealPublicKey(created.endpoint);
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

/**
 * A new URL takes the stored custom headers (secrets) only when the admin says so, seeing where they
 * would go (docs/webhooks.md "Custom headers"): on the same origin a checkbox naming the headers
 * and the new URL; on another origin a note that each must be set again or removed. Answers what
 * the PATCH adds (`keep_headers: true` when ticked).
 */
function keepHeadersChoice(endpoint) {
  const names = Object.keys(endpoint?.headers ?? {});
  const box = $('endpoint-keep');
  const check = $('endpoint-keep-headers');
  check.checked = false;
  const update = () => {
    const typed = $('endpoint-url').value.trim();
    let sameOrigin = false;
    try {
      sameOrigin = new URL(typed).origin === new URL(endpoint.url).origin;
    } catch {
      sameOrigin = false;
    }
    const moved = Boolean(endpoint) && names.length > 0 && typed !== '' && typed !== endpoint.url;
    box.hidden = !moved;
    if (!moved) return;
    $('endpoint-keep-choice').hidden = !sameOrigin;
    $('endpoint-keep-text').textContent = `Keep the custom headers (${names.join(', ')}) for ${typed}`;
    $('endpoint-keep-hint').textContent = sameOrigin
      ? 'The URL changes: its custom headers go with it only if you keep them here, or set each again below.'
      : 'The new URL is on another host: set each custom header again below, or remove it. They are never sent to a new host unasked.';
  };
  $('endpoint-url').oninput = update;
  update();
  return () => (!box.hidden && !$('endpoint-keep-choice').hidden && check.checked ? { keep_headers: true } : {});
}

async function toggleEndpoint(endpoint, button) {
  const done = await busy(button, endpoint.enabled ? 'Disabling…' : 'Enabling…',
    () => api(`/webhooks/${encodeURIComponent(endpoint.id)}`, { method: 'PATCH', body: { enabled: !endpoint.enabled } }), $('webhooks-status'));
  if (done) {
    flash($('webhooks-status'), `Endpoint ${endpoint.enabled ? 'disabled: no events will be sent to it' : 'enabled'}.`);
    await loadWebhooks();
  }
}

/** A new HMAC secret: shown this once. */
function revealSecret(title, secret) {
  shownOnce($('webhooks-reveal'), {
    title, secret,
    note: 'Use it to verify the webhook-signature header of each request (Standard Webhooks). Copy it now: it will not be shown again.',
  });
}

/** An ed25519 endpoint's public key: not a secret, it stays on the endpoint's card. */
function revealPublicKey(endpoint) {
  shownOnce($('webhooks-reveal'), {
    title: `Public key for ${endpoint.url}`,
    secret: endpoint.public_key,
    note: 'Verify each request\'s v1a signature with this public key (docs: Verifying ed25519 signatures). It is not a secret: it is shown on the endpoint at any time.',
  });
}

function rotateSecret(endpoint) {
  const ed25519 = endpoint.signing === 'ed25519';
  $('rotate-dialog-title').textContent = ed25519 ? 'Rotate signing key' : 'Rotate signing secret';
  $('rotate-text').textContent = `A new ${ed25519 ? 'key' : 'secret'} signs events sent to ${endpoint.url}. During the grace period each request carries both signatures, so you can switch your server over without failures.`;
  $('rotate-form').reset();
  openForm($('rotate-dialog'), async (form) => {
    const rotated = await api(`/webhooks/${encodeURIComponent(endpoint.id)}/rotate-secret`, { method: 'POST', body: { grace_hours: Number(form.elements.grace.value) } });
    if (rotated.secret) revealSecret(`New signing secret for ${endpoint.url}`, rotated.secret);
    else revealPublicKey(rotated.endpoint);
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
