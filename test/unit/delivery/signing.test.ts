/** Signatures verify with the `standardwebhooks` library, unchanged, with one secret or two. */
import { describe, it, expect } from '@jest/globals';
import { createHmac } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import { newSigningSecret, sign } from '../../../functions/core/delivery/signing.js';

/** What a receiver does: paste the whsec_ secret into the library. */
const receiverWith = (secret: string) => new Webhook(secret);
const nowSeconds = () => Math.floor(Date.now() / 1000);
const event = { type: 'client.created', timestamp: '2026-11-22T12:00:00Z', data: { object: { id: 'cli_1', name: 'Zoë 💧' } } };
const body = JSON.stringify(event);

describe('signing secrets', () => {
  it('are whsec_ plus the base64 of 32 random bytes, different every time', () => {
    const secrets = Array.from({ length: 20 }, newSigningSecret);
    for (const secret of secrets) {
      expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
      expect(Buffer.from(secret.slice('whsec_'.length), 'base64')).toHaveLength(32);
    }
    expect(new Set(secrets).size).toBe(secrets.length);
  });
});

describe('Standard Webhooks signatures', () => {
  it('carry the id, the timestamp in seconds and one v1 signature', () => {
    const secret = newSigningSecret();
    const headers = sign({ id: 'evt_1', timestamp: 1_700_000_000, body, secrets: [secret] });
    const expected = createHmac('sha256', Buffer.from(secret.slice(6), 'base64')).update(`evt_1.1700000000.${body}`).digest('base64');
    expect(headers).toEqual({ 'webhook-id': 'evt_1', 'webhook-timestamp': '1700000000', 'webhook-signature': `v1,${expected}` });
  });

  it('verify with the standardwebhooks library, multi-byte body included', () => {
    const secret = newSigningSecret();
    const headers = sign({ id: 'evt_1', timestamp: nowSeconds(), body, secrets: [secret] });
    expect(receiverWith(secret).verify(body, headers)).toEqual(event);
  });

  it('are rejected by the library when the body, id or timestamp was tampered with, or the secret is another', () => {
    const secret = newSigningSecret();
    const ts = nowSeconds();
    const headers = sign({ id: 'evt_1', timestamp: ts, body, secrets: [secret] });
    expect(() => receiverWith(secret).verify(body.replace('cli_1', 'cli_2'), headers)).toThrow();
    expect(() => receiverWith(secret).verify(body, { ...headers, 'webhook-id': 'evt_2' })).toThrow();
    expect(() => receiverWith(secret).verify(body, { ...headers, 'webhook-timestamp': String(ts - 1) })).toThrow();
    expect(() => receiverWith(newSigningSecret()).verify(body, headers)).toThrow();
  });

  it('are rejected by the library when older than its 5-minute tolerance (replays)', () => {
    const secret = newSigningSecret();
    const headers = sign({ id: 'evt_1', timestamp: nowSeconds() - 10 * 60, body, secrets: [secret] });
    expect(() => receiverWith(secret).verify(body, headers)).toThrow(/too old/i);
  });

  it('during a rotation carry both signatures, so a receiver with either secret verifies', () => {
    const [oldSecret, newSecret, otherSecret] = [newSigningSecret(), newSigningSecret(), newSigningSecret()];
    const headers = sign({ id: 'evt_2', timestamp: nowSeconds(), body, secrets: [newSecret, oldSecret] });
    expect(headers['webhook-signature']).toMatch(/^v1,[A-Za-z0-9+/]{43}= v1,[A-Za-z0-9+/]{43}=$/);
    expect(receiverWith(oldSecret).verify(body, headers)).toEqual(event);
    expect(receiverWith(newSecret).verify(body, headers)).toEqual(event);
    expect(() => receiverWith(otherSecret).verify(body, headers)).toThrow();
    expect(() => receiverWith(oldSecret).verify(`${body} `, headers)).toThrow();
  });

  it('accept a secret without its whsec_ prefix', () => {
    const secret = newSigningSecret();
    const input = { id: 'evt_3', timestamp: nowSeconds(), body, secrets: [secret] };
    expect(sign({ ...input, secrets: [secret.slice(6)] })).toEqual(sign(input));
  });

  it('refuse to sign with no secret or a timestamp in milliseconds', () => {
    expect(() => sign({ id: 'evt_4', timestamp: nowSeconds(), body, secrets: [] })).toThrow(/no signing secret/);
    expect(() => sign({ id: 'evt_4', timestamp: Date.now(), body, secrets: [newSigningSecret()] })).toThrow(/Unix seconds/);
  });
});
