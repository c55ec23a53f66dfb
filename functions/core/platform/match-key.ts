/**
 * A client's key in the clients table's sparse `match` index (docs/data-model.md, docs/leads.md
 * "Duplicates"): its e-mail, else its E.164 phone, as a hash, so the index (and what reads it:
 * Contributor Insights, exports) never holds the contact itself. Written on every client write
 * (lead intake, crm/entities.ts); none without either.
 */
import { createHash } from 'node:crypto';

const E164 = /^\+[1-9]\d{5,14}$/;

export type MatchVia = 'email' | 'phone';

/** SHA-256 of `<org>#<via>#<normalized value>`, base64url (43 characters). */
export const matchHash = (organizationId: string, via: MatchVia, value: string) =>
  createHash('sha256').update(`${organizationId}#${via}#${via === 'email' ? value.trim().toLowerCase() : value}`).digest('base64url');

/** The key of one way of matching, or none when the value is absent (or a phone not in E.164). */
export function matchKeyBy(organizationId: string, via: MatchVia, value: string | undefined): string | undefined {
  if (!value || (via === 'phone' && !E164.test(value))) return undefined;
  return matchHash(organizationId, via, value);
}

/** The client's key: by its e-mail, else by its phone. */
export const matchKeyOf = (organizationId: string, client: { email?: unknown; phone?: unknown }): string | undefined =>
  matchKeyBy(organizationId, 'email', typeof client.email === 'string' ? client.email : undefined)
  ?? matchKeyBy(organizationId, 'phone', typeof client.phone === 'string' ? client.phone : undefined);
