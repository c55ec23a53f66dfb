// DOM helpers of the settings page (docs/settings.md): strings become text nodes, attributes are
// set, never HTML (the Content-Security-Policy forbids inline script; nothing here parses markup).

export const $ = (id) => document.getElementById(id);

export function h(tag, attrs = {}, ...children) {
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
export const withCode = (text) => text.split(/`([^`]+)`/).map((part, i) => (i % 2 ? h('code', { text: part }) : part));

export const fill = (container, ...children) => container.replaceChildren(...children.flat().filter(Boolean));

export const dateTime = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'short' });
// Tables: this year's dates without the year.
export const shortDateTime = new Intl.DateTimeFormat(undefined, { month: 'short', day: 'numeric', hour: 'numeric', minute: '2-digit' });
export const compact = { format: (date) => (date.getFullYear() === new Date().getFullYear() ? shortDateTime : dateTime).format(date) };
export const timeOnly = new Intl.DateTimeFormat(undefined, { hour: '2-digit', minute: '2-digit', second: '2-digit' });
export const count = new Intl.NumberFormat();

/** A <time> in the browser's time zone, the ISO value in its datetime and title. */
export function when(iso, format = compact) {
  if (!iso) return h('span', { class: 'muted', text: 'Never' });
  const date = new Date(iso);
  if (Number.isNaN(date.getTime())) return h('span', { text: iso });
  return h('time', { datetime: iso, title: iso, text: format.format(date) });
}

export function money(amount, currency = 'USD') {
  if (amount === null || amount === undefined) return '—';
  return new Intl.NumberFormat(undefined, { style: 'currency', currency, maximumFractionDigits: amount !== 0 && Math.abs(amount) < 1 ? 4 : 2 }).format(amount);
}

export const loading = (text = 'Loading…') => h('p', { class: 'loading' }, h('span', { class: 'spinner', 'aria-hidden': 'true' }), text);
export const empty = (title, text) => h('div', { class: 'empty' }, h('p', { class: 'empty-title', text: title }), text ? h('p', { class: 'muted', text }) : null);

/** A problem+json answer as an alert: its detail, the field errors, the request id for support. */
export function problemAlert(error) {
  const problem = error.problem || {};
  const fields = Array.isArray(problem.errors) ? problem.errors : [];
  return h('div', { class: 'alert error', role: 'alert' },
    h('p', { class: 'alert-title', text: problem.title && problem.detail ? problem.title : 'Something went wrong' }),
    h('p', { text: error.message }),
    fields.length ? h('ul', {}, fields.map((f) => h('li', { text: [f.field, f.message].filter(Boolean).join(': ') }))) : null,
    problem.instance ? h('p', { class: 'muted small', text: `Reference: ${problem.instance}` }) : null);
}

export function badge(text, tone = 'neutral') {
  return h('span', { class: `badge ${tone}`, text });
}

export const statusTone = {
  active: 'ok', delivered: 'ok', enabled: 'ok', closed: 'ok',
  expiring: 'warn', pending: 'info', retrying: 'warn', 'half-open': 'warn',
  expired: 'neutral', revoked: 'neutral', skipped: 'neutral', disabled: 'neutral',
  failed: 'bad', open: 'bad',
};
/** Only a delivery still being retried has a next attempt worth showing. */
export const stillTrying = (d) => d.status === 'pending' || d.status === 'retrying';
/** A next-try time worth showing: only one still ahead (a past one is being attempted now). */
export const upcoming = (iso) => Boolean(iso) && Date.parse(iso) > Date.now();
export const statusBadge = (status) => badge(status, statusTone[status] || 'neutral');

export function httpBadge(code) {
  if (code === null || code === undefined) return badge('no answer', 'bad');
  return badge(String(code), code >= 200 && code < 300 ? 'ok' : code >= 500 ? 'bad' : 'warn');
}

export async function copy(text, button) {
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
export function shownOnce(container, { title, secret, note, extra }) {
  const value = h('code', { class: 'secret', 'data-testid': 'shown-once', text: secret });
  const copyButton = h('button', { type: 'button', class: 'btn small', onclick: () => copy(secret, copyButton) }, 'Copy');
  const panel = h('div', { class: 'reveal', role: 'region', 'aria-label': title },
    h('div', { class: 'reveal-head' },
      h('p', { class: 'reveal-title', text: title }),
      h('button', { type: 'button', class: 'btn subtle small', onclick: () => panel.remove() }, 'Done')),
    h('p', { class: 'muted', text: note }),
    h('div', { class: 'secret-row' }, value, copyButton), extra ?? null);
  fill(container, panel);
  panel.scrollIntoView({ block: 'nearest', behavior: 'smooth' });
  return panel;
}

export function flash(container, text, tone = 'ok') {
  fill(container, h('p', { class: `flash ${tone}`, text }));
}

/** Runs `work` with the button busy (disabled, with a progress label), showing errors in `errorsIn`. */
export async function busy(button, label, work, errorsIn) {
  const original = button.textContent;
  button.disabled = true;
  button.setAttribute('aria-busy', 'true');
  button.textContent = label;
  try {
    return await work();
  } catch (error) {
    if (errorsIn) fill(errorsIn, problemAlert(error));
    return undefined;
  } finally {
    button.disabled = false;
    button.removeAttribute('aria-busy');
    button.textContent = original;
  }
}

// Dialogs: one confirm dialog reused; every dialog closes on its [data-close] button.

for (const dialog of document.querySelectorAll('dialog')) {
  for (const close of dialog.querySelectorAll('[data-close]')) close.addEventListener('click', () => dialog.close());
}

export function formError(form, error) {
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
export function openForm(dialog, onSubmit) {
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
      // Also a 401 (the link expired): the dialog stays open with what was typed (session.js).
      formError(form, error);
    } finally {
      submit.disabled = false;
      submit.removeAttribute('aria-busy');
    }
  };
  dialog.showModal();
}

export function confirmAction({ title, text, action, run }) {
  $('confirm-title').textContent = title;
  $('confirm-text').textContent = text;
  $('confirm-submit').textContent = action;
  openForm($('confirm-dialog'), async () => {
    await run();
    return true;
  });
}

/**
 * A scrollable block of code or text that keyboard users can scroll too: focusable, and named
 * for screen readers (axe: scrollable-region-focusable).
 */
export const scrollable = (label, text, cls = 'excerpt') => h('pre', { class: cls, tabindex: '0', role: 'region', 'aria-label': label }, h('code', { text }));
