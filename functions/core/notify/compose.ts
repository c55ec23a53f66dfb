/**
 * A notice as one recipient reads it (docs/notifications.md "The notices"): subject, plain text and
 * HTML, from a NoticeMessage. Every value in `data` is untrusted (a lead's fields are whatever a
 * form sent; an endpoint's URL and last error are a tenant's or a receiver's), so:
 * - the subject is one line: control characters (CR, LF, every C0/C1, U+2028/9) become spaces, and
 *   it is cut to SUBJECT_MAX characters, so no header can be injected and no line grows long (the
 *   transport encodes non-ASCII as RFC 2047 words);
 * - the HTML escapes every value (text and attributes); a link is written only when it is http(s);
 * - the plain-text part is always there, each value on its own labelled line.
 * The shapes of `data` per kind are the producers' (events/lead-notices.ts,
 * delivery/endpoint-notices.ts, settings/daily-digest.ts); a field missing or of the wrong type is
 * left out, never an error: a notice always renders.
 */
import type { MessageKind, NoticeMessage } from './notice.js';

/** A new lead (lead.created) or a later submission merged into a client (lead.returning). */
export interface LeadNoticeData {
  clientId: string;
  name?: string; email?: string; phone?: string; address?: string; service?: string; notes?: string;
  /**
   * Where it came from, by the leads statistics' names (delivery/statistics.ts leadSourceOf):
   * `lead_endpoint`, `page_key`, `no_script_form`. Notices queued before them say `api` or `form`.
   */
  source?: string;
  /** The `flag` duplicate policy's mark: the earlier client this one may repeat. */
  possibleDuplicateOf?: string;
  /** A returning lead's submission number (2 for the first merge). */
  submission?: number;
}

/** Leads past the organization's cap in one window, folded into one notice (events/lead-notices.ts). */
export interface LeadSummaryData {
  /** Leads folded into the summary: as the mailer claims the window's count when it sends it (notify/mailer.ts), exact. */
  folded: number;
  /** The window: from `since` to `until` (ISO); no lead notice is sent one by one before `until`. */
  since: string; until: string;
  cap: number;
  /** 1: the window's summary; 2, 3, …: a follow-up of the window's leads counted after the round before was sent (a lagging stream batch). */
  round?: number;
  /** A batch the cap counter could not count (events/lead-notices.ts uncounted): `folded` is its own leads, sent as is, nothing claimed. */
  unclaimed?: boolean;
}

/** An endpoint's circuit opened (paused) or the endpoint was disabled. */
export interface EndpointNoticeData {
  endpointId: string; url?: string; description?: string;
  /** Since when it is paused or failing (ISO). */
  since?: string;
  /** Paused until (ISO): its deliveries wait until a probe succeeds. */
  until?: string;
  lastError?: string;
  /** Why it was disabled. */
  reason?: string;
  /** Deliveries to it waiting (at least), when known. */
  waiting?: number;
}

/** The day's digest of an organization. */
export interface DigestData {
  /** The UTC day it covers, `YYYY-MM-DD`. */
  day: string;
  leadsBySource: Record<string, number>;
  endpoints: { endpointId: string; url?: string; delivered: number; failed: number; pending?: number }[];
  /** Deliveries failed after their last attempt, waiting in the dead-letter queue for a redelivery. */
  deadLetters: number;
  /** The counts stop at the read budget: "at least". */
  partial?: boolean;
}

export interface ComposedNotice { subject: string; text: string; html: string }
export interface NoticeLinks { settings?: string; unsubscribe: string }

/** Subject length in characters: one short line, whatever a name holds. */
export const SUBJECT_MAX = 120;
/** Any one value shown, in characters: a notice stays small whatever a field holds. */
const VALUE_MAX = 2000;

