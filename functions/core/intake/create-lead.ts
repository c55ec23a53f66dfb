/**
 * Creates a lead (DESIGN §6, §9): the client (status `lead`) carrying its team notification, the
 * usage counter of the day and, on prepaid organizations, the wallet debit.
 *
 * Write cost (docs/decisions.md "Lead write cost"): the notification is part of the client item, so
 * it is atomic with it in a single write. Postpaid: one PutItem, then a plain ADD on the day's usage
 * item (no transaction, nothing to conflict). Prepaid: one transaction of exactly what must be
 * atomic, the client and the organization item, whose one update debits the wallet and counts the
 * day's usage; a wallet that cannot pay is a 402 and nothing is written. Transactions on the hot
 * organization item can be cancelled with `TransactionConflict`, which the SDK does not retry: they
 * are retried here with full jitter, a bounded number of times.
 */
import { ConditionalCheckFailedException, TransactionCanceledException, type CancellationReason } from '@aws-sdk/client-dynamodb';
import { MetricUnit } from '@aws-lambda-powertools/metrics';
import { PutCommand, TransactWriteCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import type { Deps } from '../platform/deps.js';
import { DomainError, paymentRequired } from '../platform/errors.js';
import { newId, newTimeOrderedId } from '../platform/ids.js';
import { keys, type AuthContext } from '../platform/model.js';
import { logger, metrics } from '../platform/observability.js';
import type { Client } from '../platform/crm-fields.js';
import type { LeadInput } from './lead-schema.js';

export interface RequestMeta { requestId: string; ip?: string; userAgent?: string }

/** Attempts of the prepaid transaction before giving up with a 503 (conflicts, day roll-over). */
const MAX_ATTEMPTS = 8;
const BACKOFF_BASE_MS = 10;
const BACKOFF_CAP_MS = 400;

/**
 * The client a lead creates, as stored and answered (not written here). The honeypot's fake answer
 * (public-form.ts) is built by the same function, so a bot cannot tell it from a real one.
 */
export function newLeadClient(deps: Deps, auth: AuthContext, input: LeadInput, meta: RequestMeta): Client<'lead', 'api'> {
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
    created_at: at,
    updated_at: at,
  };
}

export async function createLead(deps: Deps, auth: AuthContext, input: LeadInput, meta: RequestMeta): Promise<Client<'lead', 'api'>> {
  const org = auth.organization;
  const client = newLeadClient(deps, auth, input, meta);
  const at = client.created_at;
  const name = [client.first_name, client.last_name].filter(Boolean).join(' ');
  const item = {
    ...keys.client(org.id, client.id),
    entity: 'client',
    ...client,
    // The team notification is part of the client item: one write, so never one without the other.
    notification: { id: newId('ntf'), type: 'lead.created', title: `New lead: ${name}`, createdAt: at },
  };
  const put = { TableName: deps.tables.clients, Item: item, ConditionExpression: 'attribute_not_exists(pk)' };
  const price = org.billing === 'prepaid' ? deps.settings.pricePerCallMicros : 0;

  if (price === 0) {
    await putOnce(deps, put, item.notification.id);
    await countUsage(deps, org.id, at.slice(0, 10), client.id);
    return client;
  }
  await debitAndWrite(deps, org.id, put, price, at.slice(0, 10));
  return client;
}

/**
 * The postpaid client write. When the SDK retries a put that committed but whose answer was lost,
 * the retry fails its own condition: the item is then this request's (the id is fresh and random;
 * the notification id, also fresh, proves it), so it is a success, not a 500 that would release the
 * Idempotency-Key and let the caller's retry create the lead a second time.
 */
async function putOnce(deps: Deps, put: PutCommand['input'], token: string): Promise<void> {
  try {
    await deps.doc.send(new PutCommand({ ...put, ReturnValuesOnConditionCheckFailure: 'ALL_OLD' }));
  } catch (error) {
    const old = error instanceof ConditionalCheckFailedException ? error.Item : undefined;
    if (old?.notification?.M?.id?.S !== token) throw error;
    logger.info('lead write retried after a lost answer; the first write stands', { clientId: put.Item?.id as string });
  }
}

