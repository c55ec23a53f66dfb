/**
 * Takes a lead (docs/leads.md; docs/leads.md "Duplicates"): a new client (status `lead`) carrying its
 * team notification, or, under the `merge` policy, the submission attached to the earlier client it
 * matches; with the usage counter of the day and, on prepaid organizations, the wallet debit. The
 * identical submission repeated within 10 minutes is answered as the same client (duplicates.ts),
 * and billed like any call.
 *
 * Write cost (docs/decisions.md "Lead write cost"): the notification is part of the client item, so
 * it is atomic with it in a single write. The call is billed first, by one conditional update that
 * also carries the double-submit guard: postpaid, an ADD on the day's usage item; prepaid, the debit
 * of the wallet on the organization item, with the day's usage (a wallet that cannot pay is a 402 and
 * nothing is written). Then the client is written, one PutItem (or the merge's UpdateItem); if that
 * fails, the call is refunded (refund.ts). No transaction: a debit is one UpdateItem, which only
 * conflicts with the once-a-day roll-over transaction (retried here). The bill's claim on its guard
 * slot makes the steps after it safe to retry (docs/decisions.md "Lead write cost").
 */
import { ConditionalCheckFailedException, TransactionCanceledException } from '@aws-sdk/client-dynamodb';
import { MetricUnit } from '@aws-lambda-powertools/metrics';
import { PutCommand, TransactWriteCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import type { AttributeValue } from '@aws-sdk/client-dynamodb';
import type { Deps } from '../platform/deps.js';
import { DomainError, paymentRequired } from '../platform/errors.js';
import { newId, newTimeOrderedId } from '../platform/ids.js';
import { keys, type AuthContext } from '../platform/model.js';
import {
  adoptClause, adoptedToken, claimState, clientExists, findEarlierClient, guardClause, guardedClient, matchKeyOf, ownGuard, submissionGuard,
  type GuardedSubmission, type SubmissionGuard,
} from './duplicates.js';
import { refund } from './refund.js';
import { logger, metrics } from '../platform/observability.js';
import type { Client } from '../platform/crm-fields.js';
import type { LeadInput } from './lead-schema.js';
import { boundedMeta, mergeOnce, mergeWrite, submissionOf, type RequestMeta } from './merge.js';

export type { RequestMeta } from './merge.js';

/** Attempts of the prepaid debit before giving up with a 503 (a conflict with the day's roll-over, the roll-over itself). */
const MAX_ATTEMPTS = 8;
const BACKOFF_BASE_MS = 10;
const BACKOFF_CAP_MS = 400;

/**
 * The client a lead creates, as stored and answered (not written here). The honeypot's fake answer
 * (public-form.ts) is built by the same function, so a bot cannot tell it from a real one.
 */
export function newLeadClient(deps: Deps, auth: AuthContext, input: LeadInput, meta: RequestMeta, duplicateOf?: string): Client<'lead', 'api'> {
  const at = new Date(deps.now()).toISOString();
  const { sms_consent_source: consentSource, ...fields } = input;
  return {
    id: newTimeOrderedId('cli', deps.now()), // time-ordered: the inbox reads the newest clients first (notifications.ts)
    organization_id: auth.organization.id,
    status: 'lead',
    source: 'api',
    ...fields,
    ...(input.sms_consent && consentSource
      ? { sms_consent_proof: { source: consentSource, captured_at: at, ip: meta.ip, user_agent: meta.userAgent, key_id: auth.key.keyId } }
      : {}),
    ...(duplicateOf ? { possible_duplicate_of: duplicateOf } : {}),
    submission_count: 1,
    created_at: at,
    updated_at: at,
  };
}

/** What a lead came to: a new client, a submission merged into an earlier one, or the repeat of a submission of the last 10 minutes. */
export type LeadOutcome =
  | { kind: 'created'; client: Client<'lead', 'api'> }
  | { kind: 'merged'; clientId: string }
  | { kind: 'duplicate'; clientId: string };

/**
 * Merged only under the `merge` policy, from a secret key (a page's lead never merges: the page
 * would learn that the person is a client, and anyone could write into a client through it), and
 * only into a client matched by e-mail (a phone is shared by a household: flagged only).
 */
const mayMerge = (auth: AuthContext, via: 'email' | 'phone') => auth.organization.duplicatePolicy === 'merge' && !auth.key.publishable && via === 'email';

export async function createLead(deps: Deps, auth: AuthContext, input: LeadInput, requestMeta: RequestMeta): Promise<LeadOutcome> {
  const org = auth.organization;
  const now = deps.now();
  const meta = boundedMeta(requestMeta);
  const guard = submissionGuard(auth.key.keyId, input);
  const earlier = await findEarlierClient(deps, org.id, input);
  if (earlier) metrics.addMetric('DuplicateLeadMatches', MetricUnit.Count, 1);
  const merging = earlier && mayMerge(auth, earlier.via) ? earlier.id : undefined;
  const client = newLeadClient(deps, auth, input, meta, earlier && !merging ? earlier.id : undefined);
  const price = priceOf(deps, auth);
  const day = client.created_at.slice(0, 10);
  const created = createWrite(deps, client, rowOf(auth, meta));
  // The claim's token is the fresh client id, unique to this request even when it merges.
  const guarded: Guarded = { guard, targetId: merging ?? client.id, token: client.id, now };
  // Not merged after all: gone (deleted meanwhile) is a new client; full (or too large) a new one flagged as its duplicate.
  const instead = (result: 'gone' | 'full') => {
    metrics.addMetric(result === 'gone' ? 'MergeTargetGone' : 'MergeTargetFull', MetricUnit.Count, 1);
    const other = result === 'full' ? newLeadClient(deps, auth, input, meta, merging) : client;
    return { client: other, ...createWrite(deps, other, rowOf(auth, meta)) };
  };

  const billed = await bill(deps, org.id, price, day, client.id, guarded);
  if ('duplicateOf' in billed) return duplicateOf(deps, auth, input, meta, billed.duplicateOf, { guard, client, day, row: rowOf(auth, meta) });
  try {
    if (merging) {
      const result = await mergeOnce(deps, mergeWrite(deps, org.id, merging, input, submissionOf(auth, input, meta, client.created_at)));
      if (result === 'merged') return merged(merging)!;
      const other = instead(result);
      await putOnce(deps, other.write.Put);
      return { kind: 'created', client: other.client };
    }
    await putOnce(deps, created.write.Put);
  } catch (error) {
    // Billed before the write (for the guard): a call that failed is not billed.
    await refund(deps, { orgId: org.id, price, day: billed.day, clientId: client.id }, { guard, token: client.id });
    throw error;
  }
  return { kind: 'created', client };
}

const priceOf = (deps: Deps, auth: AuthContext) => (auth.organization.billing === 'prepaid' ? deps.config.pricePerCallMicros : 0);

const merged = (clientId: string | undefined): LeadOutcome | undefined => {
  if (!clientId) return undefined;
  metrics.addMetric('LeadsMerged', MetricUnit.Count, 1);
  return { kind: 'merged', clientId };
};

/** A submission's guard and the client it records (duplicates.ts). */
interface Guarded { guard: SubmissionGuard; targetId: string; token: string; now: number }

/** What a repeated submission's request would have created: its guard, its new client, the day it is billed in, its request-log row. */
interface Repeat { guard: SubmissionGuard; client: Client<'lead', 'api'>; day: string; row?: RequestRow }

/**
 * The repeat of a submission of the last 10 minutes: billed as a call; answered as that submission's
 * client while it exists. When it does not, and the first request's claim is still held, that request
 * was billed but died before writing its client: this one adopts the claim and writes that client,
 * not billed again (docs/leads.md "Billing"). A released claim (refunded) makes a new client, billed.
 */
async function duplicateOf(deps: Deps, auth: AuthContext, input: LeadInput, meta: RequestMeta, first: GuardedSubmission, repeat: Repeat): Promise<LeadOutcome> {
  const org = auth.organization;
  const price = priceOf(deps, auth);
  metrics.addMetric('DoubleSubmits', MetricUnit.Count, 1);
  if (!await clientExists(deps, org.id, first.clientId)) {
    // Only a new client's claim (a merge's names its earlier client, which was deleted).
    const adopted = first.token === first.clientId ? await adopt(deps, org.id, price, repeat, first.token) : 'released';
    if (adopted === 'adopted') return createAdopted(deps, org.id, price, repeat, first.token!);
    if (adopted === 'released') return createUnguarded(deps, auth, input, meta);
    // Another retry adopted it: a duplicate of the client it writes.
  }
  await bill(deps, org.id, price, new Date(deps.now()).toISOString().slice(0, 10), first.clientId);
  return { kind: 'duplicate', clientId: first.clientId };
}

/** Takes over the claim `token` for the repeat (its own client id names it), unless it was refunded (`released`) or adopted by another. */
async function adopt(deps: Deps, orgId: string, price: number, repeat: Repeat, token: string): Promise<'adopted' | 'released' | 'other'> {
  const clause = adoptClause(repeat.guard, token, repeat.client.id);
  try {
    await deps.doc.send(new UpdateCommand({
      TableName: deps.tables.organizations,
      Key: price > 0 ? keys.org(orgId) : keys.usage(orgId, repeat.day),
      UpdateExpression: `SET ${clause.set}`,
      ConditionExpression: clause.condition,
      ExpressionAttributeValues: clause.values,
      ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
    }));
    return 'adopted';
  } catch (error) {
    if (!(error instanceof ConditionalCheckFailedException)) throw error;
    const state = claimState(error.Item, repeat.guard, token);
    // The SDK's retry of this adoption, its answer lost: adopted by this request.
    if (state === 'adopted') return error.Item?.[`dr${repeat.guard.slot}`]?.S === adoptedToken(token, repeat.client.id) ? 'adopted' : 'other';
    // Released (refunded), or taken by another submission (the first request's refund then credits without the slot): bill this one.
    return 'released';
  }
}

/** The client a request that died after its bill never wrote, written under its id by the caller's retry, paid by that bill. */
async function createAdopted(deps: Deps, orgId: string, price: number, repeat: Repeat, clientId: string): Promise<LeadOutcome> {
  const client = { ...repeat.client, id: clientId };
  try {
    await putOnce(deps, createWrite(deps, client, repeat.row).write.Put);
  } catch (error) {
    await refund(deps, { orgId, price, day: repeat.day, clientId }, { guard: repeat.guard, token: adoptedToken(clientId, repeat.client.id) });
    throw error;
  }
  metrics.addMetric('LeadsAdopted', MetricUnit.Count, 1);
  logger.warn('wrote the client of a lead billed by a request that did not write it', { organizationId: orgId, clientId });
  return { kind: 'created', client };
}

/** A new client without the guard, counted and billed as a call. */
async function createUnguarded(deps: Deps, auth: AuthContext, input: LeadInput, meta: RequestMeta): Promise<LeadOutcome> {
  const org = auth.organization;
  const client = newLeadClient(deps, auth, input, meta);
  const { write } = createWrite(deps, client, rowOf(auth, meta));
  const price = priceOf(deps, auth);
  const { day } = await bill(deps, org.id, price, client.created_at.slice(0, 10), client.id) as { day: string };
  try {
    await putOnce(deps, write.Put);
  } catch (error) {
    await refund(deps, { orgId: org.id, price, day, clientId: client.id });
    throw error;
  }
  return { kind: 'created', client };
}

/**
 * What a created client holds of the request that created it, when it stands for that request's
 * row in the request log (docs/settings.md "Request log"): its time is `created_at`. Named as a
 * merged submission's are; never in event payloads (events/public-objects.ts lists what is).
 */
type RequestRow = { request_id: string; key_id: string; request_status?: number };
const rowOf = (auth: AuthContext, meta: RequestMeta): RequestRow =>
  ({ request_id: meta.requestId, key_id: auth.key.keyId, ...(meta.rowStatus !== undefined && meta.rowStatus !== 201 ? { request_status: meta.rowStatus } : {}) });

/** The put of a new client. */
function createWrite(deps: Deps, client: Client<'lead', 'api'>, row: RequestRow | undefined): { write: { Put: NonNullable<PutCommand['input']> } } {
  const name = [client.first_name, client.last_name].filter(Boolean).join(' ');
  const notification = { id: newId('ntf'), type: 'lead.created', title: `New lead: ${name}`, createdAt: client.created_at };
  const matchKey = matchKeyOf(client.organization_id, client);
  const item = {
    ...keys.client(client.organization_id, client.id),
    entity: 'client',
    ...client,
    ...(matchKey ? { matchKey } : {}),
    ...row,
    // No submission list: the client's own fields and consent proof are its first submission.
    // The team notification is part of the client item: one write, so never one without the other.
    notification,
  };
  return { write: { Put: { TableName: deps.tables.clients, Item: item, ConditionExpression: 'attribute_not_exists(pk)' } } };
}

/**
 * A new client's write. Its id is fresh and random, known only to this request and, through its
 * claim, to a retry of the caller that adopted it (duplicateOf): an item already there is this lead's
 * own, written by the SDK's retry of a put whose answer was lost or by that retry. So a failed
 * condition is a success, not a 500 that would refund the debit the client was paid with, or release
 * the Idempotency-Key and let the caller's retry create the lead a second time.
 */
async function putOnce(deps: Deps, put: PutCommand['input']): Promise<void> {
  try {
    await deps.doc.send(new PutCommand(put));
  } catch (error) {
    if (!(error instanceof ConditionalCheckFailedException)) throw error;
    logger.info('lead already written under its id (a retried write); it stands', { clientId: put.Item?.id as string });
  }
}

/**
 * Postpaid usage: a plain ADD of `calls` on the day's item, which never conflicts; with `guard`, conditioned
 * on the submission not repeating one of the last 10 minutes (whose client is then returned). A
 * failure other than that is logged, not answered: the lead goes on without the guard.
 */
async function countUsage(deps: Deps, orgId: string, day: string, clientId: string, guarded?: Guarded): Promise<GuardedSubmission | undefined> {
  const guard = guarded && guardClause(guarded.guard, guarded.targetId, guarded.token, guarded.now);
  try {
    await deps.doc.send(new UpdateCommand({
      TableName: deps.tables.organizations,
      Key: keys.usage(orgId, day),
      UpdateExpression: `ADD calls :one, billed_micros :zero SET entity = :entity${guard ? `, ${guard.set}` : ''}`,
      ...(guard ? { ConditionExpression: guard.condition, ReturnValuesOnConditionCheckFailure: 'ALL_OLD' as const } : {}),
      ExpressionAttributeValues: { ':one': 1, ':zero': 0, ':entity': 'usage', ...guard?.values },
    }));
  } catch (error) {
    if (guarded && error instanceof ConditionalCheckFailedException) {
      if (ownGuard(error.Item, guarded.guard, guarded.token)) return undefined; // counted by the first attempt
      return guardedClient(error.Item, guarded.guard, guarded.now);
    }
    // The lead goes on unbilled: an alarm's metric.
    metrics.addMetric('LeadUsageCountFailed', MetricUnit.Count, 1);
    logger.error('could not count usage of a lead', { organizationId: orgId, clientId, day, calls: 1, error: (error as Error).name });
  }
  return undefined;
}

/**
 * Bills a call before its write: postpaid, counts it (countUsage); prepaid (`price` > 0), debits it.
 * Answers the day it was counted in, or the client the guarded submission repeats.
 */
async function bill(deps: Deps, orgId: string, price: number, day: string, clientId: string, guarded?: Guarded): Promise<{ day: string } | { duplicateOf: GuardedSubmission }> {
  if (price > 0) return debit(deps, orgId, price, day, guarded);
  const repeated = await countUsage(deps, orgId, day, clientId, guarded);
  return repeated ? { duplicateOf: repeated } : { day };
}

/**
 * The prepaid debit: one conditional update of the organization item that takes the price from the
 * wallet and counts the day (usageDay / usageCalls / usageBilledMicros), carrying the guard. The
 * day's counters are conditioned on usageDay, so the first lead of a day closes the previous day
 * first (openUsageDay). A wallet that cannot pay is a 402, with nothing written.
 */
async function debit(deps: Deps, orgId: string, price: number, today: string, guarded?: Guarded): Promise<{ day: string } | { duplicateOf: GuardedSubmission }> {
  let day = today;
  const guard = guarded && guardClause(guarded.guard, guarded.targetId, guarded.token, guarded.now);
  for (let attempt = 1; ; attempt++) {
    try {
      await deps.doc.send(new UpdateCommand({
        TableName: deps.tables.organizations,
        Key: keys.org(orgId),
        UpdateExpression: `SET walletMicros = walletMicros - :price${guard ? `, ${guard.set}` : ''} ADD usageCalls :one, usageBilledMicros :price`,
        ConditionExpression: `walletMicros >= :price AND usageDay = :day${guard ? ` AND ${guard.condition}` : ''}`,
        ExpressionAttributeValues: { ':price': price, ':one': 1, ':day': day, ...guard?.values },
        ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
      }));
      return { day };
    } catch (error) {
      if (error instanceof ConditionalCheckFailedException && error.Item) {
        const old = error.Item;
        // The SDK's retry of a debit whose first attempt committed (its answer lost): debited once.
        if (guarded && ownGuard(old, guarded.guard, guarded.token)) return { day };
        const repeated = guarded && guardedClient(old, guarded.guard, guarded.now);
        if (repeated) return { duplicateOf: repeated };
        if (Number(old.walletMicros?.N ?? 0) < price) {
          throw paymentRequired(`The prepaid wallet cannot pay for this call (${price / 1_000_000} USD). Top it up to keep receiving leads.`);
        }
        const openDay = old.usageDay?.S;
        // Another container's clock already opened a later day: count there rather than reopen ours.
        if (openDay && openDay > day) day = openDay;
        else await openUsageDay(deps, orgId, old, day);
      } else if ((error as Error).name === 'TransactionConflictException') {
        // The item is in the day roll-over's transaction; the SDK does not retry this. Counted, so a
        // dashboard shows it.
        metrics.addMetric('TransactionConflictRetries', MetricUnit.Count, 1);
        logger.warn('lead debit conflicted; retrying', { organizationId: orgId, attempt });
        await backoff(attempt);
      } else {
        throw error;
      }
      if (attempt >= MAX_ATTEMPTS) {
        logger.error('lead debit kept conflicting', { organizationId: orgId, attempts: attempt });
        throw new DomainError(503, 'busy', 'Service unavailable', 'Too many concurrent writes for this organization; retry shortly.', { headers: { 'Retry-After': '1' } });
      }
    }
  }
}

/** Full jitter: a random wait up to an exponentially growing cap, so conflicting writers spread out. */
const backoff = (attempt: number) =>
  new Promise((r) => setTimeout(r, Math.random() * Math.min(BACKOFF_CAP_MS, BACKOFF_BASE_MS * 2 ** attempt)));

/**
 * Moves the organization item's counters of a finished day to that day's usage item and opens
 * `day`, in one transaction conditioned on the counters just read, so no debit is lost. Once a day
 * per prepaid organization. A cancellation means another request moved first; the caller retries.
 */
async function openUsageDay(deps: Deps, orgId: string, old: Record<string, AttributeValue>, day: string): Promise<void> {
  const closing = old.usageDay?.S;
  const calls = Number(old.usageCalls?.N ?? 0);
  const billed = Number(old.usageBilledMicros?.N ?? 0);
  // Organizations created before the ORGINDEX item carry the index keys themselves, so each debit
  // would also write gsi1: move them to the index item now, once.
  const legacyIndex = old.gsi1pk?.S !== undefined && old.createdAt?.S !== undefined;
  try {
    await deps.doc.send(new TransactWriteCommand({
      TransactItems: [
        {
          Update: {
            TableName: deps.tables.organizations,
            Key: keys.org(orgId),
            UpdateExpression: `SET usageDay = :day, usageCalls = :zero, usageBilledMicros = :zero${legacyIndex ? ' REMOVE gsi1pk, gsi1sk' : ''}`,
            ConditionExpression: closing
              ? 'usageDay = :closing AND usageCalls = :calls AND usageBilledMicros = :billed'
              : 'attribute_exists(pk) AND attribute_not_exists(usageDay)',
            ExpressionAttributeValues: { ':day': day, ':zero': 0, ...(closing ? { ':closing': closing, ':calls': calls, ':billed': billed } : {}) },
          },
        },
        ...(closing && calls > 0
          ? [{
              Update: {
                TableName: deps.tables.organizations,
                Key: keys.usage(orgId, closing),
                UpdateExpression: 'ADD calls :calls, billed_micros :billed SET entity = :entity',
                ExpressionAttributeValues: { ':calls': calls, ':billed': billed, ':entity': 'usage' },
              },
            }]
          : []),
        ...(legacyIndex
          ? [{ Put: { TableName: deps.tables.organizations, Item: { ...keys.orgIndexItem(orgId), ...keys.orgIndex(old.createdAt!.S!, orgId), entity: 'organization_index', id: orgId } } }]
          : []),
      ],
    }));
  } catch (error) {
    if (!(error instanceof TransactionCanceledException)) throw error;
  }
}