// C0 and C1 controls, DEL, the Unicode line and paragraph separators, bidi overrides and isolates.
// eslint-disable-next-line no-control-regex
const CONTROLS = /[\u0000-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;
// eslint-disable-next-line no-control-regex
const CONTROLS_BUT_NEWLINE = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;

const cut = (s: string, max: number) => {
  const chars = [...s];
  return chars.length <= max ? s : `${chars.slice(0, max - 1).join('')}…`;
};
/** One line: controls become spaces, runs of spaces one, cut to `max`. */
export const oneLine = (s: string, max = VALUE_MAX) => cut(s.replace(CONTROLS, ' ').replace(/\s+/g, ' ').trim(), max);
/** Several lines (notes): CRLF and CR become LF, other controls spaces, cut to `max`. */
const multiLine = (s: string, max = VALUE_MAX) => cut(s.replace(/\r\n?/g, '\n').replace(CONTROLS_BUT_NEWLINE, ' ').trim(), max);

export const escapeHtml = (s: string) => s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);

const str = (v: unknown): string | undefined => (typeof v === 'string' && v.trim() ? v : typeof v === 'number' && Number.isFinite(v) ? String(v) : undefined);
const num = (v: unknown): number | undefined => (typeof v === 'number' && Number.isFinite(v) ? v : undefined);
/**
 * How a notice names an endpoint: its URL's origin alone. A webhook URL is often a capability (a
 * token in its path or query), and an e-mail is forwarded, archived and read on phones.
 */
export const endpointOrigin = (url: string | undefined): string | undefined => {
  if (!url) return undefined;
  try {
    const { origin } = new URL(url);
    return origin === 'null' ? undefined : origin;
  } catch {
    return undefined;
  }
};

