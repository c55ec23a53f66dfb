// "Check my receiver" (docs/settings.md "Webhooks", docs/webhooks.md "Checking a receiver"): runs
// the receiver check on one endpoint and shows its verdict table; the last result is kept on the
// endpoint, so the table is there again when the page opens.

import { badge, busy, fill, h, httpBadge, timeOnly, when } from './dom.js';
import { api } from './session.js';

/** What each rule's row says it tried, in words. */
const RULE_TEXT = {
  signed: 'Correctly signed event',
  'wrong-signature': 'Wrong signature',
  'body-changed': 'Body changed after signing',
  'no-signature': 'No signature header',
  'stale-timestamp': 'Timestamp 10 minutes old',
  'future-timestamp': 'Timestamp 10 minutes ahead',
  replay: 'Same request again (replay)',
  'retired-secret': 'Signed with the retired secret',
};

/** A rule's result in a word: met, met with a remark, not met, not checked. */
function resultBadge(rule) {
  if (rule.status === null && rule.ok) return badge('not checked', 'neutral');
  if (!rule.ok) return badge('fail', 'bad');
  return rule.advice ? badge('advice', 'warn') : badge('ok', 'ok');
}

/** The verdict table of a check (the API's answer, or an endpoint's lastCheck); null for none. */
export function checkResult(check) {
  if (!check) return null;
  const pass = check.verdict === 'pass';
  return h('div', { class: `outcome check-result ${pass ? 'ok' : 'bad'}`, 'data-testid': 'check-result' },
    h('p', { class: 'outcome-title' }, `Receiver check: ${pass ? 'passed' : 'failed'}`, ' ', badge(pass ? 'pass' : 'fail', pass ? 'ok' : 'bad'),
      h('span', { class: 'muted' }, ' at ', when(check.checked_at, timeOnly))),
    // Focusable: on a narrow screen the table may scroll sideways, and a keyboard must reach it.
    h('div', { class: 'table-wrap', tabindex: '0', role: 'region', 'aria-label': 'Receiver check results' }, h('table', { class: 'data', 'aria-label': 'What the receiver answered to each test request' },
      h('thead', {}, h('tr', {}, ['Request', 'Expected', 'Answer', 'Result', 'What to change'].map((t) => h('th', { scope: 'col', text: t })))),
      h('tbody', {}, check.rules.map((rule) => h('tr', { 'data-rule': rule.rule },
        h('th', { scope: 'row', 'data-label': 'Request' }, RULE_TEXT[rule.rule] ?? rule.rule),
        h('td', { 'data-label': 'Expected', text: rule.expected }),
        h('td', { 'data-label': 'Answer' }, rule.status === null && rule.ok ? '—' : httpBadge(rule.status)),
        h('td', { 'data-label': 'Result' }, resultBadge(rule)),
        h('td', { 'data-label': 'What to change', class: 'advice', text: rule.advice ?? '' })))))));
}

/** The button that runs a check and puts its table in the card's `.check-slot` (errors, a 429 say, in `errors`). */
export function checkButton(endpoint, slotOf, errors) {
  const button = h('button', { type: 'button', class: 'btn small', disabled: !endpoint.enabled }, 'Check my receiver');
  button.addEventListener('click', async () => {
    errors.replaceChildren();
    const slot = slotOf();
    fill(slot, h('p', { class: 'loading' }, h('span', { class: 'spinner', 'aria-hidden': 'true' }), 'Sending the check\'s test requests to your receiver (up to 12 s)…'));
    const answer = await busy(button, 'Checking…', () => api(`/webhooks/${encodeURIComponent(endpoint.id)}/check`, { method: 'POST', body: {} }), errors);
    // A live refresh may have drawn the card anew meanwhile: fill the slot as it is now.
    const now = slotOf();
    if (answer) fill(now, checkResult(answer));
    else fill(now, checkResult(endpoint.lastCheck));
  });
  return button;
}
