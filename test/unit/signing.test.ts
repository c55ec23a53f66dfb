/** Signatures verify with the `standardwebhooks` library, unchanged, with one secret or two. */
import { describe, it, expect } from '@jest/globals';
import { Webhook } from 'standardwebhooks';
import { newSigningSecret, signatureHeaders } from '../../functions/core/signing.js';

const verifier = (secret: string) => new Webhook(secret.replace(/^whsec_/, ''));
const now = () => Math.floor(Date.now() / 1000);

describe('Standard Webhooks signatures', () => {
  it('makes whsec_ secrets of 32 random bytes', () => {
    const secret = newSigningSecret();
    expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(Buffer.from(secret.slice(6), 'base64')).toHaveLength(32);
    expect(newSigningSecret()).not.toBe(secret);
  });

  it('verifies with the library and refuses a tampered body or another secret', () => {
    const secret = newSigningSecret();
    const body = JSON.stringify({ type: 'client.created', data: { object: { id: 'cli_1', name: 'Zoë 💧' } } });
    const headers = signatureHeaders({ id: 'evt_1', timestamp: now(), body, secrets: [secret] });
    expect(headers['webhook-signature']).toMatch(/^v1,[A-Za-z0-9+/]+=*$/);
    expect(verifier(secret).verify(body, headers)).toMatchObject({ type: 'client.created' });
    expect(() => verifier(secret).verify(body.replace('cli_1', 'cli_2'), headers)).toThrow();
    expect(() => verifier(newSigningSecret()).verify(body, headers)).toThrow();
  });

  it('during a rotation, signs with both secrets so either verifies', () => {
    const [oldSecret, newSecret] = [newSigningSecret(), newSigningSecret()];
    const body = '{"type":"webhook.test"}';
    const headers = signatureHeaders({ id: 'evt_2', timestamp: now(), body, secrets: [newSecret, oldSecret] });
    expect(headers['webhook-signature'].split(' ')).toHaveLength(2);
    expect(verifier(oldSecret).verify(body, headers)).toBeTruthy();
    expect(verifier(newSecret).verify(body, headers)).toBeTruthy();
  });
});