const safeLink = (url: string | undefined) => (url && /^https?:\/\//i.test(url) ? url : undefined);
/** An ISO time as people read it in a mail: `2026-11-29 01:02 UTC`. */
const when = (iso: unknown) => {
  const t = typeof iso === 'string' ? Date.parse(iso) : NaN;
  return Number.isNaN(t) ? undefined : `${new Date(t).toISOString().slice(0, 16).replace('T', ' ')} UTC`;
};

/** A notice's body as parts both renderings share: lines of label and value, paragraphs, links. */
type Part =
  | { kind: 'para'; text: string }
  | { kind: 'fields'; rows: [string, string | undefined, ('multi' | undefined)?][] }
  | { kind: 'table'; head: string[]; rows: string[][] }
  | { kind: 'link'; label: string; url?: string };

interface Draft { subject: string; heading: string; parts: Part[] }

/** A lead source as people read it: the settings page's names (`api` and `form`: notices queued before them). */
const SOURCE_LABELS: Record<string, string> = {
  lead_endpoint: 'lead endpoint', page_key: 'page key', no_script_form: 'no-script form', api: 'lead endpoint', form: 'no-script form',
};
const sourceLabel = (source: string | undefined) => (source === undefined ? undefined : SOURCE_LABELS[source] ?? source);

function leadDraft(kind: 'lead.created' | 'lead.returning', d: Record<string, unknown>): Draft {
  const name = str(d.name) ? oneLine(str(d.name)!, 200) : undefined;
  const who = name ?? str(d.email) ?? str(d.phone) ?? 'someone';
  if (kind === 'lead.returning') {
    return {
      subject: `Returning lead: ${who}`,
      heading: 'A lead came back',
      parts: [
        { kind: 'para', text: 'An earlier client sent the form again; the submission was added to their record.' },
        { kind: 'fields', rows: [['Name', name], ['E-mail', str(d.email)], ['Phone', str(d.phone)], ['Service', str(d.service)], ['Submission', str(d.submission)], ['Client', str(d.clientId)]] },
      ],
    };
  }
  const service = str(d.service) ? oneLine(str(d.service)!, 60) : undefined;
  return {
    subject: `New lead: ${who}${service ? ` (${service})` : ''}`,
    heading: 'New lead',
    parts: [
      { kind: 'fields', rows: [
        ['Name', name], ['E-mail', str(d.email)], ['Phone', str(d.phone)], ['Address', str(d.address)], ['Service', str(d.service)],
        ['Source', sourceLabel(str(d.source))],
        ['Notes', str(d.notes), 'multi'], ['Possible duplicate of', str(d.possibleDuplicateOf)], ['Client', str(d.clientId)],
      ] },
    ],
  };
}

function summaryDraft(d: Record<string, unknown>, links: NoticeLinks): Draft {
  const folded = num(d.folded) ?? 0;
  const cap = num(d.cap);
  const since = when(d.since);
  const until = when(d.until);
  return {
    subject: `${folded} more new lead${folded === 1 ? '' : 's'}${since ? ` since ${since}` : ''}`,
    heading: 'Many new leads',
    parts: [
      { kind: 'para', text: `${cap !== undefined ? `More than ${cap} leads` : 'Many leads'} arrived${since ? ` since ${since}` : ''} (an import or a busy form?). `
        + `${folded} more were folded into this one notice${until ? `; the next lead notice is sent one by one after ${until}` : ''}.` },
      { kind: 'link', label: 'Open the settings page', url: links.settings },
    ],
  };
}

function endpointDraft(kind: 'endpoint.paused' | 'endpoint.disabled', d: Record<string, unknown>, links: NoticeLinks): Draft {
  const origin = endpointOrigin(str(d.url));
  const url = origin ? oneLine(origin, 200) : undefined;
  const label = str(d.description) ? oneLine(str(d.description)!, 60) : url ?? str(d.endpointId) ?? 'an endpoint';
  const paused = kind === 'endpoint.paused';
  const waiting = num(d.waiting);
  return {
    subject: paused ? `Webhook endpoint paused: ${label}` : `Webhook endpoint disabled: ${label}`,
    heading: paused ? 'A webhook endpoint is paused' : 'A webhook endpoint is disabled',
    parts: [
      { kind: 'para', text: paused
        ? 'Its deliveries kept failing, so they are held back and retried with a probe now and then; nothing is lost while it is paused.'
        : 'It failed for too long (or answered 410 Gone) and receives nothing until it is enabled again in the settings; its failed deliveries can be redelivered there.' },
      { kind: 'fields', rows: [
        ['Endpoint', url], ['Description', str(d.description)], ['Id', str(d.endpointId)],
        [paused ? 'Paused since' : 'Failing since', when(d.since)], ['Next probe', paused ? when(d.until) : undefined],
        ['Reason', str(d.reason)], ['Last error', str(d.lastError), 'multi'],
        ['Deliveries waiting', waiting !== undefined ? String(waiting) : undefined],
      ] },
      { kind: 'link', label: 'Open the settings page', url: links.settings },
    ],
  };
}

/** A digest row's endpoint: its origin and id (the origin alone may name several endpoints). */
function endpointLabel(e: Record<string, unknown>): string {
  const origin = endpointOrigin(str(e.url));
  const id = str(e.endpointId);
  return origin && id ? `${origin} (${id})` : origin ?? id ?? '?';
}

function digestDraft(d: Record<string, unknown>, links: NoticeLinks): Draft {
  const day = str(d.day) ? oneLine(str(d.day)!, 10) : '';
  const bySource = d.leadsBySource && typeof d.leadsBySource === 'object' ? Object.entries(d.leadsBySource as Record<string, unknown>) : [];
  const leads = bySource.map(([source, n]) => [sourceLabel(source) ?? source, String(num(n) ?? 0)]);
  const total = bySource.reduce((a, [, n]) => a + (num(n) ?? 0), 0);
  const endpoints = (Array.isArray(d.endpoints) ? d.endpoints : []).filter((e): e is Record<string, unknown> => !!e && typeof e === 'object')
    .map((e) => [endpointLabel(e), String(num(e.delivered) ?? 0), String(num(e.failed) ?? 0)]);
  const dead = num(d.deadLetters) ?? 0;
  const atLeast = d.partial === true ? 'at least ' : '';
  return {
    subject: `Daily digest ${day}: ${atLeast}${total} lead${total === 1 ? '' : 's'}${dead ? `, ${dead} failed deliveries` : ''}`,
    heading: `Your day${day ? `, ${day}` : ''}`,
    parts: [
      { kind: 'para', text: `Leads: ${atLeast}${total}.` },
      ...(leads.length ? [{ kind: 'table' as const, head: ['Source', 'Leads'], rows: leads }] : []),
      { kind: 'para', text: endpoints.length ? 'Webhook deliveries:' : 'No webhook deliveries.' },
      ...(endpoints.length ? [{ kind: 'table' as const, head: ['Endpoint', 'Delivered', 'Failed'], rows: endpoints }] : []),
      { kind: 'para', text: dead ? `${atLeast}${dead} failed deliveries wait in the dead-letter queue: redeliver them from the settings page.` : 'Nothing waits in the dead-letter queue.' },
      { kind: 'link', label: 'Open the settings page', url: links.settings },
    ],
  };
}

function draftOf(message: NoticeMessage, links: NoticeLinks): Draft {
  const data = message.data && typeof message.data === 'object' ? message.data : {};
  const kind: MessageKind = message.kind;
  switch (kind) {
    case 'lead.created':
    case 'lead.returning': return leadDraft(kind, data);
    case 'lead.summary': return summaryDraft(data, links);
    case 'endpoint.paused':
    case 'endpoint.disabled': return endpointDraft(kind, data, links);
    case 'daily_digest': return digestDraft(data, links);
    default: return { subject: 'Notice', heading: 'Notice', parts: [{ kind: 'link', label: 'Open the settings page', url: links.settings }] };
  }
}

function asText(draft: Draft, links: NoticeLinks): string {
  const out: string[] = [oneLine(draft.heading), ''];
  for (const part of draft.parts) {
    if (part.kind === 'para') out.push(oneLine(part.text), '');
    else if (part.kind === 'fields') {
      for (const [label, value, multi] of part.rows) {
        if (value === undefined) continue;
        if (multi) out.push(`${label}:`, ...multiLine(value).split('\n').map((l) => `  ${l}`));
        else out.push(`${label}: ${oneLine(value)}`);
      }
      out.push('');
    } else if (part.kind === 'table') {
      for (const row of part.rows) out.push(`  ${row.map((c, i) => `${i ? `${part.head[i]}: ` : ''}${oneLine(c, 200)}`).join(', ')}`);
      out.push('');
    } else if (safeLink(part.url)) out.push(`${part.label}: ${part.url}`, '');
  }
  out.push('--', `Unsubscribe from these notices: ${links.unsubscribe}`);
  return out.join('\n') + '\n';
}

function asHtml(draft: Draft, links: NoticeLinks): string {
  const e = escapeHtml;
  const body: string[] = [`<h1 style="font-size:18px">${e(oneLine(draft.heading))}</h1>`];
  for (const part of draft.parts) {
    if (part.kind === 'para') body.push(`<p>${e(oneLine(part.text))}</p>`);
    else if (part.kind === 'fields') {
      const rows = part.rows.filter(([, v]) => v !== undefined).map(([label, value, multi]) =>
        `<tr><th style="text-align:left;vertical-align:top;padding-right:12px">${e(label)}</th><td>${multi ? e(multiLine(value!)).replace(/\n/g, '<br>') : e(oneLine(value!))}</td></tr>`);
      body.push(`<table>${rows.join('')}</table>`);
    } else if (part.kind === 'table') {
      body.push(`<table><tr>${part.head.map((h) => `<th style="text-align:left;padding-right:12px">${e(h)}</th>`).join('')}</tr>${part.rows.map((r) => `<tr>${r.map((c) => `<td>${e(oneLine(c, 200))}</td>`).join('')}</tr>`).join('')}</table>`);
    } else if (safeLink(part.url)) body.push(`<p><a href="${e(part.url!)}">${e(part.label)}</a></p>`);
  }
  const unsubscribe = safeLink(links.unsubscribe) ? `<a href="${e(links.unsubscribe)}">Unsubscribe</a>` : e(links.unsubscribe);
  body.push(`<hr><p style="font-size:12px;color:#555">${unsubscribe} from these notices.</p>`);
  return `<!doctype html><html><head><meta charset="utf-8"><title>${e(oneLine(draft.subject, SUBJECT_MAX))}</title></head><body style="font-family:sans-serif">${body.join('')}</body></html>`;
}

/**
 * The notice for one recipient. `recipient` is taken for the signature the mailer calls with (a
 * greeting is not worth an address in the body); `links.unsubscribe` is the recipient's own.
 */
export function composeNotice(message: NoticeMessage, _recipient: { email: string }, links: NoticeLinks): ComposedNotice {
  const draft = draftOf(message, links);
  return { subject: oneLine(draft.subject, SUBJECT_MAX), text: asText(draft, links), html: asHtml(draft, links) };
}
