/**
 * The receiver check's signing material (delivery/check-signer.ts), on a clock the test sets: the
 * current signature verifies with `standardwebhooks` as a delivery's does, the forged one never
 * does, and the retired secret is offered only once a rotation's grace has ended.
 */
import { describe, expect, it } from '@jest/globals';
import { Webhook } from 'standardwebhooks';
import { signerFor } from '../../../functions/core/delivery/check-signer.js';
import { newSigningSecret } from '../../../functions/core/delivery/signing.js';

const T0 = Date.parse('2026-11-29T10:00:00Z');
const at = (ms: number) => new Date(ms).toISOString();
const content = (id = 'evt_check1') => ({ id, timestamp: Math.floor(T0 / 1000), body: '{"test":true}' });
/** Whether `secret` verifies these headers (standardwebhooks checks the timestamp against the real clock: sign those at the real time). */
function verifies(secret: string, headers: Record<string, string>, body = '{"test":true}'): boolean {
  try {
    new Webhook(secret.replace(/^whsec_/, '')).verify(body, headers);
    return true;
  } catch {
    return false;
  }
}

describe('the check signer', () => {
  const newer = newSigningSecret();
  const older = newSigningSecret();

  it('signs as a delivery does, forges with material no receiver holds; never rotated: no retired secret', () => {
    const signer = signerFor({ secrets: [{ secret: newer, createdAt: at(T0) }] }, T0);
    const signed = signer.current(content());
    expect(signed['webhook-signature']).toMatch(/^v1,/);
    expect(signed['webhook-id']).toBe('evt_check1');
    expect(signer.forged(content())['webhook-signature']).toMatch(/^v1,/);
    expect(signer.forged(content())['webhook-signature']).not.toBe(signed['webhook-signature']);
    expect(signer.retired).toBeUndefined();
    expect(signer.graceUntil).toBeUndefined();
  });

  it('during a rotation\'s grace both secrets sign and the retired one is not offered yet; after it, the retired one alone', () => {
    const secrets = [{ secret: newer, createdAt: at(T0) }, { secret: older, createdAt: at(T0 - 86_400_000), expiresAt: at(T0 + 3_600_000) }];
    const during = signerFor({ secrets }, T0);
    expect(during.current(content())['webhook-signature'].split(' ')).toHaveLength(2);
    expect(during.retired).toBeUndefined();
    expect(during.graceUntil).toBe(at(T0 + 3_600_000));

    const after = signerFor({ secrets }, T0 + 3_600_000);
    expect(after.current(content())['webhook-signature'].split(' ')).toHaveLength(1);
    expect(after.graceUntil).toBeUndefined();
    const retired = after.retired!(content());
    // Signed with the old secret only: the old one verifies it, the new one does not.
    const now = { ...content(), timestamp: Math.floor(Date.now() / 1000) };
    expect(verifies(older, after.retired!(now))).toBe(true);
    expect(verifies(newer, after.retired!(now))).toBe(false);
    expect(verifies(newer, after.current(now))).toBe(true);
    expect(verifies(newer, after.forged(now))).toBe(false);
    expect(retired['webhook-signature'].split(' ')).toHaveLength(1);
  });

  it('an endpoint with no secret signing refuses, as a delivery would', () => {
    expect(() => signerFor({ secrets: [{ secret: older, createdAt: at(T0), expiresAt: at(T0) }] }, T0)).toThrow(/no active signing secret/);
  });
});
