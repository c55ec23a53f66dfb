/**
 * A notice as one recipient reads it: subject, plain text and HTML. Minimal stand-in for the
 * notices' own rendering (docs/notifications.md "The notices"): every value is untrusted, made one
 * line in the subject and escaped in the HTML.
 */
import type { NoticeMessage } from './notice.js';

export interface ComposedNotice { subject: string; text: string; html: string }
export interface NoticeLinks { settings?: string; unsubscribe: string }

/** Subject length in characters. */
export const SUBJECT_MAX = 120;

// C0 and C1 controls, DEL, the Unicode line and paragraph separators, bidi overrides and isolates.
// eslint-disable-next-line no-control-regex
const CONTROLS = /[\u0000-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;
const cut = (s: string, max: number) => {
  const chars = [...s];
  return chars.length <= max ? s : `${chars.slice(0, max - 1).join('')}…`;
};
/** One line: controls become spaces, runs of spaces one, cut to `max`. */
export const oneLine = (s: string, max = 2000) => cut(s.replace(CONTROLS, ' ').replace(/\s+/g, ' ').trim(), max);
export const escapeHtml = (s: string) => s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);

const titles: Record<string, string> = {
  'lead.created': 'New lead', 'lead.returning': 'Returning lead', 'lead.summary': 'Leads summary',
  'endpoint.paused': 'Webhook endpoint paused', 'endpoint.disabled': 'Webhook endpoint disabled', daily_digest: 'Daily digest',
};

export function composeNotice(message: NoticeMessage, _recipient: { email: string }, links: NoticeLinks): ComposedNotice {
  const title = titles[message.kind] ?? 'Notice';
  const name = typeof message.data.name === 'string' ? oneLine(message.data.name, 80) : '';
  const subject = oneLine(name ? `${title}: ${name}` : title, SUBJECT_MAX);
  const rows = Object.entries(message.data).filter(([, v]) => typeof v === 'string' || typeof v === 'number').map(([k, v]) => [k, oneLine(String(v))] as const);
  const text = [subject, '', ...rows.map(([k, v]) => `${k}: ${v}`), '', ...(links.settings ? [`Settings: ${links.settings}`] : []), `Unsubscribe: ${links.unsubscribe}`].join('\n');
  const html = `<!doctype html><html><body><h1>${escapeHtml(subject)}</h1><table>${rows.map(([k, v]) => `<tr><th>${escapeHtml(k)}</th><td>${escapeHtml(v)}</td></tr>`).join('')}</table>`
    + `${links.settings ? `<p><a href="${escapeHtml(links.settings)}">Settings</a></p>` : ''}<p><a href="${escapeHtml(links.unsubscribe)}">Unsubscribe</a></p></body></html>`;
  return { subject, text, html };
}
