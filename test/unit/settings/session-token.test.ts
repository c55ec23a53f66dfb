/** Session tokens (docs/settings.md): what is minted verifies; everything else is one 401. */
import { describe, it, expect } from '@jest/globals';
import { SignJWT } from 'jose';
import { DomainError } from '../../../functions/core/platform/errors.js';
import { bearerToken, mintSessionToken, parseTtl, verifySessionToken } from '../../../functions/core/settings/session-token.js';

const secret = 'k'.repeat(64);
const now = Date.parse('2026-11-23T10:00:00Z');
const mint = (over: Partial<{ organizationId: string; userId: string; ttlSeconds: number; now: number }> = {}) =>
  mintSessionToken(secret, { organizationId: 'org_A1', userId: 'user-1', ttlSeconds: 900, now, ...over });
const refusal = async (promise: Promise<unknown>) => {
  const error = await promise.then(() => undefined, (e: unknown) => e);
  expect(error).toBeInstanceOf(DomainError);
  return error as DomainError;
};

describe('session tokens', () => {
  it('verifies what it minted: organization, user, expiry, issue time', async () => {
    const session = await verifySessionToken(secret, await mint(), now + 1000);
    expect(session).toEqual({ organizationId: 'org_A1', userId: 'user-1', expiresAt: new Date(now + 900_000), issuedAt: new Date(Math.floor(now / 1000) * 1000) });
  });

  it('accepts a token up to 30 s past its expiry (clock skew), not beyond', async () => {
    const token = await mint({ ttlSeconds: 60 });
    await expect(verifySessionToken(secret, token, now + 60_000 + 29_000)).resolves.toMatchObject({ userId: 'user-1' });
    const expired = await refusal(verifySessionToken(secret, token, now + 60_000 + 31_000));
    expect(expired.status).toBe(401);
    expect(expired.message).toMatch(/expired/);
  });

  it('refuses to mint a token of more than 1 h, or for ids that are not ids', async () => {
    expect((await refusal(mint({ ttlSeconds: 3601 }))).status).toBe(422);
    expect((await refusal(mint({ userId: 'bad user' }))).status).toBe(422);
    expect((await refusal(mint({ organizationId: '' }))).status).toBe(422);
    await expect(mint({ ttlSeconds: 3600 })).resolves.toEqual(expect.any(String));
  });

  it('refuses a secret shorter than 32 bytes', async () => {
    await expect(mintSessionToken('short', { organizationId: 'org_A1', userId: 'u', ttlSeconds: 60 })).rejects.toThrow(/at least 32 bytes/);
  });

  it.each([
    ['another audience', { aud: 'other' }],
    ['another issuer', { iss: 'other' }],
    ['no organization', { org_id: undefined }],
    ['a lifetime over 1 h', { exp: Math.floor(now / 1000) + 7200 }],
    ['an issue time in the future', { iat: Math.floor(now / 1000) + 600, exp: Math.floor(now / 1000) + 900 }],
  ])('refuses a token with %s (401)', async (_what, claims) => {
    const base = { org_id: 'org_A1', aud: 'crm-settings', iss: 'crm', sub: 'u', iat: Math.floor(now / 1000), exp: Math.floor(now / 1000) + 600, ...claims };
    const token = await new SignJWT(Object.fromEntries(Object.entries(base).filter(([, v]) => v !== undefined))).setProtectedHeader({ alg: 'HS256' }).sign(new TextEncoder().encode(secret));
    expect((await refusal(verifySessionToken(secret, token, now))).status).toBe(401);
  });

  it('refuses HS512 and a token signed with another secret', async () => {
    const hs512 = await new SignJWT({ org_id: 'org_A1' }).setProtectedHeader({ alg: 'HS512' }).setSubject('u').setAudience('crm-settings').setIssuer('crm').setIssuedAt(Math.floor(now / 1000)).setExpirationTime(Math.floor(now / 1000) + 60).sign(new TextEncoder().encode(secret));
    expect((await refusal(verifySessionToken(secret, hs512, now))).status).toBe(401);
    expect((await refusal(verifySessionToken('z'.repeat(64), await mint(), now))).status).toBe(401);
  });

  it('takes the bearer token only from `Authorization: Bearer <jwt>`', () => {
    expect(bearerToken({ authorization: 'Bearer a.b.c' })).toBe('a.b.c');
    expect(bearerToken({ authorization: 'bearer a.b.c' })).toBe('a.b.c');
    expect(bearerToken({ authorization: 'Basic a.b.c' })).toBeUndefined();
    expect(bearerToken({})).toBeUndefined();
  });

  it('reads durations as 15m, 1h, 900s or plain seconds', () => {
    expect([parseTtl('15m'), parseTtl('1h'), parseTtl('900s'), parseTtl('30')]).toEqual([900, 3600, 900, 30]);
    expect(() => parseTtl('soon')).toThrow(DomainError);
  });
});
