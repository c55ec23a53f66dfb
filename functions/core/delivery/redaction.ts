/**
 * What an attempt keeps of a receiver's answer never holds a stored secret value
 * (docs/webhooks.md "What the delivery log keeps"): the endpoint's custom header values and its
 * signing material are redacted from the response body, the error text and the response headers,
 * in the encodings an echoing server uses (raw, JSON-escaped, URL-encoded, HTML-escaped, base64)
 * and before anything is cut, so a secret straddling the cut cannot survive half-redacted. What
 * is left at a cut that could be the start of a secret is trimmed. A value too short to be
 * searched for without matching by chance (under MIN_REDACTED_CHARS) cannot be redacted: an
 * excerpt holding it in any encoding is withheld whole, and says so. And whatever the list of
 * encodings misses (a `\u002B` escape, a stricter percent-encoder, an HTML hex entity, UTF-16, a
 * short value in base64), the text left after redaction is decoded every common way
 * (`decodedViews`): if any view still holds a value, the excerpt is withheld whole.
 */
import { clipBytes } from '../platform/text.js';

export const REDACTED = '(redacted)';
export const WITHHELD = '(excerpt withheld: it contained a stored header value)';
/** Secret values shorter than this are not replaced in place (too likely to match by chance): an excerpt holding one is withheld. */
export const MIN_REDACTED_CHARS = 8;
/**
 * Values shorter than this are not searched for at all: a value of 1 to 3 characters (`X-Api-Version:
 * 2`) is configuration, guessable in a few tries whatever the log shows, and would withhold nearly
 * every excerpt. Values of 4 to 7 characters withhold an excerpt holding them as a whole token.
 */
export const MIN_SECRET_CHARS = 4;
/** Letters and digits in a row of a long value that withhold an excerpt holding them (a value cut short by the receiver). */
const FRAGMENT_CHARS = 10;

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

