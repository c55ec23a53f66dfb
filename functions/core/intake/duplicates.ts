/**
 * Duplicate leads (docs/leads.md "Duplicates"): the earlier client a lead matches, by normalized
 * e-mail or E.164 phone through the clients table's sparse `match` index (keys only: 1 write unit a
 * lead, never a scan), and the double-submit guard, which answers the identical submission repeated
 * within 10 minutes (same key, same normalized body) as the same client.
 *
 * The guard is a hash of the submission here; its slot rides on the update that bills the lead,
 * which tenancy owns (tenancy/double-submit.ts, tenancy/wallet-store.ts): that update is conditioned
 * on the slot not holding the same hash from the last 10 minutes, so two concurrent double-clicks
 * cannot both pass it: one creates the client, the other is answered as its duplicate.
 */
import { createHash } from 'node:crypto';
import type { Deps } from '../platform/deps.js';
import { matchKeyBy } from '../platform/match-key.js';
import { GUARD_SLOTS, type SubmissionGuard } from '../tenancy/billing.js';
import { clientsStore, type EarlierClient } from './clients-store.js';
import type { LeadInput } from './lead-schema.js';

export { matchKeyOf } from '../platform/match-key.js';
export type { EarlierClient } from './clients-store.js';

/**
 * The newest earlier client of the organization with the lead's e-mail or, failing that, its phone
 * (a client is indexed by its e-mail, or by its phone when it has no e-mail). One Query per key tried.
 */
export function findEarlierClient(deps: Deps, organizationId: string, input: LeadInput): Promise<EarlierClient | undefined> {
  const tries = (['email', 'phone'] as const).flatMap((via) => {
    const matchKey = matchKeyBy(organizationId, via, input[via]);
    return matchKey ? [{ via, matchKey }] : [];
  });
  return clientsStore(deps).findEarlier(organizationId, tries);
}

/** JSON with object keys sorted, so one body spelled in another key order hashes the same. */
function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (value && typeof value === 'object') {
    return `{${Object.keys(value).sort().map((k) => `${JSON.stringify(k)}:${canonical((value as Record<string, unknown>)[k])}`).join(',')}}`;
  }
  return JSON.stringify(value);
}

/** The guard of one submission: a hash of the key and the normalized lead (what parseLead made of the body). */
export function submissionGuard(keyId: string, input: LeadInput): SubmissionGuard {
  const hash = createHash('sha256').update(`${keyId}\n${canonical(input)}`).digest('hex').slice(0, 20);
  return { hash, slot: parseInt(hash.slice(0, 4), 16) % GUARD_SLOTS };
}

/** How long a duplicate waits for its first submission's client to be written (a double-click's twin may still be writing it). */
const FIRST_WRITE_WAIT_MS = 1_000;
const FIRST_WRITE_POLL_MS = 50;

/** Whether the client exists, waiting briefly (real time) for a concurrent first submission to write it. */
export async function clientExists(deps: Deps, organizationId: string, clientId: string): Promise<boolean> {
  const until = Date.now() + FIRST_WRITE_WAIT_MS;
  for (;;) {
    if (await clientsStore(deps).clientExists(organizationId, clientId)) return true;
    if (Date.now() >= until) return false;
    await new Promise((r) => setTimeout(r, FIRST_WRITE_POLL_MS));
  }
}
