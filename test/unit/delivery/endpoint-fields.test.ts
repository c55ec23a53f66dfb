/** An endpoint's options as given (delivery/endpoint-fields.ts): header names and values, reserved names, the bound, the masking, the rate limit. */
import { describe, it, expect } from '@jest/globals';
import { applyHeaderChanges, maskedHeaders, MAX_CUSTOM_HEADERS, requireHeadersAgain, reservedHeader, validateOptions } from '../../../functions/core/delivery/endpoint-fields.js';
import { DomainError } from '../../../functions/core/platform/errors.js';

const errorsOf = (run: () => unknown) => {
  try {
    run();
  } catch (error) {
    return (error as DomainError).extra.errors;
  }
  throw new Error('no error');
};

describe('endpoint options', () => {
  it('stores names in lower case; null removes one; the others stay', () => {
    const { headers } = validateOptions({ headers: { 'X-Api-Key': 'k1', 'X-Old': null } });
    expect(headers).toEqual({ 'x-api-key': 'k1', 'x-old': null });
    expect(applyHeaderChanges({ 'x-old': 'o', 'x-kept': 'k' }, headers)).toEqual({ 'x-api-key': 'k1', 'x-kept': 'k' });
  });

  it('refuses every header the delivery sets or the connection uses, and nothing else', () => {
    for (const name of ['webhook-id', 'webhook-signature', 'webhook-anything', 'content-type', 'content-length', 'host', 'user-agent', 'connection', 'keep-alive', 'transfer-encoding', 'te', 'trailer', 'upgrade', 'proxy-authorization', 'expect']) {
      expect(reservedHeader(name)).toBe(true);
    }
    for (const name of ['authorization', 'x-api-key', 'x-webhook-token', 'cookie', 'x-tenant']) expect(reservedHeader(name)).toBe(false);
  });

  it('reports every bad header and a bad limit together', () => {
    expect(errorsOf(() => validateOptions({ headers: { Host: 'h', 'X-A': 'line\nbreak', 'X B': 'v' }, rateLimitPerSecond: 0 }))!.map((e) => e.field)).toEqual(
      ['headers.Host', 'headers.X-A', 'headers.X B', 'rate_limit_per_second']);
  });

  it('names like Object.prototype\'s are headers like any other; `__proto__` is refused with a message that says why', () => {
    expect(validateOptions({ headers: { Constructor: 'c', toString: 't', hasOwnProperty: 'h' } }).headers).toEqual({ constructor: 'c', tostring: 't', hasownproperty: 'h' });
    expect(applyHeaderChanges({}, validateOptions({ headers: { constructor: 'c' } }).headers)).toEqual({ constructor: 'c' });
    const proto = JSON.parse('{"__proto__": "x", "X-A": "a"}') as Record<string, string>;
    expect(errorsOf(() => validateOptions({ headers: proto }))).toEqual([{ field: 'headers.__proto__', message: expect.stringMatching(/cannot be a header name/) }]);
  });

  it('any new URL needs the stored headers again; keep_headers keeps them on the same origin only', () => {
    const current = { url: 'https://hooks.example.com/a', headers: { authorization: 't', 'x-tenant': 'acme' } };
    const refusal = (url: string, changes: Record<string, string | null> = {}, keep = false) => errorsOf(() => requireHeadersAgain(current, url, changes, keep))![0].message;
    expect(refusal('https://hooks.example.com/b')).toMatch(/URL changes.*keep_headers: true: authorization, x-tenant/);
    expect(refusal('https://other.example.com/a', {}, true)).toMatch(/another host.*authorization, x-tenant/);
    expect(() => requireHeadersAgain(current, 'https://hooks.example.com/b', {}, true)).not.toThrow();
    expect(() => requireHeadersAgain(current, 'https://other.example.com/a', { authorization: 'new', 'x-tenant': null })).not.toThrow();
    expect(() => requireHeadersAgain(current, current.url, {})).not.toThrow();
    expect(() => requireHeadersAgain({ url: current.url, headers: {} }, 'https://other.example.com/', {})).not.toThrow();
  });

  it('accepts values with inner spaces and tabs, not leading or trailing ones, nor non-ASCII', () => {
    expect(validateOptions({ headers: { 'X-A': 'Bearer a\tb' } }).headers).toEqual({ 'x-a': 'Bearer a\tb' });
    for (const value of [' lead', 'trail ', 'caf\u00e9', '\u2028']) expect(errorsOf(() => validateOptions({ headers: { 'X-A': value } }))).toHaveLength(1);
  });

  it(`holds at most ${MAX_CUSTOM_HEADERS} headers after the changes`, () => {
    const ten = Object.fromEntries(Array.from({ length: 10 }, (_, i) => [`x-${i}`, 'v']));
    expect(Object.keys(applyHeaderChanges(ten, { 'x-0': null, 'x-new': 'v' }))).toHaveLength(10);
    expect(errorsOf(() => applyHeaderChanges(ten, { 'x-new': 'v' }))).toEqual([{ field: 'headers', message: expect.stringContaining('at most 10') }]);
  });

  it('masks a value, showing the last 4 characters of a long one only', () => {
    expect(maskedHeaders({ a: 'short', b: 'Bearer 0123456789abcdef' })).toEqual({ a: '••••', b: '••••cdef' });
  });

  it('takes a whole number 1 to 100, or null', () => {
    expect(validateOptions({ rateLimitPerSecond: 100 }).rate).toBe(100);
    expect(validateOptions({ rateLimitPerSecond: null }).rate).toBeNull();
    expect(validateOptions({}).rate).toBeUndefined();
    for (const bad of [0, 101, 1.5, '5', Number.NaN]) expect(errorsOf(() => validateOptions({ rateLimitPerSecond: bad }))).toHaveLength(1);
  });
});
