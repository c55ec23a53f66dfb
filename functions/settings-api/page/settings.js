// The organization settings page (docs/settings.md, docs/settings.md). Plain DOM and ES modules, no
// framework, one module per section (docs/decisions.md "Settings page modules"). Everything the
// API returns is set with textContent or attributes, never as HTML: the Content-Security-Policy
// forbids inline script, and no module parses markup it did not write.

import { $, busy, fill } from './dom.js';
import { api, hasToken, markShown, openSession } from './session.js';
import { generateKey, loadKeys, setRevocationSeconds } from './keys.js';
import { endpointDialog, hooks, loadCatalog, loadWebhooks } from './webhooks.js';
import { closedDelivery, loadDeliveries, openDelivery, recover, redeliverAllFailed, renderEndpointFilter, renderEventFilter } from './deliveries.js';
import { loadAudit, loadRequests, renderOverview, renderQuickstart } from './logs.js';
import { closedTrail } from './trail.js';
import { addRecipient, loadNotifications, saveNotifications } from './notifications.js';

/** How often an open page refreshes the endpoints' state and the first page of deliveries. */
const LIVE_MS = 5_000;

hooks.openDelivery = openDelivery;
hooks.reloadDeliveries = () => loadDeliveries();
hooks.endpointsChanged = renderEndpointFilter;

function wire() {
  $('generate-key').addEventListener('click', generateKey);
  $('add-endpoint').addEventListener('click', () => endpointDialog(null));
  $('redeliver-failed').addEventListener('click', redeliverAllFailed);
  $('recover').addEventListener('click', recover);
  $('recipient-form').addEventListener('submit', addRecipient);
  $('save-notifications').addEventListener('click', saveNotifications);
  $('refresh-deliveries').addEventListener('click', (e) => busy(e.currentTarget, 'Refreshing…', () => loadDeliveries(), $('deliveries-status')));
  $('refresh-requests').addEventListener('click', (e) => busy(e.currentTarget, 'Refreshing…', () => loadRequests(), $('requests-body')));
  $('refresh-audit').addEventListener('click', (e) => busy(e.currentTarget, 'Refreshing…', () => loadAudit(), $('audit-body')));
  for (const id of ['filter-status', 'filter-endpoint', 'filter-event', 'filter-since', 'filter-until']) $(id).addEventListener('change', () => loadDeliveries());
  $('delivery-filters').addEventListener('submit', (e) => {
    e.preventDefault();
    loadDeliveries();
  });
  $('delivery-dialog').addEventListener('close', closedDelivery);
  $('trail-dialog').addEventListener('close', closedTrail);
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

/**
 * Live: while the tab is visible, the endpoints' state (a pause after failures, its end) and the
 * first page of deliveries (statuses, next tries) are refreshed without a reload.
 */
function live() {
  setInterval(() => {
    // Not while hidden, nor after the link expired (the banner says so once; a new link resumes it).
    if (document.visibilityState !== 'visible' || $('layout').hidden || !hasToken()) return;
    loadWebhooks({ quiet: true });
    loadDeliveries({ quiet: true });
  }, LIVE_MS);
}

let started = false;

/** Loads everything; again (from where the page is) when a new link is pasted into the tab. */
async function load() {
  let settings;
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
  $('gate').hidden = true;
  $('layout').hidden = false;
  markShown();
  setRevocationSeconds(settings.revocationSeconds ?? 5);
  renderOverview(settings);
  renderQuickstart(settings);
  await loadCatalog().catch(() => undefined);
  await Promise.all([loadKeys(), loadWebhooks().then(() => loadDeliveries()), renderEventFilter(), loadRequests(), loadAudit(), loadNotifications()]);
  if (!started) {
    started = true;
    live();
  }
}

wire();
if (openSession(load)) load();
