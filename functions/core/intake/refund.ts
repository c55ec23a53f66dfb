/**
 * The refund of a lead call billed before a client write that then failed (docs/leads.md "Billing";
 * docs/decisions.md "Lead write cost"): postpaid, the day's count taken back; prepaid, the wallet
 * credited and the day's count taken back where it now lies (the organization item, or the day's
 * usage item once the day was closed).
 *
 * A guarded bill's refund is conditioned on its claim (duplicates.ts): it gives the slot back in the
 * same update, so the SDK's retry of a refund whose answer was lost finds the slot released and
 * credits nothing, and a refund whose claim a retry of the caller adopted (that retry writes the
 * client this debit paid for) gives nothing back.
 */
import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import { MetricUnit } from '@aws-lambda-powertools/metrics';
import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import type { Deps } from '../platform/deps.js';
import { keys } from '../platform/model.js';
import { logger, metrics } from '../platform/observability.js';
import { claimState, releaseClause, type SubmissionGuard } from './duplicates.js';

/** The slot a request's bill holds: its guard and its claim's token. */
export interface Claim { guard: SubmissionGuard; token: string }

interface Refunded { orgId: string; price: number; day: string; clientId: string }

/**
 * Gives back a billed call. Never throws: a refund that cannot be written is logged with its amount
 * and counted (`LeadRefundFailed`; postpaid, `LeadUsageCountFailed`), for a hand refund; a prepaid refund across the day's roll-over
 * whose wallet credit landed but whose usage take-back did not is logged with exactly that
 * take-back and counted as `LeadUsageCountFailed` (the wallet is right).
 */
export async function refund(deps: Deps, { orgId, price, day, clientId }: Refunded, claim?: Claim): Promise<void> {
  const prepaid = price > 0;
  let open = prepaid; // prepaid: the day's count is still on the organization item
  let held = claim;
  try {
    for (;;) {
      try {
        await deps.doc.send(new UpdateCommand(give(deps, orgId, price, day, open, held)));
        break;
      } catch (error) {
        if (!(error instanceof ConditionalCheckFailedException)) throw error;
        const state = held ? claimState(error.Item, held.guard, held.token) : 'held';
        if (state === 'adopted') {
          logger.info('a lead\'s debit was adopted by the caller\'s retry, which writes its client: not refunded', { organizationId: orgId, clientId });
          return;
        }
        if (state === 'released') break; // the SDK's retry of this refund: the first attempt applied
        if (state === 'taken') held = undefined; // another submission has the slot: refund without it
        else if (open && error.Item?.usageDay?.S !== day) open = false; // the day was closed meanwhile
        else throw error;
      }
    }
  } catch (error) {
    if (prepaid) {
      metrics.addMetric('LeadRefundFailed', MetricUnit.Count, 1);
      logger.error('could not refund a lead whose write failed', { organizationId: orgId, clientId, micros: price, day, error: (error as Error).name });
    } else {
      metrics.addMetric('LeadUsageCountFailed', MetricUnit.Count, 1);
      logger.error('could not count usage of a lead', { organizationId: orgId, clientId, day, calls: -1, error: (error as Error).name });
    }
    return;
  }
  if (!prepaid || open) return;
  // The day was closed: its counts moved to its usage item.
  try {
    await deps.doc.send(new UpdateCommand({
      TableName: deps.tables.organizations,
      Key: keys.usage(orgId, day),
      UpdateExpression: 'ADD calls :minusOne, billed_micros :minusPrice',
      ExpressionAttributeValues: { ':minusOne': -1, ':minusPrice': -price },
    }));
  } catch (error) {
    metrics.addMetric('LeadUsageCountFailed', MetricUnit.Count, 1);
    logger.error('refunded a lead\'s debit but not its usage count', { organizationId: orgId, clientId, day, calls: 1, micros: price, error: (error as Error).name });
  }
}

/**
 * The refund's update: the wallet credit (prepaid) and the count taken back (postpaid: the day's
 * usage item; prepaid: the organization item while `open`), with the claim's slot given back.
 */
function give(deps: Deps, orgId: string, price: number, day: string, open: boolean, claim?: Claim): NonNullable<UpdateCommand['input']> {
  const release = claim && releaseClause(claim.guard, claim.token);
  const prepaid = price > 0;
  const values: Record<string, unknown> = { ...release?.values };
  const parts: string[] = [];
  const conditions: string[] = [];
  if (prepaid) {
    parts.push('SET walletMicros = walletMicros + :price');
    values[':price'] = price;
  }
  if (!prepaid) {
    parts.push('ADD calls :minusOne');
    values[':minusOne'] = -1;
  } else if (open) {
    parts.push('ADD usageCalls :minusOne, usageBilledMicros :minusPrice');
    conditions.push('usageDay = :day');
    Object.assign(values, { ':minusOne': -1, ':minusPrice': -price, ':day': day });
  }
  if (release) {
    parts.push(`REMOVE ${release.remove}`);
    conditions.push(release.condition);
  }
  return {
    TableName: deps.tables.organizations,
    Key: prepaid ? keys.org(orgId) : keys.usage(orgId, day),
    UpdateExpression: parts.join(' '),
    ...(conditions.length ? { ConditionExpression: conditions.join(' AND '), ReturnValuesOnConditionCheckFailure: 'ALL_OLD' as const } : {}),
    ExpressionAttributeValues: values,
  };
}
