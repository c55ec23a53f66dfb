/**
 * ed25519 (`v1a`) signatures (signing.ts, docs/webhooks.md#verifying-ed25519-signatures): `whsk_`
 * private keys, `whpk_` public keys (base64 of the raw 32 bytes), signatures over
 * `{id}.{timestamp}.{body}` that node:crypto's own verify accepts with the public key alone;
 * mixed with `v1` during a grace, which the standardwebhooks library still verifies.
 */
import { describe, it, expect } from '@jest/globals';
import { createPublicKey, verify } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import {
  newSigningKeyPair, newSigningSecret, publicKeyOf, schemeOf, sign, signersOf, signFor, signingOf,
} from '../../../functions/core/delivery/signing.js';

const event = { type: 'client.created', timestamp: '2026-11-22T12:00:00Z', data: { object: { id: 'cli_1', name: 'Zoë 💧' } } };
const body = JSON.stringify(event);
const nowSeconds = () => Math.floor(Date.now() / 1000);

/** RFC 8032 §7.1, test 1: the secret key (seed) and its public key. */
const RFC_SEED = Buffer.from('9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60', 'hex');
const RFC_PUBLIC = Buffer.from('d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a', 'hex');
/** What the endpoint stores: whsk_ + base64(seed ‖ public key). */
const RFC_KEY = 'whsk_' + Buffer.concat([RFC_SEED, RFC_PUBLIC]).toString('base64');

/** What a receiver does with the whpk_ key the API showed: node:crypto alone. */
function verifiesWith(publicKey: string, headers: Record<string, string>, signedBody: string): boolean {
  const key = createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x: Buffer.from(publicKey.slice('whpk_'.length), 'base64').toString('base64url') }, format: 'jwk' });
  const content = Buffer.from(`${headers['webhook-id']}.${headers['webhook-timestamp']}.${signedBody}`, 'utf8');
  return headers['webhook-signature']!.split(' ').some((s) => s.startsWith('v1a,') && verify(null, content, key, Buffer.from(s.slice(4), 'base64')));
}

describe('ed25519 keys', () => {
  it('are whsk_ + base64 of the seed and the public key; the whpk_ key is base64 of the raw 32 bytes', () => {
    expect(publicKeyOf(RFC_KEY)).toBe('whpk_' + RFC_PUBLIC.toString('base64'));
    const keys = Array.from({ length: 10 }, newSigningKeyPair);
    for (const key of keys) {
      expect(key).toMatch(/^whsk_[A-Za-z0-9+/]{86}==$/);
      const raw = Buffer.from(key.slice(5), 'base64');
      expect(raw).toHaveLength(64);
      expect(publicKeyOf(key)).toBe('whpk_' + raw.subarray(32).toString('base64'));
      expect(Buffer.from(publicKeyOf(key).slice(5), 'base64')).toHaveLength(32);
      expect(schemeOf(key)).toBe('ed25519');
    }
    expect(new Set(keys).size).toBe(keys.length);
    expect(schemeOf(newSigningSecret())).toBe('hmac');
  });

  it('a bare 32-byte seed is taken too; a key whose halves do not match is refused', () => {
    expect(publicKeyOf('whsk_' + RFC_SEED.toString('base64'))).toBe(publicKeyOf(RFC_KEY));
    const wrong = 'whsk_' + Buffer.concat([RFC_SEED, Buffer.alloc(32, 1)]).toString('base64');
    expect(() => publicKeyOf(wrong)).toThrow(/does not match/);
  });
});