/** Postpaid usage: a plain ADD, which never conflicts. The lead exists by now, so a failure is logged, not answered. */
async function countUsage(deps: Deps, orgId: string, day: string, clientId: string): Promise<void> {
  try {
    await deps.doc.send(new UpdateCommand({
      TableName: deps.tables.organizations,
      Key: keys.usage(orgId, day),
      UpdateExpression: 'ADD calls :one, billed_micros :zero SET entity = :entity',
      ExpressionAttributeValues: { ':one': 1, ':zero': 0, ':entity': 'usage' },
    }));
  } catch (error) {
    logger.error('could not count usage of a created lead', { organizationId: orgId, clientId, error: (error as Error).name });
  }
}

/**
 * The prepaid transaction: the client put and one update of the organization item that debits the
 * wallet and counts the day (usageDay / usageCalls / usageBilledMicros). The day's counters are
 * conditioned on usageDay, so the first lead of a day closes the previous day first (openUsageDay).
 */
async function debitAndWrite(deps: Deps, orgId: string, put: PutCommand['input'], price: number, today: string): Promise<void> {
  let day = today;
  for (let attempt = 1; ; attempt++) {
    try {
      await deps.doc.send(new TransactWriteCommand({
        TransactItems: [
          { Put: put },
          {
            Update: {
              TableName: deps.tables.organizations,
              Key: keys.org(orgId),
              UpdateExpression: 'SET walletMicros = walletMicros - :price ADD usageCalls :one, usageBilledMicros :price',
              ConditionExpression: 'walletMicros >= :price AND usageDay = :day',
              ExpressionAttributeValues: { ':price': price, ':one': 1, ':day': day },
              ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
            },
          },
        ],
      }));
      return;
    } catch (error) {
      if (!(error instanceof TransactionCanceledException)) throw error;
      const reasons = error.CancellationReasons ?? [];
      const orgReason = reasons[1];
      if (orgReason?.Code === 'ConditionalCheckFailed' && orgReason.Item) {
        const old = orgReason.Item;
        if (Number(old.walletMicros?.N ?? 0) < price) {
          throw paymentRequired(`The prepaid wallet cannot pay for this call (${price / 1_000_000} USD). Top it up to keep receiving leads.`);
        }
        const openDay = old.usageDay?.S;
        // Another container's clock already opened a later day: count there rather than reopen ours.
        if (openDay && openDay > day) day = openDay;
        else await openUsageDay(deps, orgId, old, day);
      } else if (!reasons.some(isConflict)) {
        throw error;
      } else {
        // Counted so an alarm or a dashboard shows a hot organization before leads start failing.
        metrics.addMetric('TransactionConflictRetries', MetricUnit.Count, 1);
        logger.warn('lead transaction conflicted; retrying', { organizationId: orgId, attempt });
        await backoff(attempt);
      }
      if (attempt >= MAX_ATTEMPTS) {
        logger.error('lead transaction kept conflicting', { organizationId: orgId, attempts: attempt });
        throw new DomainError(503, 'busy', 'Service unavailable', 'Too many concurrent writes for this organization; retry shortly.', { headers: { 'Retry-After': '1' } });
      }
    }
  }
}

const isConflict = (r: CancellationReason) => r.Code === 'TransactionConflict';

/** Full jitter: a random wait up to an exponentially growing cap, so conflicting writers spread out. */
const backoff = (attempt: number) =>
  new Promise((r) => setTimeout(r, Math.random() * Math.min(BACKOFF_CAP_MS, BACKOFF_BASE_MS * 2 ** attempt)));

/**
 * Moves the organization item's counters of a finished day to that day's usage item and opens
 * `day`, in one transaction conditioned on the counters just read, so no debit is lost. Once a day
 * per prepaid organization. A cancellation means another request moved first; the caller retries.
 */
async function openUsageDay(deps: Deps, orgId: string, old: NonNullable<CancellationReason['Item']>, day: string): Promise<void> {
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
