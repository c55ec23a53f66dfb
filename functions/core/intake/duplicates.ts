/**
 * Duplicate leads (docs/leads.md "Duplicates"): the earlier client a lead matches, by normalized
 * e-mail or E.164 phone through the clients table's sparse `match` index (keys only: 1 write unit a
 * lead, never a scan), and the double-submit guard, which answers the identical submission repeated
 * within 10 minutes (same key, same normalized body) as the same client.
 *
 * The guard costs no write of its own: it rides on the update every lead already makes to count
 * its billing (the organization item when prepaid, the day's usage item when postpaid), as eight
 * slots `dh<n>` (body hash), `dc<n>` (client id), `dt<n>` (when), `dr<n>` (the request's claim). That
 * update is conditioned on the slot not holding the same hash from the last 10 minutes, so two
 * concurrent double-clicks cannot both pass it: one creates the client, the other is answered as its duplicate.
 */
import { createHash } from 'node:crypto';
import type { AttributeValue } from '@aws-sdk/client-dynamodb';
import { GetCommand, QueryCommand } from '@aws-sdk/lib-dynamodb';
import type { Deps } from '../platform/deps.js';
import { keys } from '../platform/model.js';
import { matchKeyBy } from '../platform/match-key.js';
import type { LeadInput } from './lead-schema.js';

export const DOUBLE_SUBMIT_MS = 10 * 60_000;
const GUARD_SLOTS = 8;

export { matchKeyOf } from '../platform/match-key.js';

export interface EarlierClient { id: string; via: 'email' | 'phone' }

/**
 * The newest earlier client of the organization with the lead's e-mail or, failing that, its phone
 * (a client is indexed by its e-mail, or by its phone when it has no e-mail). One Query per key tried.
 */
export async function findEarlierClient(deps: Deps, organizationId: string, input: LeadInput): Promise<EarlierClient | undefined> {
  for (const via of ['email', 'phone'] as const) {
    const matchKey = matchKeyBy(organizationId, via, input[via]);
    if (!matchKey) continue;
    const { Items } = await deps.doc.send(new QueryCommand({
      TableName: deps.tables.clients,
      IndexName: 'match',
      KeyConditionExpression: 'matchKey = :k',
      ExpressionAttributeValues: { ':k': matchKey },
      ScanIndexForward: false,
      Limit: 1,
    }));
    const [found] = Items ?? [];
    // The hash carries the organization; the key must say so too.
    if (found?.pk === keys.org(organizationId).pk && String(found.sk).startsWith('CLIENT#')) return { id: String(found.sk).slice('CLIENT#'.length), via };
  }
  return undefined;
}

export interface SubmissionGuard { hash: string; slot: number }

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

/**
 * The parts of an update that record the submission in its slot, unless the same one was recorded in
 * the last 10 minutes. `token` is unique to the request (its fresh client id, even when it merges):
 * the slot's claim, which tells the request's own retried bill (ownGuard), its refund (releaseClause)
 * and its adoption by a retry of the caller (adoptClause) from any other request.
 */
export function guardClause(guard: SubmissionGuard, clientId: string, token: string, now: number) {
  const n = guard.slot;
  return {
    set: `dh${n} = :gh, dc${n} = :gc, dt${n} = :gt, dr${n} = :gr`,
    condition: `(attribute_not_exists(dh${n}) OR dh${n} <> :gh OR dt${n} < :gcut)`,
    values: { ':gh': guard.hash, ':gc': clientId, ':gt': now, ':gr': token, ':gcut': now - DOUBLE_SUBMIT_MS },
  };
}

/** The identical submission of the last 10 minutes a slot records: its client and its claim (absent on slots written before claims). */
export interface GuardedSubmission { clientId: string; token?: string }

/** From a guard item's old image (a failed condition's), the identical submission of the last 10 minutes, if that is why it failed. */
export function guardedClient(old: Record<string, AttributeValue> | undefined, guard: SubmissionGuard, now: number): GuardedSubmission | undefined {
  const n = guard.slot;
  if (old?.[`dh${n}`]?.S !== guard.hash || Number(old[`dt${n}`]?.N ?? 0) < now - DOUBLE_SUBMIT_MS) return undefined;
  const clientId = old[`dc${n}`]?.S;
  return clientId ? { clientId, ...(old[`dr${n}`]?.S ? { token: old[`dr${n}`]!.S } : {}) } : undefined;
}

/**
 * Whether the guard refused because of this very request's own claim: the SDK retried a bill whose
 * first attempt committed but whose answer was lost. Compared on the request's token, never on the
 * client it names (two identical merges name the same earlier client).
 */
export function ownGuard(old: Record<string, AttributeValue> | undefined, guard: SubmissionGuard, token: string): boolean {
  const n = guard.slot;
  return old?.[`dh${n}`]?.S === guard.hash && old[`dr${n}`]?.S === token;
}

/** The claim a retry of the caller takes over from the request `token` whose client was never written (docs/leads.md "Billing"). */
export const adoptedToken = (token: string, by: string) => `${token}+${by}`;

/**
 * The update that hands a claim over to a retry of the caller: the slot still holds `token` (the
 * first request was not refunded), and now names the retry, so the first request's refund finds it
 * adopted and gives nothing back: the debit pays for the retry's write of that client.
 */
export function adoptClause(guard: SubmissionGuard, token: string, by: string) {
  const n = guard.slot;
  return { set: `dr${n} = :ga`, condition: `dr${n} = :gr`, values: { ':gr': token, ':ga': adoptedToken(token, by) } };
}

/** The update that gives a claim's slot back with its refund, only while the slot still holds the claim. */
export function releaseClause(guard: SubmissionGuard, token: string) {
  const n = guard.slot;
  return { remove: `dh${n}, dc${n}, dt${n}, dr${n}`, condition: `dr${n} = :gr`, values: { ':gr': token } };
}

/**
 * What became of a claim, from an old image: still `held`; `adopted` by a retry of the caller;
 * `released` (its refund already applied: the SDK retried one whose answer was lost); or `taken`
 * over by another submission hashing to the same slot (so the slot says nothing of this refund).
 */
export function claimState(old: Record<string, AttributeValue> | undefined, guard: SubmissionGuard, token: string): 'held' | 'adopted' | 'released' | 'taken' {
  const n = guard.slot;
  const claim = old?.[`dr${n}`]?.S;
  if (claim === token) return 'held';
  if (claim?.startsWith(`${token}+`)) return 'adopted';
  return old?.[`dh${n}`] === undefined ? 'released' : 'taken';
}

/** How long a duplicate waits for its first submission's client to be written (a double-click's twin may still be writing it). */
const FIRST_WRITE_WAIT_MS = 1_000;

/** Whether the client exists, waiting briefly for a concurrent first submission to write it. */
export async function clientExists(deps: Deps, organizationId: string, clientId: string): Promise<boolean> {
  const until = Date.now() + FIRST_WRITE_WAIT_MS;
  for (;;) {
    const { Item } = await deps.doc.send(new GetCommand({ TableName: deps.tables.clients, Key: keys.client(organizationId, clientId), ProjectionExpression: 'id', ConsistentRead: true }));
    if (Item) return true;
    if (Date.now() >= until) return false;
    await new Promise((r) => setTimeout(r, 50));
  }
}
