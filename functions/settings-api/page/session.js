// The settings link's session (docs/settings.md "The link"): the token is taken from the link's
// fragment (which never reaches a server log), kept for this tab only so a reload works, and removed
// from the address bar at once. A link pasted into an open tab (only the fragment changes, so the
// browser does not reload) is taken too. Five minutes before the link expires the page warns; when
// it expires, the page stays as it is (an open dialog keeps what was typed) until a new link is pasted.

import { $, fill, h, timeOnly, when } from './dom.js';

const TOKEN_KEY = 'crm-settings-token';
/** The warning comes this long before the link expires. */
export const WARN_BEFORE_MS = 5 * 60_000;

let token = null;
let timers = [];
/** Set once the settings were shown: from then on an expiry keeps the page and shows a banner. */
let shown = false;
/** The organization whose settings are shown: a pasted link of another one reloads the page. */
let shownOrg = null;
let onNewLink = () => {};

function takeToken() {
  const params = new URLSearchParams(location.hash.slice(1));
  const fromLink = params.get('token');
  if (fromLink) {
    sessionStorage.setItem(TOKEN_KEY, fromLink);
    history.replaceState(null, '', location.pathname + location.search);
  }
  return fromLink || sessionStorage.getItem(TOKEN_KEY);
}

/** The token's claims, unverified (the API verifies): only to know when the link stops working. */
function claimsOf(value) {
  try {
    const part = value.split('.')[1].replace(/-/g, '+').replace(/_/g, '/');
    return JSON.parse(atob(part.padEnd(part.length + ((4 - (part.length % 4)) % 4), '=')));
  } catch {
    return {};
  }
}

function banner(tone, title, text) {
  const slot = $('session-banner');
  fill(slot, h('div', { class: `alert ${tone}`, role: tone === 'error' ? 'alert' : 'status' },
    h('p', { class: 'alert-title', text: title }), h('p', { text })));
  slot.hidden = false;
}

/** Forgets the token and its timers; `status` is what the header says of the link now. */
function dropToken(status) {
  sessionStorage.removeItem(TOKEN_KEY);
  token = null;
  for (const t of timers) clearTimeout(t);
  timers = [];
  $('session-info').textContent = status;
}

/** The link no longer works: before the page was shown, the expired card; after, a banner over the kept page. */
export function expire() {
  dropToken('Link expired');
  if (shown) {
    banner('error', 'This settings link has expired',
      'Ask your CRM for a new settings link and paste it into this tab’s address bar: the page and anything you typed stay as they are.');
    return;
  }
  $('layout').hidden = true;
  $('boot').hidden = true;
  $('gate').hidden = false;
  $('org-name').textContent = 'Settings link needed';
  document.title = 'Link expired — Organization settings';
}

/** Every link was just signed out from this page (this one included): the page stays, its link is gone. */
export function signedOut() {
  dropToken('Signed out');
  banner('status', 'Every settings link is signed out',
    'This link and every other one issued until now no longer work. Open the settings page from your CRM to continue, then check the audit log for keys or endpoints you do not recognise: they keep working until you remove them.');
}

/** Timers for the warning and the expiry of the current token; false when it has expired already. */
function schedule() {
  for (const t of timers) clearTimeout(t);
  timers = [];
  const { exp } = claimsOf(token);
  if (typeof exp !== 'number') return true;
  const left = exp * 1000 - Date.now();
  if (left <= 0) return false;
  const until = new Date(exp * 1000).toISOString();
  $('session-info').replaceChildren('Link valid until ', when(until, timeOnly));
  const warn = () => banner('warn', 'This settings link expires in 5 minutes',
    `It stops working at ${timeOnly.format(new Date(exp * 1000))}. Ask your CRM for a new link and paste it into this tab: the page and anything you typed stay as they are.`);
  if (left <= WARN_BEFORE_MS) warn();
  else if (left - WARN_BEFORE_MS < 2 ** 31) timers.push(setTimeout(warn, left - WARN_BEFORE_MS));
  if (left < 2 ** 31) timers.push(setTimeout(expire, left));
  return true;
}

/** A link pasted into this tab: only the fragment changed, so no reload happens; take it here. */
function takeNewLink() {
  if (!new URLSearchParams(location.hash.slice(1)).get('token')) return;
  token = takeToken();
  // Another organization's link: nothing shown (keys, endpoints, typed input) may stay on screen.
  if (shown && claimsOf(token).org_id !== shownOrg) {
    location.reload();
    return;
  }
  $('session-banner').hidden = true;
  if (!schedule()) {
    expire();
    return;
  }
  $('gate').hidden = true;
  onNewLink();
}

/**
 * Takes the token and starts the timers; `fresh` runs when a new link is pasted into the tab (to
 * load, or reload, the settings). Returns false when there is no valid token (the card is shown).
 */
export function openSession(fresh) {
  onNewLink = fresh;
  window.addEventListener('hashchange', takeNewLink);
  token = takeToken();
  if (!token || !schedule()) {
    expire();
    return false;
  }
  return true;
}

export const markShown = () => {
  shown = true;
  shownOrg = claimsOf(token).org_id ?? null;
};
/** Whether the page holds a link that still works (the live refresh pauses without one). */
export const hasToken = () => token !== null;

// ---------------------------------------------------------------------------------------------
// The API: relative to the page, so it works under an API Gateway stage prefix.

export class ApiError extends Error {
  constructor(status, problem) {
    super(problem.detail || problem.title || `Request failed (${status})`);
    this.status = status;
    this.problem = problem;
  }
}

const expiredProblem = { title: 'Link expired', detail: 'Your settings link has expired: paste a new link into this tab’s address bar, then try again. What you typed is kept.' };

export async function api(path, { method = 'GET', body } = {}) {
  if (!token) {
    expire();
    throw new ApiError(401, expiredProblem);
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
    expire();
    throw new ApiError(401, expiredProblem);
  }
  if (!res.ok) {
    if (res.status === 429 && !data.detail) data.detail = `Too many requests: try again in ${res.headers.get('Retry-After') || 'a few'} seconds.`;
    throw new ApiError(res.status, data);
  }
  return data;
}
