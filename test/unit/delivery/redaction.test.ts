/** Stored secrets never survive in what an attempt keeps of a receiver's answer (delivery/redaction.ts). */
import { describe, it, expect } from '@jest/globals';
import { MIN_REDACTED_CHARS, REDACTED, WITHHELD, redactor } from '../../../functions/core/delivery/redaction.js';
import { attemptError, keptHeaders, MAX_ERROR_CHARS, MAX_HEADER_CHARS, secretsOf } from '../../../functions/core/delivery/attempt-log.js';
import { MAX_RESPONSE_BODY_BYTES } from '../../../functions/core/delivery/http-client.js';

const secret = 'ab"cd\\\\ef/SUPERSECRET value-123456789+';
const signing = `whsec_${Buffer.from('0123456789abcdef0123456789abcdef').toString('base64')}`;
const secrets = secretsOf({ headers: { 'X-Quote': secret, Authorization: 'Bearer SUPERSECRETVALUE-123456789' }, secrets: [{ id: 's1', secret: signing, createdAt: '' }] } as never);

/** How receivers echo what they got, each written here independently of the code under test. */
const echoes: Record<string, (value: string) => string> = {
  raw: (v) => `got ${v} ok`,
  json: (v) => JSON.stringify({ headers: { 'x-quote': v } }),
  'json twice': (v) => JSON.stringify({ body: JSON.stringify({ v }) }),
  'json, slashes escaped': (v) => JSON.stringify({ v }).replace(/\//g, '\\/'),
  url: (v) => `https://echo.example/?v=${encodeURIComponent(v)}`,
  'url, lower-case hex': (v) => `v=${encodeURIComponent(v).replace(/%[0-9A-F]{2}/g, (h) => h.toLowerCase())}`,
  form: (v) => `a=1&v=${encodeURIComponent(v).replace(/%20/g, '+')}`,
  html: (v) => `<td>${v.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;')}</td>`,
  ...Object.fromEntries([0, 1, 2].flatMap((pad) => [
    [`base64 at offset ${pad}`, (v: string) => Buffer.from(`${'h'.repeat(pad)}x-quote: ${v}\r\n`).toString('base64')],
    [`base64url at offset ${pad}`, (v: string) => Buffer.from(`${'h'.repeat(pad)}x-quote: ${v}\r\n`).toString('base64url')],
  ])),
};

/** Every way `text` could still hold `value`: as it is, or in any base64 run decoded at any alignment. */
function leaks(text: string, value: string): boolean {
  const probes = [value.slice(0, 6), value.slice(-6), value.slice(10, 16)];
  if (probes.some((p) => text.includes(p))) return true;
  for (const run of text.match(/[A-Za-z0-9+/_-]{4,}/g) ?? []) {
    for (let skip = 0; skip < 4; skip++) {
      const decoded = Buffer.from(run.slice(skip).replace(/-/g, '+').replace(/_/g, '/'), 'base64').toString('latin1');
      if (probes.some((p) => decoded.includes(p))) return true;
    }
  }
  return false;
}

describe('redaction of stored secrets in what a receiver answers', () => {
  const redact = redactor(secrets);
  for (const [name, echo] of Object.entries(echoes)) {
    it(`an echo ${name}: redacted`, () => {
      for (const value of [secret, 'Bearer SUPERSECRETVALUE-123456789', signing]) {
        const out = redact.excerpt(echo(value), MAX_RESPONSE_BODY_BYTES);
        expect({ out, leaks: leaks(out, value) }).toEqual({ out, leaks: false });
      }
      expect(redact.excerpt(echo(secret), MAX_RESPONSE_BODY_BYTES).length).toBeGreaterThan(0);
    });
  }

  it('an echo unrelated to any secret is kept as it is', () => {
    expect(redact.excerpt('{"ok":true}', MAX_RESPONSE_BODY_BYTES)).toBe('{"ok":true}');
  });

  it('at every offset around the 4 KiB cut, in every encoding, nothing of a secret is left', () => {
    for (const [name, echo] of Object.entries(echoes)) {
      const encoded = echo(secret);
      for (let pad = MAX_RESPONSE_BODY_BYTES - encoded.length - 8; pad <= MAX_RESPONSE_BODY_BYTES + 8; pad++) {
        const body = `${'.'.repeat(pad)}${encoded}${'.'.repeat(200)}`;
        const out = redact.excerpt(body, MAX_RESPONSE_BODY_BYTES);
        expect(Buffer.byteLength(out)).toBeLessThanOrEqual(MAX_RESPONSE_BODY_BYTES);
        // A cut secret leaves no start of itself in any encoding.
        const starts = [secret, JSON.stringify(secret).slice(1, -1), encodeURIComponent(secret)].filter((form) => out.endsWith(form.slice(0, 3)));
        expect({ name, pad, starts, leaks: leaks(out, secret) }).toEqual({ name, pad, starts: [], leaks: false });
      }
    }
  });

  it('a body the client stopped reading inside a secret keeps no start of it', () => {
    const body = `${'.'.repeat(100)}"${JSON.stringify(secret).slice(1, 12)}`;
    expect(redact.excerpt(body, MAX_RESPONSE_BODY_BYTES, { truncated: true })).toBe(`${'.'.repeat(100)}"`);
    expect(redact.excerpt(body, MAX_RESPONSE_BODY_BYTES)).toBe(body);
  });

  it(`a value under ${MIN_REDACTED_CHARS} characters cannot be redacted in place: an excerpt holding it is withheld, and says so`, () => {
    const short = redactor(secretsOf({ headers: { 'X-Pin': 'k7#Q2' }, secrets: [] } as never));
    expect(short.excerpt('{"x-pin":"k7#Q2"}', MAX_RESPONSE_BODY_BYTES)).toBe(WITHHELD);
    expect(short.excerpt('pin=k7%23Q2', MAX_RESPONSE_BODY_BYTES)).toBe(WITHHELD);
    expect(short.excerpt('{"ok":true}', MAX_RESPONSE_BODY_BYTES)).toBe('{"ok":true}');
  });

  it('the error text is redacted before it is cut (a redirect Location echoing a secret across the bound)', () => {
    for (let pad = MAX_ERROR_CHARS - 60; pad <= MAX_ERROR_CHARS + 5; pad++) {
      const error = attemptError({ errorCode: 'EREDIRECT', error: `redirect (302) to https://x.example/${'x'.repeat(pad)}${encodeURIComponent(secret)} not followed` }, redact)!;
      expect(Array.from(error).length).toBeLessThanOrEqual(MAX_ERROR_CHARS);
      expect(leaks(error, secret)).toBe(false);
      expect(error).not.toMatch(/%22cd|ab%22|ab$/);
    }
  });

  it('response header names and values are redacted, before they are cut', () => {
    const kept = keptHeaders([['X-Echo', `${'v'.repeat(MAX_HEADER_CHARS - 10)}${JSON.stringify(secret)}`], ['X-Mirror', `Bearer SUPERSECRETVALUE-123456789`]], 'response', redact);
    expect(Object.values(kept).some((v) => leaks(v, secret) || v.includes('SUPERSECRET'))).toBe(false);
    expect(kept['x-mirror']).toBe(REDACTED);
  });

  it('what the list of encodings misses is withheld: \\u escapes, strict percent-encoding, HTML hex entities, UTF-16, a short value in base64', () => {
    const token = "tok'en(1)*+abc/def!QRS";
    const own = redactor(secretsOf({ headers: { Authorization: token, 'X-Pin': 's3cr3t7' }, secrets: [] } as never));
    const misses = [
      JSON.stringify({ v: token }).replace(/[+'&<>]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`),
      `v=${encodeURIComponent(token).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`)}`,
      `<td>${token.replace(/'/g, '&#x27;').replace(/\+/g, '&#43;')}</td>`,
      Buffer.from(`{"v":"${token}"}`, 'utf16le').toString('latin1'),
      ...[0, 1, 2].map((pad) => Buffer.from(`${'h'.repeat(pad)}{"x-pin":"s3cr3t7"}`).toString('base64')),
    ];
    for (const body of misses) expect({ body, out: own.excerpt(body, MAX_RESPONSE_BODY_BYTES) }).toEqual({ body, out: WITHHELD });
    expect(own.excerpt('{"ok":true,"note":"nothing of yours here"}', MAX_RESPONSE_BODY_BYTES)).toBe('{"ok":true,"note":"nothing of yours here"}');
  });

  it('a redirect\'s Location is redacted whole before the error is cut: no prefix of a value at any padding', () => {
    const auth = 'Bearer SUPERSECRETVALUE-123456789';
    const own = redactor(secretsOf({ headers: { Authorization: auth }, secrets: [] } as never));
    for (let pad = 100; pad <= 300; pad += 7) {
      const location = `/next?${'p'.repeat(pad)}&auth=${encodeURIComponent(auth)}`;
      const error = attemptError({ errorCode: 'EREDIRECT', error: `redirect (302) to ${location} not followed` }, own)!;
      expect(Array.from(error).length).toBeLessThanOrEqual(MAX_ERROR_CHARS);
      expect({ pad, leaked: /Bearer%20S|SUPERSECRET/.test(error) }).toEqual({ pad, leaked: false });
    }
  });

  it('a value echoed into a response header name, in any case, is not kept', () => {
    const own = redactor(secretsOf({ headers: { 'X-Api-Key': 'SUPERSECRETVALUE-123456789' }, secrets: [] } as never));
    const kept = keptHeaders([['X-SUPERSECRETVALUE-123456789', '1'], ['x-supersecretvalue-123456789', '2'], ['X-Fine', '3']], 'response', own);
    expect(Object.keys(kept).some((name) => /supersecret/i.test(name))).toBe(false);
    expect(kept['x-fine']).toBe('3');
  });

  it('configuration-like short values do not hide the log: 1 to 3 characters are not searched, 4 to 7 only as a whole token; the error code is always kept', () => {
    const own = redactor(secretsOf({ headers: { 'X-Api-Version': '2', 'X-Env': 'prod', 'X-Pin': 'k7#Q2' }, secrets: [] } as never));
    expect(own.excerpt('{"count":2,"version":"2"}', MAX_RESPONSE_BODY_BYTES)).toBe('{"count":2,"version":"2"}');
    expect(own.excerpt('{"product":"production build"}', MAX_RESPONSE_BODY_BYTES)).toBe('{"product":"production build"}');
    expect(own.excerpt('{"env":"prod"}', MAX_RESPONSE_BODY_BYTES)).toBe(WITHHELD);
    expect(own.excerpt('env=PROD', MAX_RESPONSE_BODY_BYTES)).toBe('env=PROD');
    expect(attemptError({ errorCode: 'ECONNREFUSED', error: 'connect ECONNREFUSED 10.0.0.12:443' }, own)).toBe('ECONNREFUSED: connect ECONNREFUSED 10.0.0.12:443');
    expect(attemptError({ errorCode: 'EREDIRECT', error: 'redirect (302) to /x?pin=k7%23Q2 not followed' }, own)).toBe(`EREDIRECT: ${WITHHELD}`);
    // A name is never withheld for a short value: names would overwrite each other.
    expect(keptHeaders([['X-Prod', 'a'], ['Server', 'nginx']], 'response', own)).toEqual({ 'x-prod': 'a', server: 'nginx' });
  });

  it('the parts of a value a receiver echoes alone are secrets too: a bearer token, a Basic pair and its password', () => {
    const own = redactor(secretsOf({ headers: { Authorization: 'Bearer sk_live_9fQ2mXv7Lp4sR8tW', 'X-Basic': `Basic ${Buffer.from('ops:hunter2-longer').toString('base64')}` }, secrets: [] } as never));
    const out = own.excerpt('{"detail":"token sk_live_9fQ2mXv7Lp4sR8tW is revoked","user":"ops:hunter2-longer","pw":"hunter2-longer"}', MAX_RESPONSE_BODY_BYTES);
    expect(out).not.toMatch(/sk_live_9fQ2|hunter2/);
    expect(own.excerpt('Bearer tokens are fine to mention', MAX_RESPONSE_BODY_BYTES)).toBe('Bearer tokens are fine to mention');
  });

  it('two layers of encoding, wrapped base64 and hex are decoded before an excerpt is kept', () => {
    const value = 'Zm9vYmFy+/YmF6cXV4=';
    const own = redactor(secretsOf({ headers: { 'X-Api-Key': value }, secrets: [] } as never));
    const wrapped = Buffer.from(`prefix...${'x'.repeat(40)}${value}...suffix`).toString('base64').replace(/(.{76})/g, '$1\r\n');
    const cases = [
      `redirect to /login?next=${encodeURIComponent(`/cb?key=${encodeURIComponent(value)}`)}`,
      wrapped,
      Buffer.from(`key=${value}`).toString('hex'),
      `<pre>${JSON.stringify({ key: `a/${value}&"` }).replace(/&/g, '&amp;').replace(/"/g, '&quot;')}</pre>`,
      JSON.stringify(JSON.stringify({ key: value }).replace(/[+&=]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`)),
      Buffer.from(JSON.stringify({ key: `${value}/"x` })).toString('base64'),
    ];
    for (const body of cases) expect({ body, out: own.excerpt(body, MAX_RESPONSE_BODY_BYTES) }).toEqual({ body, out: expect.not.stringContaining('Zm9vYmFy') });
    for (const body of cases) expect(own.excerpt(body, MAX_RESPONSE_BODY_BYTES)).not.toMatch(/YmF6cXV4|%252B|2b2f596d/i);
  });

  it('a value a receiver shortens, spells with HTML5 entities, wraps, escapes as \\x or changes the case of is withheld', () => {
    const jwt = 'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U';
    const key = 'q3+Vb7/K9xZtL1mN0pR2sT4uW6yA8cE+fG/hJ=';
    const own = redactor(secretsOf({ headers: { Authorization: `Bearer ${jwt}`, 'X-Api-Key': key, 'X-Stripe': 'sk_live_4eC39HqLyjWDarjtT1zdp7dcXYZ' }, secrets: [] } as never));
    const echoes = [
      `[type=string_pattern_mismatch, input_value='Bearer eyJhbGciOiJIUzI1N...5N_XgL0n3I9PlFUP0THsR8U', input_type=str]`,
      '<td>q3&plus;Vb7&sol;K9xZtL1mN0pR2sT4uW6yA8cE&plus;fG&sol;hJ&equals;</td>',
      'sk&lowbar;live&lowbar;4eC39HqLyjWDarjtT1zdp7dcXYZ',
      'sk\\x5flive\\x5f4eC39HqLyjWDarjtT1zdp7dcXYZ',
      'token rejected: sk_live_4eC39Hq\nLyjWDarjtT1zdp7dcXYZ',
      'bearer SK_LIVE_4EC39HQLYJWDARJTT1ZDP7DCXYZ',
    ];
    for (const body of echoes) expect({ body, out: own.excerpt(body, MAX_RESPONSE_BODY_BYTES) }).toEqual({ body, out: WITHHELD });
    for (const fine of ['{"ok":true,"received_at":"2026-11-28T23:59:00Z"}', '{"error":"invalid signature","hint":"check your signing secret"}']) {
      expect(own.excerpt(fine, MAX_RESPONSE_BODY_BYTES)).toBe(fine);
    }
  });
});

