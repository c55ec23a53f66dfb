/**
 * The links in notice e-mails that act without a session: confirm an address (double opt-in) and
 * unsubscribe it. Each link carries a token signed with the stage's noticeLinks secret (HMAC-SHA256,
 * lib/topology.ts `secrets`), scoped to one organization, one address and one purpose, so it cannot
 * be guessed, altered or used for another address; a confirm link also names the addition it was
 * sent for, so one sent before the address was removed and added again confirms nothing
 * (docs/notifications.md "Links").
 */
import { createHmac, timingSafeEqual } from 'node:crypto';

export type LinkPurpose = 'confirm' | 'unsubscribe';

export interface LinkClaims {
  organizationId: string;
  email: string;
  purpose: LinkPurpose;
  /** The addition a confirm link was sent for (Recipient.addedAt). */
  addedAt?: number;
}

/** The public pages behind the links (functions/front-door/routes.ts). */
export const noticeLinkPaths: Record<LinkPurpose, string> = { confirm: '/notices/confirm', unsubscribe: '/notices/unsubscribe' };

/** A confirm link is good this long after its addition; an unsubscribe link always (RFC 8058: it must keep working). */
export const CONFIRM_LINK_DAYS = 7;

const VERSION = 'n1';
const mac = (secret: string, payload: string) => createHmac('sha256', secret).update(`notice-link.${VERSION}.${payload}`).digest();

export function signLink(secret: string, claims: LinkClaims): string {
  const payload = Buffer.from(JSON.stringify({ o: claims.organizationId, e: claims.email, p: claims.purpose, ...(claims.addedAt !== undefined ? { a: claims.addedAt } : {}) })).toString('base64url');
  return `${VERSION}.${payload}.${mac(secret, payload).toString('base64url')}`;
}

/** The claims of a token signed with `secret` for `purpose`, or undefined (altered, another purpose, an expired confirm link, not a token). */
export function verifyLink(secret: string, token: string, purpose: LinkPurpose, now: number): LinkClaims | undefined {
  const [version, payload, signature, ...rest] = token.split('.');
  if (version !== VERSION || !payload || !signature || rest.length) return undefined;
  const given = Buffer.from(signature, 'base64url');
  const expected = mac(secret, payload);
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) return undefined;
  let body: { o?: unknown; e?: unknown; p?: unknown; a?: unknown };
  try {
    body = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8'));
  } catch {
    return undefined;
  }
  if (typeof body.o !== 'string' || typeof body.e !== 'string' || body.p !== purpose) return undefined;
  const addedAt = typeof body.a === 'number' ? body.a : undefined;
  if (purpose === 'confirm' && (addedAt === undefined || now - addedAt > CONFIRM_LINK_DAYS * 86_400_000)) return undefined;
  return { organizationId: body.o, email: body.e, purpose, ...(addedAt !== undefined ? { addedAt } : {}) };
}

/** The page URL of a link under the API's base URL (no trailing slash). */
export const linkUrl = (baseUrl: string, purpose: LinkPurpose, token: string) => `${baseUrl}${noticeLinkPaths[purpose]}?token=${encodeURIComponent(token)}`;
