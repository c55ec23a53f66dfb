/**
 * Takes a lead (docs/leads.md; "Duplicates"), once authenticated and rate-limited
 * (handle-lead-request.ts), in named steps: bill the call (tenancy/billing.ts: the prepaid debit
 * or the postpaid count, carrying the double-submit guard's claim) → match it to an earlier client
 * (duplicates.ts) → write the client (clients-store.ts: a new one, flagged as a possible duplicate,
 * or, under the `merge` policy, the submission attached to the earlier one) → answer. A write that
 * fails after its bill is refunded (tenancy gives the claim back with it). The identical submission
 * repeated within 10 minutes is answered as the same client, billed like any call.
 *
 * Write cost (docs/decisions.md "Lead write cost"): no transaction. The bill is one conditional
 * UpdateItem, the client one PutItem (or the merge's UpdateItem) holding its team notification; a
 * failed write costs one more update, its refund. The bill's claim on its guard slot makes the steps
 * after it safe to retry, and lets the caller's retry adopt the bill of a request that died before
 * writing its client.
 */
import { MetricUnit } from '@aws-lambda-powertools/metrics';
import type { Deps } from '../platform/deps.js';
import type { AuthContext } from '../platform/model.js';
import { logger, metrics } from '../platform/observability.js';
import type { Client } from '../platform/crm-fields.js';
import { adoptClaim, adoptedToken, billCall, refundCall, type Call, type GuardClaim, type GuardedSubmission } from '../tenancy/billing.js';
import { clientsStore } from './clients-store.js';
import { clientExists, findEarlierClient, submissionGuard } from './duplicates.js';
import { clientItem, newLeadClient, rowOf, type RequestRow } from './lead-client.js';
import type { LeadInput } from './lead-schema.js';
import { boundedMeta, mergedSubmission, submissionOf, type RequestMeta } from './merge.js';

export type { RequestMeta } from './merge.js';
export { newLeadClient } from './lead-client.js';

/** What a lead came to: a new client, a submission merged into an earlier one, or the repeat of a submission of the last 10 minutes. */
export type LeadOutcome =
  | { kind: 'created'; client: Client<'lead', 'api'>; /** Written under an earlier request's id, whose bill it adopted. */ adopted?: true }
  | { kind: 'merged'; clientId: string }
  | { kind: 'duplicate'; clientId: string };

/** One lead as its steps see it: who sent it, what, the request, its new client, its price and its guard. */
interface Lead { deps: Deps; auth: AuthContext; input: LeadInput; meta: RequestMeta; client: Client<'lead', 'api'>; price: number; day: string }

/**
 * Merged only under the `merge` policy, from a secret key (a page's lead never merges: the page
 * would learn that the person is a client, and anyone could write into a client through it), and
 * only into a client matched by e-mail (a phone is shared by a household: flagged only).
 */
const mayMerge = (auth: AuthContext, via: 'email' | 'phone') => auth.organization.duplicatePolicy === 'merge' && !auth.key.publishable && via === 'email';

export async function createLead(deps: Deps, auth: AuthContext, input: LeadInput, requestMeta: RequestMeta): Promise<LeadOutcome> {
  const meta = boundedMeta(requestMeta);
  const earlier = await findEarlierClient(deps, auth.organization.id, input);
  if (earlier) metrics.addMetric('DuplicateLeadMatches', MetricUnit.Count, 1);
  const merging = earlier && mayMerge(auth, earlier.via) ? earlier.id : undefined;
  const client = newLeadClient(deps, auth, input, meta, earlier && !merging ? earlier.id : undefined);
  const lead: Lead = { deps, auth, input, meta, client, price: priceOf(deps, auth), day: client.created_at.slice(0, 10) };
  // The claim's token is the fresh client id, unique to this request even when it merges.
  const claim: GuardClaim = { guard: submissionGuard(auth.key.keyId, input), clientId: merging ?? client.id, token: client.id, at: deps.now() };
  const call = callOf(lead, client.id);
  const billed = await billCall(deps, { ...call, claim });
  if ('duplicateOf' in billed) return repeated(lead, claim, billed.duplicateOf);
  return paidWrite(lead, { ...call, day: billed.day }, claim, () => (merging ? mergeInto(lead, merging) : putClient(lead, client)));
}

const priceOf = (deps: Deps, auth: AuthContext) => (auth.organization.billing === 'prepaid' ? deps.config.pricePerCallMicros : 0);
const callOf = (lead: Lead, clientId: string): Call => ({ orgId: lead.auth.organization.id, price: lead.price, day: lead.day, clientId });
const row = (lead: Lead): RequestRow => rowOf(lead.auth, lead.meta);

