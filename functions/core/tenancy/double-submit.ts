/**
 * The double-submit guard's slots, as tenancy keeps them (docs/leads.md "Duplicates"): the guard
 * costs no write of its own, it rides on the update that bills a lead (the organization item when
 * prepaid, the day's usage item when postpaid), as eight slots `dh<n>` (body hash), `dc<n>` (client
 * id), `dt<n>` (when), `dr<n>` (the request's claim). Only the wallet store (wallet-store.ts) writes
 * them; this module reads a slot out of an item (plain values) and says what it means, for the
 * store and its in-memory twin alike.
 */

export const DOUBLE_SUBMIT_MS = 10 * 60_000;
/** Slots per billing item: a submission's hash picks one (intake/duplicates.ts submissionGuard). */
export const GUARD_SLOTS = 8;

/** A submission's guard: its hash (key and normalized lead) and the slot it goes to. */
export interface SubmissionGuard { hash: string; slot: number }

/**
 * A bill's claim on its guard slot: the client the submission records (`clientId`: the new one, or
 * the earlier client it merges into) and `token`, unique to the request (its fresh client id, even
 * when it merges), which tells the request's own retried bill, its refund and its adoption by a
 * retry of the caller from any other request.
 */
export interface GuardClaim { guard: SubmissionGuard; clientId: string; token: string; at: number }

/** The identical submission of the last 10 minutes a slot records: its client and its claim (absent on slots written before claims). */
export interface GuardedSubmission { clientId: string; token?: string }

type Item = Record<string, unknown> | undefined;
const str = (v: unknown) => (typeof v === 'string' ? v : undefined);

/** From a billing item (a failed condition's old image), the identical submission of the last 10 minutes, if that is why it failed. */
export function guardedSubmission(old: Item, claim: GuardClaim): GuardedSubmission | undefined {
  const n = claim.guard.slot;
  if (old?.[`dh${n}`] !== claim.guard.hash || Number(old[`dt${n}`] ?? 0) < claim.at - DOUBLE_SUBMIT_MS) return undefined;
  const clientId = str(old[`dc${n}`]);
  const token = str(old[`dr${n}`]);
  return clientId ? { clientId, ...(token ? { token } : {}) } : undefined;
}

/**
 * Whether the guard refused because of this very request's own claim: the SDK retried a bill whose
 * first attempt committed but whose answer was lost. Compared on the request's token, never on the
 * client it names (two identical merges name the same earlier client).
 */
export function ownClaim(old: Item, claim: Pick<GuardClaim, 'guard' | 'token'>): boolean {
  const n = claim.guard.slot;
  return old?.[`dh${n}`] === claim.guard.hash && old[`dr${n}`] === claim.token;
}

/** The claim a retry of the caller takes over from the request `token` whose client was never written (docs/leads.md "Billing"). */
export const adoptedToken = (token: string, by: string) => `${token}+${by}`;

/**
 * What became of a claim: still `held`; `adopted` by a retry of the caller; `released` (its refund
 * already applied: the SDK retried one whose answer was lost); or `taken` over by another submission
 * hashing to the same slot (so the slot says nothing of this refund).
 */
export function claimState(old: Item, guard: SubmissionGuard, token: string): 'held' | 'adopted' | 'released' | 'taken' {
  const n = guard.slot;
  const claim = str(old?.[`dr${n}`]);
  if (claim === token) return 'held';
  if (claim?.startsWith(`${token}+`)) return 'adopted';
  return old?.[`dh${n}`] === undefined ? 'released' : 'taken';
}
