/**
 * What an attempt keeps of a receiver's answer never holds a stored secret value
 * (docs/webhooks.md "What the delivery log keeps"): the endpoint's custom header values and its
 * signing material are redacted from the response body, the error text and the response headers,
 * in the encodings an echoing server uses (raw, JSON-escaped, URL-encoded, HTML-escaped, base64)
 * and before anything is cut, so a secret straddling the cut cannot survive half-redacted. What
 * is left at a cut that could be the start of a secret is trimmed. A value too short to be
 * searched for without matching by chance (under MIN_REDACTED_CHARS) cannot be redacted: an
 * excerpt holding it in any encoding is withheld whole, and says so.
 */
import { clipBytes } from '../platform/text.js';

export const REDACTED = '(redacted)';
export const WITHHELD = '(excerpt withheld: it contained a stored header value)';
/** Secret values shorter than this are not replaced in place (too likely to match by chance): an excerpt holding one is withheld. */
export const MIN_REDACTED_CHARS = 8;

const json = (s: string) => JSON.stringify(s).slice(1, -1);
const html = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;').replace(/'/g, '&#39;');
const lowerHex = (s: string) => s.replace(/%[0-9A-F]{2}/g, (h) => h.toLowerCase());
const base64url = (s: string) => s.replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');

/**
 * The base64 text of `value` wherever it sits in an encoded stream: one fragment per alignment
 * (the value's first byte at a group's first, second or third position), each covering only whole
 * 3-byte groups of the value, so it appears whatever bytes surround the value.
 */
function base64Fragments(value: string): string[] {
  const bytes = Buffer.from(value);
  const out: string[] = [];
  for (let skip = 0; skip < 3; skip++) {
    const whole = Math.floor((bytes.length - skip) / 3) * 3;
    if (whole < 6) continue;
    const fragment = bytes.subarray(skip, skip + whole).toString('base64');
    out.push(fragment, base64url(fragment));
  }
  return out;
}

/** Every form of `value` an echoing receiver may send back. */
export function encodingsOf(value: string): string[] {
  const url = encodeURIComponent(value);
  const forms = [
    value, json(value), json(value).replace(/\//g, '\\/'), json(json(value)),
    url, lowerHex(url), url.replace(/%20/g, '+'), encodeURI(value),
    html(value),
    ...base64Fragments(value),
  ];
  return [...new Set(forms.filter((f) => f.length > 0))];
}

export interface ExcerptOptions {
  /** What `max` counts: UTF-8 bytes (a body) or characters (an error text, a header value). */
  unit?: 'bytes' | 'chars';
  /** The text is itself the start of something longer (the client stopped reading): its end is a cut too. */
  truncated?: boolean;
  /** Mark a cut with '…' (counted in `max`). */
  ellipsis?: boolean;
}

export interface Redactor {
  /**
   * `text` with every stored secret redacted, then cut to `max`, and a tail that could be the start
   * of a secret trimmed from any cut. Withheld whole when a secret too short to redact appears in it.
   */
  excerpt(text: string, max: number, options?: ExcerptOptions): string;
}

/** A redactor for the secrets of one endpoint (attempt-log.ts secretsOf). */
export function redactor(secrets: readonly string[]): Redactor {
  const values = [...new Set(secrets.filter((s) => s.length > 0))];
  const long = values.filter((s) => s.length >= MIN_REDACTED_CHARS).flatMap(encodingsOf);
  const short = values.filter((s) => s.length < MIN_REDACTED_CHARS).flatMap(encodingsOf);
  const forms = [...new Set([...long, ...short])].sort((a, b) => b.length - a.length);
  // Longest first: a value containing another is replaced whole.
  const replaceable = [...new Set(long)].sort((a, b) => b.length - a.length);

  /** `cut` without a tail that could be the beginning of a secret's form. */
  const trimTail = (cut: string): string => {
    let keep = cut.length;
    for (const form of forms) {
      // The earliest start within the last form.length - 1 characters from which the rest of `cut` begins `form`.
      for (let i = Math.max(0, cut.length - form.length + 1); i < keep; i++) {
        if (cut.charCodeAt(i) === form.charCodeAt(0) && form.startsWith(cut.slice(i))) {
          keep = i;
          break;
        }
      }
    }
    return cut.slice(0, keep);
  };

  return {
    excerpt(text, max, { unit = 'bytes', truncated = false, ellipsis = false } = {}) {
      if (short.some((form) => text.includes(form))) return WITHHELD;
      const redacted = replaceable.reduce((out, form) => out.replaceAll(form, REDACTED), text);
      const fits = unit === 'bytes' ? Buffer.byteLength(redacted) <= max : Array.from(redacted).length <= max;
      if (fits && !truncated) return redacted;
      const room = max - (ellipsis && !fits ? (unit === 'bytes' ? 3 : 1) : 0);
      const cut = fits ? redacted : unit === 'bytes' ? clipBytes(redacted, room) : Array.from(redacted).slice(0, room).join('');
      const kept = forms.length > 0 ? trimTail(cut) : cut;
      return ellipsis && (!fits || kept.length < cut.length) ? `${kept}…` : kept;
    },
  };
}