describe('v1a signatures', () => {
  it('of a known key are the deterministic ed25519 signature of id.timestamp.body, verified by node:crypto with the public key', () => {
    const headers = sign({ id: 'evt_1', timestamp: 1_700_000_000, body, secrets: [RFC_KEY] });
    expect(headers['webhook-id']).toBe('evt_1');
    expect(headers['webhook-timestamp']).toBe('1700000000');
    expect(headers['webhook-signature']).toMatch(/^v1a,[A-Za-z0-9+/]{86}==$/);
    // ed25519 is deterministic: the same key signs the same content the same way.
    expect(sign({ id: 'evt_1', timestamp: 1_700_000_000, body, secrets: [RFC_KEY] })).toEqual(headers);
    expect(verifiesWith('whpk_' + RFC_PUBLIC.toString('base64'), headers, body)).toBe(true);
  });

  it('fail verification when the body, id or timestamp changed, or with another public key', () => {
    const key = newSigningKeyPair();
    const headers = sign({ id: 'evt_1', timestamp: nowSeconds(), body, secrets: [key] });
    expect(verifiesWith(publicKeyOf(key), headers, body)).toBe(true);
    expect(verifiesWith(publicKeyOf(key), headers, body.replace('cli_1', 'cli_2'))).toBe(false);
    expect(verifiesWith(publicKeyOf(key), { ...headers, 'webhook-id': 'evt_2' }, body)).toBe(false);
    expect(verifiesWith(publicKeyOf(key), { ...headers, 'webhook-timestamp': String(Number(headers['webhook-timestamp']) - 1) }, body)).toBe(false);
    expect(verifiesWith(publicKeyOf(newSigningKeyPair()), headers, body)).toBe(false);
  });

  it('mix with v1 during a scheme switch: each receiver verifies with what it holds, the standardwebhooks library included', () => {
    const [key, secret] = [newSigningKeyPair(), newSigningSecret()];
    const headers = sign({ id: 'evt_2', timestamp: nowSeconds(), body, secrets: [key, secret] });
    expect(headers['webhook-signature']).toMatch(/^v1a,\S+ v1,\S+$/);
    expect(verifiesWith(publicKeyOf(key), headers, body)).toBe(true);
    expect(new Webhook(secret).verify(body, headers)).toEqual(event);
    expect(() => new Webhook(newSigningSecret()).verify(body, headers)).toThrow();
  });
});

describe('signing for an endpoint (signFor)', () => {
  const T0 = Date.parse('2026-11-26T09:00:00.000Z');
  const key = newSigningKeyPair();
  const old = newSigningSecret();
  const endpoint = { secrets: [{ secret: key, createdAt: new Date(T0).toISOString() }, { secret: old, createdAt: '2026-11-01T00:00:00.000Z', expiresAt: new Date(T0 + 3_600_000).toISOString() }] };

  it('signs with every key in effect at send time, then only the current one', () => {
    expect(signingOf(endpoint)).toBe('ed25519');
    expect(signersOf(endpoint, T0).map((s) => s.scheme)).toEqual(['ed25519', 'hmac']);
    const during = signFor(endpoint, { id: 'evt_3', body }, T0);
    expect(during['webhook-timestamp']).toBe(String(T0 / 1000));
    expect(during['webhook-signature'].split(' ').map((s) => s.split(',')[0])).toEqual(['v1a', 'v1']);
    const after = signFor(endpoint, { id: 'evt_3', body }, T0 + 3_600_000);
    expect(after['webhook-signature']).toMatch(/^v1a,\S+$/);
    expect(verifiesWith(publicKeyOf(key), after, body)).toBe(true);
  });

  it('an endpoint stored before ed25519 (whsec_ secrets only) is hmac and signs v1 as before', () => {
    const legacy = { secrets: [{ secret: old, createdAt: '2026-01-01T00:00:00.000Z' }] };
    expect(signingOf(legacy)).toBe('hmac');
    const headers = signFor(legacy, { id: 'evt_4', body, timestamp: nowSeconds() }, Date.now());
    expect(headers).toEqual(sign({ id: 'evt_4', body, timestamp: Number(headers['webhook-timestamp']), secrets: [old] }));
    expect(new Webhook(old).verify(body, headers)).toEqual(event);
  });
});