/** The write a bill paid for; refunded when it fails (a call that failed is not billed), the claim released with it. */
async function paidWrite(lead: Lead, call: Call, claim: Pick<GuardClaim, 'guard' | 'token'> | undefined, write: () => Promise<LeadOutcome>): Promise<LeadOutcome> {
  try {
    return await write();
  } catch (error) {
    await refundCall(lead.deps, call, claim);
    throw error;
  }
}

/**
 * A new client's put. Its id is fresh and random, known only to this request and, through its
 * claim, to a retry of the caller that adopted it: an item already there is this lead's own, written
 * by the SDK's retry of a put whose answer was lost or by that retry. So it stands, rather than a 500
 * that would refund the bill the client was paid with, or release the Idempotency-Key and let the
 * caller's retry create the lead a second time.
 */
async function putClient(lead: Lead, client: Client<'lead', 'api'>): Promise<LeadOutcome> {
  if (await clientsStore(lead.deps).putOnce(clientItem(client, row(lead))) === 'existed') {
    logger.info('lead already written under its id (a retried write); it stands', { clientId: client.id });
  }
  return { kind: 'created', client };
}

/** The submission merged into the earlier client; not merged after all (gone: deleted meanwhile; full) it is a new client, flagged when full. */
async function mergeInto(lead: Lead, earlierId: string): Promise<LeadOutcome> {
  const { deps, auth, input, meta, client } = lead;
  const result = await clientsStore(deps).mergeOnce(auth.organization.id, earlierId, mergedSubmission(input, submissionOf(auth, input, meta, client.created_at)));
  if (result === 'merged') {
    metrics.addMetric('LeadsMerged', MetricUnit.Count, 1);
    return { kind: 'merged', clientId: earlierId };
  }
  metrics.addMetric(result === 'gone' ? 'MergeTargetGone' : 'MergeTargetFull', MetricUnit.Count, 1);
  return putClient(lead, result === 'full' ? newLeadClient(deps, auth, input, meta, earlierId) : client);
}

/**
 * The repeat of a submission of the last 10 minutes: billed as a call; answered as that submission's
 * client while it exists. When it does not, and the first request's claim is still held, that request
 * was billed but died before writing its client: this one adopts the claim and writes that client,
 * not billed again (docs/leads.md "Billing"). A released claim (refunded) makes a new client, billed.
 */
async function repeated(lead: Lead, claim: GuardClaim, first: GuardedSubmission): Promise<LeadOutcome> {
  const { deps, auth, price, day } = lead;
  const orgId = auth.organization.id;
  metrics.addMetric('DoubleSubmits', MetricUnit.Count, 1);
  if (!await clientExists(deps, orgId, first.clientId)) {
    // Only a new client's claim (a merge's names its earlier client, which was deleted).
    const adopted = first.token === first.clientId ? await adoptClaim(deps, orgId, { price, day, guard: claim.guard, token: first.token, by: lead.client.id }) : 'released';
    if (adopted === 'adopted') return writeAdopted(lead, claim, first.token!);
    if (adopted === 'released') return writeUnguarded(lead);
    // Another retry adopted it: a duplicate of the client it writes.
  }
  await billCall(deps, { ...callOf(lead, first.clientId), day: new Date(deps.now()).toISOString().slice(0, 10) });
  return { kind: 'duplicate', clientId: first.clientId };
}

/** The client a request that died after its bill never wrote, written under its id by the caller's retry, paid by that bill. */
async function writeAdopted(lead: Lead, claim: GuardClaim, clientId: string): Promise<LeadOutcome> {
  const client = { ...lead.client, id: clientId };
  const outcome = await paidWrite(lead, callOf(lead, clientId), { guard: claim.guard, token: adoptedToken(clientId, lead.client.id) }, () => putClient(lead, client));
  metrics.addMetric('LeadsAdopted', MetricUnit.Count, 1);
  logger.warn('wrote the client of a lead billed by a request that did not write it', { organizationId: lead.auth.organization.id, clientId });
  return outcome.kind === 'created' ? { ...outcome, adopted: true } : outcome;
}

/** A new client without the guard, billed as a call. */
async function writeUnguarded(lead: Lead): Promise<LeadOutcome> {
  const client = newLeadClient(lead.deps, lead.auth, lead.input, lead.meta);
  const fresh = { ...lead, client, day: client.created_at.slice(0, 10) };
  const { day } = await billCall(lead.deps, callOf(fresh, client.id)) as { day: string };
  return paidWrite(fresh, { ...callOf(fresh, client.id), day }, undefined, () => putClient(fresh, client));
}