/** `+` as a space (forms), then `%XX` sequences decoded run by run (a malformed run as bytes). */
const urlDecoded = (text: string) => text.replace(/\+/g, ' ').replace(/(%[0-9A-Fa-f]{2})+/g, (run) => {
  try {
    return decodeURIComponent(run);
  } catch {
    return Buffer.from(run.replace(/%/g, ''), 'hex').toString('latin1');
  }
});
/** JSON string escapes decoded (`\uXXXX`, `\"`, `\\`, `\/`, `\n`…). */
const jsonDecoded = (text: string) => text.replace(/\\(u[0-9A-Fa-f]{4}|x[0-9A-Fa-f]{2}|["\\/bfnrt])/g, (_, e: string) =>
  e[0] === 'u' || e[0] === 'x' ? String.fromCharCode(parseInt(e.slice(1), 16)) : ({ b: '\b', f: '\f', n: '\n', r: '\r', t: '\t' } as Record<string, string>)[e] ?? e);
/** HTML's named references for what a value may hold (HTML5 names punctuation too: `&plus;`, `&sol;`…). */
const NAMED: Record<string, string> = {
  amp: '&', lt: '<', gt: '>', quot: '"', apos: "'", nbsp: '\u00a0', plus: '+', sol: '/', bsol: '\\', equals: '=', lowbar: '_', period: '.',
  colon: ':', semi: ';', comma: ',', excl: '!', quest: '?', num: '#', percnt: '%', dollar: '$', commat: '@', ast: '*', lpar: '(', rpar: ')',
  lsqb: '[', rsqb: ']', lbrace: '{', rbrace: '}', verbar: '|', vert: '|', tilde: '~', grave: '`', hat: '^', dash: '-', hyphen: '-', minus: '-',
};
/** HTML character references decoded (named, decimal and hex). */
const htmlDecoded = (text: string) => text.replace(/&(#x[0-9A-Fa-f]+|#\d+|[a-z]+);/gi, (whole, ref: string) =>
  ref[0] === '#' ? String.fromCodePoint(ref[1] === 'x' || ref[1] === 'X' ? parseInt(ref.slice(2), 16) : Number(ref.slice(1))) : NAMED[ref.toLowerCase()] ?? whole);
/**
 * Each run of base64 (or base64url) characters decoded at each of its 4 alignments, the text also
 * read with its line breaks and spaces taken out (MIME and PEM wrap base64 at 64 or 76 columns).
 */
const base64Decoded = (text: string) => [...new Set([
  ...(text.match(/[A-Za-z0-9+/_-]{8,}/g) ?? []),
  ...(text.replace(/[\s\\]+/g, '').match(/[A-Za-z0-9+/_-]{8,}/g) ?? []),
])].flatMap((run) => [0, 1, 2, 3].map((skip) => Buffer.from(run.slice(skip).replace(/-/g, '+').replace(/_/g, '/'), 'base64').toString('latin1')));
/** Each run of hex digits decoded at both alignments. */
const hexDecoded = (text: string) => (text.match(/[0-9A-Fa-f]{16,}/g) ?? []).flatMap((run) => [0, 1].map((skip) =>
  Buffer.from(run.slice(skip, skip + Math.floor((run.length - skip) / 2) * 2), 'hex').toString('latin1')));
const nulsDropped = (text: string) => text.split('\u0000').join('');
/** Line breaks, spaces, `<wbr>` and soft hyphens taken out: a value wrapped or broken for display. */
const joined = (text: string) => text.replace(/<wbr\s*\/?>|&shy;|\u00ad|\s+/gi, '');
/** The decoders that give one view of a text each. */
const SIMPLE = [jsonDecoded, urlDecoded, htmlDecoded, nulsDropped, joined];

/**
 * `text` decoded every common way, two layers deep (a URL inside a URL, JSON inside HTML, JSON
 * escaped twice, base64 of escaped text, base64 or hex of any of them): each decoder applied to the
 * text and to each view one layer down.
 */
export function decodedViews(text: string): string[] {
  const first = [...SIMPLE.map((decode) => decode(text)), ...base64Decoded(text), ...hexDecoded(text)];
  const second = first.flatMap((view) => SIMPLE.map((decode) => decode(view)));
  const encoded = SIMPLE.map((decode) => decode(text)).flatMap((view) => [...base64Decoded(view), ...hexDecoded(view)]);
  return [text, ...first, ...second, ...encoded];
}

export interface ExcerptOptions {
  /** What `max` counts: UTF-8 bytes (a body) or characters (an error text, a header value). */
  unit?: 'bytes' | 'chars';
  /** The text is itself the start of something longer (the client stopped reading): its end is a cut too. */
  truncated?: boolean;
  /** Mark a cut with '…' (counted in `max`). */
  ellipsis?: boolean;
  /** A value in any case is a match (a header name: receivers lower-case them). */
  anyCase?: boolean;
  /** Never withheld for a short value (a header name: withheld names would overwrite each other). */
  name?: boolean;
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
  const values = [...new Set(secrets.filter((s) => s.length >= MIN_SECRET_CHARS))];
  const longValues = values.filter((s) => s.length >= MIN_REDACTED_CHARS);
  const shortValues = values.filter((s) => s.length < MIN_REDACTED_CHARS);
  const long = longValues.flatMap(encodingsOf);
  const short = shortValues.flatMap(encodingsOf);
  const escape = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  // A short value as a whole token: not inside a longer run of letters and digits (compiled once, as sent and in any case).
  const tokenPattern = (v: string, flags: string) => new RegExp(`(^|[^A-Za-z0-9])${escape(v)}(?![A-Za-z0-9])`, flags);
  const shortTokens = { exact: shortValues.map((v) => tokenPattern(v, '')), anyCase: shortValues.map((v) => tokenPattern(v, 'i')) };
  const longLower = longValues.map((v) => v.toLowerCase());
  const forms = [...new Set([...long, ...short])].sort((a, b) => b.length - a.length);
  /** Whether a view still holds a stored value (a short one as a whole token; none of them for a name). */
  const holdsValue = (views: string[], lowered: string[], anyCase: boolean, name: boolean) => {
    const tokens = name ? [] : anyCase ? shortTokens.anyCase : shortTokens.exact;
    return (anyCase ? lowered : views).some((view) => (anyCase ? longLower : longValues).some((v) => view.includes(v)))
      || views.some((view) => tokens.some((t) => t.test(view)));
  };
  /**
   * What a receiver that shortens a value before echoing it (`eyJhbGciOi…THsR8U`, a validation
   * error's cut input) leaves: any 10 letters and digits in a row of a long value, in any case, in
   * any view of the text, withhold it. Shorter runs between punctuation can still pass.
   */
  const grams = new Set<string>();
  for (const value of longValues) {
    for (const run of value.toLowerCase().split(/[^a-z0-9]+/)) for (let i = 0; i + FRAGMENT_CHARS <= run.length; i++) grams.add(run.slice(i, i + FRAGMENT_CHARS));
  }
  const holdsFragment = (lowered: string[]) => grams.size > 0 && lowered.some((view) =>
    (view.match(/[a-z0-9]{10,}/g) ?? []).some((run) => {
      for (let i = 0; i + FRAGMENT_CHARS <= run.length; i++) if (grams.has(run.slice(i, i + FRAGMENT_CHARS))) return true;
      return false;
    }));
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
    excerpt(text, max, { unit = 'bytes', truncated = false, ellipsis = false, anyCase = false, name = false } = {}) {
      const redacted = replaceable.reduce((out, form) => out.replaceAll(form, REDACTED), text);
      if (values.length > 0) {
        // Decoded once for every check: the markers taken out, each view also in lower case.
        const views = decodedViews(redacted.split(REDACTED).join(' '));
        const lowered = views.map((view) => view.toLowerCase());
        if (holdsValue(views, lowered, anyCase, name) || (!name && holdsFragment(lowered))) return WITHHELD;
      }
      const fits = unit === 'bytes' ? Buffer.byteLength(redacted) <= max : Array.from(redacted).length <= max;
      if (fits && !truncated) return redacted;
      const room = max - (ellipsis && !fits ? (unit === 'bytes' ? 3 : 1) : 0);
      const cut = fits ? redacted : unit === 'bytes' ? clipBytes(redacted, room) : Array.from(redacted).slice(0, room).join('');
      const kept = forms.length > 0 ? trimTail(cut) : cut;
      return ellipsis && (!fits || kept.length < cut.length) ? `${kept}…` : kept;
    },
  };
}
