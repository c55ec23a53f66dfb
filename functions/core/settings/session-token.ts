/**
 * Session tokens of the organization settings (docs/settings.md): a JWT (HS256, `jose`) the CRM app mints
 * for a signed-in admin of one organization: `org_id`, `sub` (the user), `aud: "crm-settings"`,
 * `iss: "crm"`, `iat` and `exp` at most 1 h after it. Verification checks signature, algorithm,
 * audience, issuer and expiry (30 s clock tolerance); any failure is one 401 that says no more than
 * "not valid" or "expired". An API key is never a session token: it is not a JWT.
 */
import { SignJWT, jwtVerify, errors as joseErrors } from 'jose';
import { unauthorized, validationFailed } from '../platform/errors.js';

export const SESSION_AUDIENCE = 'crm-settings';
export const SESSION_ISSUER = 'crm';
/** The longest a token may live: a leaked settings link is useless within the hour. */
export const MAX_SESSION_TTL_SECONDS = 3600;
const CLOCK_TOLERANCE_SECONDS = 30;
const ALGORITHM = 'HS256';
/** HS256 needs a key of at least its hash size (RFC 7518 section 3.2). */
const MIN_SECRET_BYTES = 32;

export interface Session {
  organizationId: string;
  /** The acting user (the CRM app's user id), recorded in the audit log. */
  userId: string;
  expiresAt: Date;
  /** When the link was issued (the token's `iat`), for the organization's sign-out (linksRevokedAt). */
  issuedAt: Date;
}

function keyOf(secret: string | Uint8Array): Uint8Array {
  const key = typeof secret === 'string' ? new TextEncoder().encode(secret) : secret;
  if (key.length < MIN_SECRET_BYTES) throw new Error(`The session-token secret must be at least ${MIN_SECRET_BYTES} bytes.`);
  return key;
}

const ID_PATTERN = /^[A-Za-z0-9_.:@-]{1,128}$/;

/** A signed token for `userId` acting in `organizationId`, valid `ttlSeconds` (1 to 3600). */
export async function mintSessionToken(secret: string | Uint8Array, input: { organizationId: string; userId: string; ttlSeconds: number; now?: number }): Promise<string> {
  const errors = [];
  if (!ID_PATTERN.test(input.organizationId)) errors.push({ field: 'org', message: 'must be an organization id' });
  if (!ID_PATTERN.test(input.userId)) errors.push({ field: 'user', message: 'must be 1 to 128 letters, digits or _.:@-' });
  if (!Number.isInteger(input.ttlSeconds) || input.ttlSeconds < 1 || input.ttlSeconds > MAX_SESSION_TTL_SECONDS)
    errors.push({ field: 'ttl', message: `must be 1 s to ${MAX_SESSION_TTL_SECONDS / 60} min` });
  if (errors.length) throw validationFailed(errors, 'A session token cannot be minted with these values.');
  const iat = Math.floor((input.now ?? Date.now()) / 1000);
  return new SignJWT({ org_id: input.organizationId })
    .setProtectedHeader({ alg: ALGORITHM, typ: 'JWT' })
    .setSubject(input.userId)
    .setAudience(SESSION_AUDIENCE)
    .setIssuer(SESSION_ISSUER)
    .setIssuedAt(iat)
    .setExpirationTime(iat + input.ttlSeconds)
    .sign(keyOf(secret));
}

/** The session a token carries, or a 401 problem (missing, malformed, tampered, expired, wrong audience, too long-lived). */
export async function verifySessionToken(secret: string | Uint8Array, token: string | undefined, now: number = Date.now()): Promise<Session> {
  if (!token) throw unauthorized('A session token is required: open the settings page from the CRM (Authorization: Bearer <token>).');
  let payload;
  try {
    ({ payload } = await jwtVerify(token, keyOf(secret), {
      algorithms: [ALGORITHM],
      audience: SESSION_AUDIENCE,
      issuer: SESSION_ISSUER,
      clockTolerance: CLOCK_TOLERANCE_SECONDS,
      currentDate: new Date(now),
      requiredClaims: ['exp', 'iat', 'sub', 'org_id'],
    }));
  } catch (error) {
    if (error instanceof joseErrors.JWTExpired) throw unauthorized('The session has expired: open the settings page from the CRM again.');
    throw unauthorized('The session token is not valid.');
  }
  const { org_id: organizationId, sub, exp, iat } = payload;
  // A token minted for longer than allowed (by a buggy or compromised minter) is refused, not trusted.
  if (typeof organizationId !== 'string' || !ID_PATTERN.test(organizationId) || typeof sub !== 'string' || !ID_PATTERN.test(sub)
    || typeof exp !== 'number' || typeof iat !== 'number' || exp - iat > MAX_SESSION_TTL_SECONDS || iat * 1000 > now + CLOCK_TOLERANCE_SECONDS * 1000) {
    throw unauthorized('The session token is not valid.');
  }
  return { organizationId, userId: sub, expiresAt: new Date(exp * 1000), issuedAt: new Date(iat * 1000) };
}

/** The bearer token of a request's Authorization header (exactly `Bearer <token>`, any case). */
export function bearerToken(headers: Record<string, string | undefined>): string | undefined {
  const match = /^Bearer ([A-Za-z0-9_.-]+)$/i.exec(headers.authorization ?? '');
  return match?.[1];
}

/** `15m`, `1h`, `900s`, `900` → seconds. */
export function parseTtl(text: string): number {
  const match = /^(\d+)\s*(s|m|h)?$/.exec(text.trim());
  if (!match) throw validationFailed([{ field: 'ttl', message: `must look like 15m, 1h or 900s, got "${text}"` }], 'The time-to-live is not valid.');
  return Number(match[1]) * { s: 1, m: 60, h: 3600 }[(match[2] ?? 's') as 's' | 'm' | 'h'];
}
