/**
 * A publishable key's policy (docs/leads.md#lead-forms-in-public-pages-publishable-keys) without a table: which origins a key may list, how a
 * request's Origin is matched, and under which key the per-address window counts a client.
 */
import { describe, it, expect } from '@jest/globals';
import { API_KEY_PATTERN, generateApiKey, keyPolicy, matchOrigin, parseOrigin } from '../../../functions/core/tenancy/api-keys.js';
import { addressWindowKey } from '../../../functions/core/tenancy/rate-limit.js';
import { DomainError } from '../../../functions/core/platform/errors.js';

describe('origins a publishable key may list', () => {
  it.each([
    ['https://shop.example', 'https://shop.example'],
    ['https://Shop.Example/', 'https://shop.example'],
    ['https://shop.example:443', 'https://shop.example'],
    ['https://shop.example:8443', 'https://shop.example:8443'],
    ['http://127.0.0.1:5500', 'http://127.0.0.1:5500'],
    ['http://localhost:3000', 'http://localhost:3000'],
    ['http://[::1]:8080', 'http://[::1]:8080'],
  ])('%s is the origin %s', (value, origin) => {
    expect(parseOrigin(value)).toEqual({ origin });
  });

  it.each([
    ['http://shop.example', /https/],
    ['shop.example', /not an origin/],
    ['https://shop.example/contact', /origin only/],
    ['https://shop.example?x=1', /origin only/],
    ['https://user:pw@shop.example', /origin only/],
    ['https://*.shop.example', /./],
    ['ftp://shop.example', /https/],
    ['null', /not an origin/],
  ])('%s is refused', (value, why) => {
    const parsed = parseOrigin(value);
    expect(parsed).toHaveProperty('problem');
    expect((parsed as { problem: string }).problem).toMatch(why);
  });
});

describe('matching a request’s Origin header', () => {
  const origins = ['https://shop.example', 'http://127.0.0.1:5500'];
  it('matches the serialized origin exactly', () => {
    expect(matchOrigin(origins, 'https://shop.example')).toBe('https://shop.example');
    expect(matchOrigin(origins, 'HTTPS://SHOP.EXAMPLE')).toBe('https://shop.example');
    expect(matchOrigin(origins, 'http://127.0.0.1:5500')).toBe('http://127.0.0.1:5500');
  });
  it.each([
    [undefined], [''], ['null'], ['http://shop.example'], ['https://shop.example.evil.example'], ['https://evil.example/https://shop.example'],
    ['https://shop.example:444'], ['https://sub.shop.example'], ['http://127.0.0.1:5501'],
  ])('does not match %s', (header) => {
    expect(matchOrigin(origins, header)).toBeUndefined();
  });
});

describe('a key’s policy', () => {
  const fields = (fn: () => unknown) => {
    try {
      fn();
    } catch (error) {
      return (error as DomainError).extra.errors?.map((e) => e.field);
    }
    throw new Error('expected a validation error');
  };

  it('a secret key takes no publishable options, and none are stored', () => {
    expect(keyPolicy()).toEqual({});
    expect(fields(() => keyPolicy({ origins: ['https://shop.example'] }))).toEqual(['origins']);
    expect(fields(() => keyPolicy({ dailyCap: 10 }))).toEqual(['dailyCap']);
  });

  it('a publishable key needs an origin; its options are validated together', () => {
    expect(fields(() => keyPolicy({ kind: 'publishable' }))).toEqual(['origins']);
    expect(fields(() => keyPolicy({ kind: 'publishable', origins: ['http://shop.example'], thankYouUrl: 'javascript:alert(1)', dailyCap: 0, honeypotField: 'a b' })))
      .toEqual(['origins', 'thankYouUrl', 'dailyCap', 'honeypotField']);
    expect(keyPolicy({ kind: 'publishable', origins: ['https://Shop.example/', 'https://shop.example'], thankYouUrl: 'https://shop.example/thanks', dailyCap: 50 }))
      .toEqual({ kind: 'publishable', origins: ['https://shop.example'], thankYouUrl: 'https://shop.example/thanks', dailyCap: 50 });
  });

  it('a thank-you URL is stored as it goes in Location: line breaks and spaces refused (the URL parser would drop them silently)', () => {
    const base = { kind: 'publishable' as const, origins: ['https://shop.example'] };
    for (const bad of ['https://shop.example/thanks\r\nSet-Cookie:a=b', 'https://shop.example/tha\tnks', ' https://shop.example/thanks', 'https://shop.example/thank you']) {
      expect(fields(() => keyPolicy({ ...base, thankYouUrl: bad }))).toEqual(['thankYouUrl']);
    }
    expect(keyPolicy({ ...base, thankYouUrl: 'https://Shop.Example/thanks?from=form#top' }).thankYouUrl).toBe('https://shop.example/thanks?from=form#top');
    expect(keyPolicy({ ...base, thankYouUrl: 'https://bücher.example/danke' }).thankYouUrl).toBe('https://xn--bcher-kva.example/danke');
  });

  it('each kind has its prefix, and both are well-formed keys', () => {
    const pub = generateApiKey('publishable').key;
    const live = generateApiKey().key;
    expect(pub).toMatch(/^crm_pub_[0-9A-Za-z]{32}$/);
    expect(live).toMatch(/^crm_live_[0-9A-Za-z]{32}$/);
    expect(API_KEY_PATTERN.test(pub) && API_KEY_PATTERN.test(live)).toBe(true);
    expect(API_KEY_PATTERN.test(pub.replace('crm_pub_', 'crm_test_'))).toBe(false);
  });
});

describe('the per-address window’s key', () => {
  it('counts an IPv4 address as it is', () => {
    expect(addressWindowKey('key_1', '203.0.113.7')).toBe('key_1#ip#203.0.113.7');
    expect(addressWindowKey('key_1', '::ffff:203.0.113.7')).toBe('key_1#ip#203.0.113.7');
  });
  it('counts an IPv6 address by its /64, whatever its spelling', () => {
    const a = addressWindowKey('key_1', '2001:db8:aa:bb:1:2:3:4');
    expect(a).toBe('key_1#ip#2001:db8:aa:bb::/64');
    expect(addressWindowKey('key_1', '2001:0db8:00aa:00bb:ffff::1')).toBe(a);
    expect(addressWindowKey('key_1', '2001:db8:aa:bc::1')).not.toBe(a);
    expect(addressWindowKey('key_1', '::1')).toBe('key_1#ip#0:0:0:0::/64');
  });
  it('keeps keys apart, and anything unparsable together', () => {
    expect(addressWindowKey('key_2', '203.0.113.7')).not.toBe(addressWindowKey('key_1', '203.0.113.7'));
    expect(addressWindowKey('key_1', undefined)).toBe('key_1#ip#unknown');
    expect(addressWindowKey('key_1', 'not-an-ip')).toBe('key_1#ip#unknown');
  });
});
