// A lead's trail (docs/settings.md "A lead's trail"): from a request-log row, the client the lead
// came to, each of its submissions (the one that created it, those merged into it), the event each
// caused, and that event's deliveries with their attempts. Duplicates show their link.

import { $, badge, dateTime, empty, fill, h, loading, problemAlert, statusBadge, when } from './dom.js';
import { attemptItem } from './deliveries.js';
import { api } from './session.js';

let openClient = null;

/** Opens the trail of the client a request came to; `requestId` marks the submission that request made. */
export async function openTrail(clientId, requestId) {
  openClient = clientId;
  const dialog = $('trail-dialog');
  $('trail-dialog-title').textContent = 'Lead trail';
  fill($('trail-detail'), loading());
  if (!dialog.open) dialog.showModal();
  try {
    const trail = await api(`/clients/${encodeURIComponent(clientId)}/trail`);
    if (openClient === clientId) renderTrail(trail, requestId);
  } catch (error) {
    if (error.status !== 401 && openClient === clientId) fill($('trail-detail'), problemAlert(error));
  }
}

const fact = (term, ...value) => h('div', {}, h('dt', { text: term }), h('dd', {}, ...value));

function clientFacts(client) {
  return h('dl', { class: 'facts compact' },
    fact('Client', h('code', { text: client.id }), client.name ? h('span', { class: 'cell-sub', text: client.name }) : null),
    fact('Status', client.status ?? '—', client.source === 'api' ? ' · from the lead endpoint' : ''),
    client.createdAt ? fact('Created', when(client.createdAt, dateTime)) : null,
    fact('Submissions', String(client.submissionCount)),
    client.possibleDuplicateOf
      ? fact('Possible duplicate of', h('button', { type: 'button', class: 'btn link small', 'data-testid': 'duplicate-link', onclick: () => openTrail(client.possibleDuplicateOf) }, client.possibleDuplicateOf))
      : null);
}

function deliveryItem(d) {
  const attempts = d.attempts || [];
  return h('li', { class: 'trail-delivery', 'data-testid': 'trail-delivery' },
    h('div', { class: 'attempt-head' }, statusBadge(d.status), h('code', { text: d.url ?? d.endpointId }), h('span', { class: 'muted', text: d.id })),
    attempts.length ? h('ol', { class: 'attempts' }, attempts.map(attemptItem)) : h('p', { class: 'muted', text: 'No attempts yet.' }));
}

function submissionItem(s, requestId, isFirst) {
  const mine = requestId && (s.requestId === requestId || (isFirst && !s.requestId && s.number === 1));
  const what = s.number === 1 ? 'Created the client' : `Merged into it (submission ${s.number})`;
  return h('li', { class: 'trail-step', 'data-testid': 'trail-submission' },
    h('h3', {}, what, ' ', mine ? badge('this request', 'info') : null),
    h('p', { class: 'muted' }, s.at ? when(s.at, dateTime) : '', s.requestId ? ` · request ${s.requestId}` : ''),
    s.event ? h('div', { class: 'trail-event', 'data-testid': 'trail-event' },
      h('p', {}, 'Event ', h('code', { text: s.event.type }), ' ', h('code', { class: 'muted', text: s.event.id })),
      s.deliveries.length
        ? h('ol', { class: 'trail-deliveries' }, s.deliveries.map(deliveryItem))
        : h('p', { class: 'muted', text: s.event.recorded ? 'Its deliveries are to endpoints deleted since.' : 'No delivery: no endpoint subscribed to it, or it is still on its way.' }))
      : h('p', { class: 'muted', text: 'Created in the CRM: its events are in the delivery log, not in this trail.' }));
}

function renderTrail(trail, requestId) {
  $('trail-dialog-title').textContent = `Lead trail: ${trail.client.name ?? trail.client.id}`;
  // The request that created the client is submission 1; a merged one is named by its request id.
  const createdHere = !trail.submissions.some((s) => s.requestId === requestId);
  fill($('trail-detail'),
    clientFacts(trail.client),
    trail.submissions.length
      ? h('ol', { class: 'trail' }, trail.submissions.map((s) => submissionItem(s, requestId, createdHere)))
      : empty('No submissions'));
}

export const closedTrail = () => { openClient = null; };
