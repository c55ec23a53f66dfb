/**
 * Billing a lead call (docs/leads.md "Billing"; docs/decisions.md "Lead write cost"): what intake
 * asks of tenancy, which owns the wallet, the day's usage, the double-submit guard that rides on
 * them, and refunds. Each step is one operation of the wallet store (wallet-store.ts); this module
 * adds what the answer needs: the 402 of a wallet that cannot pay, the retry of a debit that met
 * the day's roll-over (503 past it), and the logs and metrics of a count or refund that failed.
 */
import { MetricUnit } from '@aws-lambda-powertools/metrics';
import type { Deps } from '../platform/deps.js';
import { DomainError, paymentRequired } from '../platform/errors.js';
import { logger, metrics } from '../platform/observability.js';
import { BACKOFFS, retry } from '../platform/retry.js';
import type { GuardClaim, SubmissionGuard } from './double-submit.js';
import { walletStore, WriteConflict, type Billed } from './wallet-store.js';

export type { Billed } from './wallet-store.js';
export { DOUBLE_SUBMIT_MS, GUARD_SLOTS, adoptedToken, type GuardClaim, type GuardedSubmission, type SubmissionGuard } from './double-submit.js';

/** Tries of a prepaid debit before the 503 (each retry after a conflict with the day's roll-over). */
export const DEBIT_ATTEMPTS = 8;

/** A call to bill: its price (0: postpaid, counted only), the day it falls in, the client it is for (logs), its guard claim. */
export interface Call { orgId: string; price: number; day: string; clientId: string; claim?: GuardClaim }

const busy = () => new DomainError(503, 'busy', 'Service unavailable', 'Too many concurrent writes for this organization; retry shortly.', { headers: { 'Retry-After': '1' } });

/**
 * Bills a call before its write: prepaid, debits it (a 402 when the wallet cannot pay, with
 * nothing written); postpaid, counts it (a failed count is logged and counted, and the lead goes
 * on unbilled: an alarm's metric). Answers the day it was counted in, or the earlier submission of
 * the last 10 minutes the claim repeats.
 */
export async function billCall(deps: Deps, { orgId, price, day, clientId, claim }: Call): Promise<Billed> {
  const wallet = walletStore(deps);
  if (price <= 0) {
    try {
      return await wallet.countUsage(orgId, { day, claim });
    } catch (error) {
      metrics.addMetric('LeadUsageCountFailed', MetricUnit.Count, 1);
      logger.error('could not count usage of a lead', { organizationId: orgId, clientId, day, calls: 1, error: (error as Error).name });
      return { day };
    }
  }
  const debited = await retry(() => wallet.debitWallet(orgId, { price, day, claim }), {
    backoff: BACKOFFS.leadWrite,
    attempts: DEBIT_ATTEMPTS,
    shouldRetry: (error) => error instanceof WriteConflict,
    onRetry: (_error, attempt) => {
      // The SDK does not retry a conflict with the roll-over's transaction; counted, so a dashboard shows it.
      metrics.addMetric('TransactionConflictRetries', MetricUnit.Count, 1);
      logger.warn('lead debit conflicted; retrying', { organizationId: orgId, attempt });
    },
  }).catch((error: unknown) => {
    if (!(error instanceof WriteConflict)) throw error;
    logger.error('lead debit kept conflicting', { organizationId: orgId, attempts: DEBIT_ATTEMPTS });
    throw busy();
  });
  if ('short' in debited) throw paymentRequired(`The prepaid wallet cannot pay for this call (${price / 1_000_000} USD). Top it up to keep receiving leads.`);
  return debited;
}

/**
 * Gives back a billed call whose write failed, releasing its claim. Never throws: a refund that
 * cannot be written is logged with its amount and counted (`LeadRefundFailed`; postpaid,
 * `LeadUsageCountFailed`), for a hand refund; a prepaid refund across the day's roll-over whose
 * wallet credit landed but whose usage take-back did not is logged with exactly that take-back and
 * counted as `LeadUsageCountFailed` (the wallet is right). A claim a retry of the caller adopted
 * gives nothing back: that retry writes the client this debit paid for.
 */
export async function refundCall(deps: Deps, { orgId, price, day, clientId }: Call, claim?: { guard: SubmissionGuard; token: string }): Promise<void> {
  let refunded;
  try {
    refunded = await walletStore(deps).refundCall(orgId, { price, day, claim });
  } catch (error) {
    if (price > 0) {
      metrics.addMetric('LeadRefundFailed', MetricUnit.Count, 1);
      logger.error('could not refund a lead whose write failed', { organizationId: orgId, clientId, micros: price, day, error: (error as Error).name });
    } else {
      metrics.addMetric('LeadUsageCountFailed', MetricUnit.Count, 1);
      logger.error('could not count usage of a lead', { organizationId: orgId, clientId, day, calls: -1, error: (error as Error).name });
    }
    return;
  }
  if (refunded.outcome === 'adopted') {
    logger.info('a lead\'s debit was adopted by the caller\'s retry, which writes its client: not refunded', { organizationId: orgId, clientId });
  } else if (refunded.outcome === 'usage-owed') {
    metrics.addMetric('LeadUsageCountFailed', MetricUnit.Count, 1);
    logger.error('refunded a lead\'s debit but not its usage count', { organizationId: orgId, clientId, day, calls: 1, micros: price, error: refunded.error });
  }
}

/**
 * Takes over the claim `token` of a request that was billed and died before writing its client,
 * for the caller's retry whose own client id is `by` (docs/leads.md "Billing"): `released` when it
 * was refunded (or taken by another submission), `other` when another retry adopted it.
 */
export const adoptClaim = (deps: Deps, orgId: string, adoption: { price: number; day: string; guard: SubmissionGuard; token: string; by: string }) =>
  walletStore(deps).adoptClaim(orgId, { prepaid: adoption.price > 0, day: adoption.day, guard: adoption.guard, token: adoption.token, by: adoption.by });
