/**
 * The wallet store: the organizations table's billing items, the only module that writes them
 * (docs/decisions.md "Stores of the organizations table"). What it keeps:
 * - the prepaid wallet (`walletMicros`) and the open day's counts (`usageDay`, `usageCalls`,
 *   `usageBilledMicros`) on the organization item, next to the wallet they are debited with;
 * - the `USAGE#<day>` items: postpaid counts, and the closed days of prepaid organizations;
 * - the double-submit guard's slots `dh/dc/dt/dr<n>` (double-submit.ts), which ride on the update
 *   that bills a call, so the guard costs no write of its own.
 *
 * No transaction on the lead path (docs/decisions.md "Lead write cost"): a debit, a count, an
 * adoption and a refund are one UpdateItem each; only the day's roll-over (once a day per prepaid
 * organization) is a transaction. Callers use the named operations below through `walletStore(deps)`
 * (tenancy/billing.ts); tests put the in-memory twin in its place (`walletPort.with`).
 */
import { ConditionalCheckFailedException, TransactionCanceledException, type AttributeValue } from '@aws-sdk/client-dynamodb';
import { GetCommand, TransactWriteCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import type { Deps } from '../platform/deps.js';
import { keys } from '../platform/model.js';
import { queryAll } from '../platform/dynamo-store.js';
import { depsPort } from '../platform/deps-port.js';
import {
  adoptedToken, claimState, DOUBLE_SUBMIT_MS, guardedSubmission, ownClaim, type GuardClaim, type GuardedSubmission, type SubmissionGuard,
} from './double-submit.js';

/** A billed call: the day it was counted in, or the identical submission of the last 10 minutes it repeats (not billed then). */
export type Billed = { day: string } | { duplicateOf: GuardedSubmission };

/** A claim handed to a retry of the caller: the slot's `guard`, the first request's `token`, the retry's own client id `by`. */
export interface Adoption { prepaid: boolean; day: string; guard: SubmissionGuard; token: string; by: string }

/** A call given back: `adopted` (a retry of the caller took the claim: nothing given back), `released` (already refunded), `usage-owed` (the wallet credited, the closed day's count not). */
export interface Refunded { outcome: 'refunded' | 'adopted' | 'released' | 'usage-owed'; error?: string }

export interface DailyUsage { calls: number; billedMicros: number }

/** The organization item is in another request's transaction (the day's roll-over): retry shortly. The SDK does not. */
export class WriteConflict extends Error {
  constructor(message = 'the billing item is in a concurrent transaction') { super(message); this.name = 'WriteConflict'; }
}

export interface WalletStore {
  /**
   * Prepaid: takes `price` from the wallet and counts the call on the open day, with `claim`'s slot
   * unless the same submission holds it from the last 10 minutes. Opens `day` first when the item
   * still counts an earlier one (the roll-over). `short`: the wallet cannot pay, nothing written.
   * Throws WriteConflict when the roll-over's transaction holds the item.
   */
  debitWallet(orgId: string, call: { price: number; day: string; claim?: GuardClaim }): Promise<Billed | { short: true }>;
  /** Postpaid: counts the call on the day's usage item, with `claim`'s slot as debitWallet. */
  countUsage(orgId: string, call: { day: string; claim?: GuardClaim }): Promise<Billed>;
  /** Hands the claim `token` over to the retry `by` (docs/leads.md "Billing"): `released` when refunded, `other` when another retry has it. */
  adoptClaim(orgId: string, adoption: Adoption): Promise<'adopted' | 'released' | 'other'>;
  /** Gives back a billed call (`price` 0: postpaid), releasing `claim`'s slot with it. Throws when nothing could be given back. */
  refundCall(orgId: string, call: { price: number; day: string; claim?: Pick<GuardClaim, 'guard' | 'token'> }): Promise<Refunded>;
  /** Calls and billed micro-dollars of one day, closed or open (consistent reads). */
  dailyUsage(orgId: string, day: string): Promise<DailyUsage>;
  /**
   * Calls and billed micro-dollars of each day from `fromDay` to `toDay` (inclusive, `YYYY-MM-DD`)
   * that has any: the closed days' usage items, and the open day's counts on the organization item
   * (a consistent read) added to its day's. By day, ascending.
   */
  usageByDay(orgId: string, fromDay: string, toDay: string): Promise<DayUsage[]>;
}

export interface DayUsage extends DailyUsage { day: string }

/** Adds each day's counts (a closed day's item and the open day's counters), by day ascending. */
export function sumByDay(counts: DayUsage[]): DayUsage[] {
  const byDay = new Map<string, DayUsage>();
  for (const { day, calls, billedMicros } of counts) {
    const d = byDay.get(day) ?? { day, calls: 0, billedMicros: 0 };
    byDay.set(day, { day, calls: d.calls + calls, billedMicros: d.billedMicros + billedMicros });
  }
  return [...byDay.values()].sort((a, b) => (a.day < b.day ? -1 : 1));
}

/** Roll-overs one debit may meet before it asks its caller to retry (another container opening a later day each time). */
export const MAX_ROLL_TURNS = 4;

/**
 * What a refused debit's organization item (its old image) says, read alike by the store and its
 * twin: billed already (the SDK's retry of a debit whose first attempt committed), a repeat of a
 * submission, a wallet that cannot pay, or the day to debit in on the next turn, `roll` when the
 * day the item still has open must be closed first.
 */
export function refusedDebit(old: Record<string, unknown>, { price, day, claim }: { price: number; day: string; claim?: GuardClaim }): Billed | { short: true } | { retryIn: string; roll: boolean } {
  if (claim && ownClaim(old, claim)) return { day };
  const repeated = claim && guardedSubmission(old, claim);
  if (repeated) return { duplicateOf: repeated };
  if (Number(old.walletMicros ?? 0) < price) return { short: true };
  const openDay = old.usageDay as string | undefined;
  // Another container's clock already opened a later day: count there rather than reopen ours.
  return openDay && openDay > day ? { retryIn: openDay, roll: false } : { retryIn: day, roll: true };
}

const isConflict = (error: unknown) =>
  (error as Error).name === 'TransactionConflictException';

const plain = (item: Record<string, AttributeValue> | undefined) => (item ? unmarshall(item) : undefined);

/** The parts of an update that record the claim in its slot, unless the same submission was recorded there in the last 10 minutes. */
function guardClause({ guard, clientId, token, at }: GuardClaim) {
  const n = guard.slot;
  return {
    set: `dh${n} = :gh, dc${n} = :gc, dt${n} = :gt, dr${n} = :gr`,
    condition: `(attribute_not_exists(dh${n}) OR dh${n} <> :gh OR dt${n} < :gcut)`,
    values: { ':gh': guard.hash, ':gc': clientId, ':gt': at, ':gr': token, ':gcut': at - DOUBLE_SUBMIT_MS },
  };
}

/** The update that gives a claim's slot back with its refund, only while the slot still holds the claim. */
function releaseClause(guard: SubmissionGuard, token: string) {
  const n = guard.slot;
  return { remove: `dh${n}, dc${n}, dt${n}, dr${n}`, condition: `dr${n} = :gr`, values: { ':gr': token } };
}

export function dynamoWalletStore(deps: Deps): WalletStore {
  const TableName = deps.tables.organizations;
  const send = (input: NonNullable<UpdateCommand['input']>) => deps.doc.send(new UpdateCommand(input));

  return {
    async debitWallet(orgId, { price, day: today, claim }) {
      let day = today;
      const guard = claim && guardClause(claim);
      for (let turn = 1; ; turn++) {
        try {
          await send({
            TableName,
            Key: keys.org(orgId),
            UpdateExpression: `SET walletMicros = walletMicros - :price${guard ? `, ${guard.set}` : ''} ADD usageCalls :one, usageBilledMicros :price`,
            ConditionExpression: `walletMicros >= :price AND usageDay = :day${guard ? ` AND ${guard.condition}` : ''}`,
            ExpressionAttributeValues: { ':price': price, ':one': 1, ':day': day, ...guard?.values },
            ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
          });
          return { day };
        } catch (error) {
          if (isConflict(error)) throw new WriteConflict();
          if (!(error instanceof ConditionalCheckFailedException && error.Item)) throw error;
          const old = plain(error.Item)!;
          const refusal = refusedDebit(old, { price, day, claim });
          if (!('retryIn' in refusal)) return refusal;
          day = refusal.retryIn;
          if (refusal.roll) await openUsageDay(deps, orgId, old, day);
          if (turn >= MAX_ROLL_TURNS) throw new WriteConflict('the day kept rolling over');
        }
      }
    },

    async countUsage(orgId, { day, claim }) {
      const guard = claim && guardClause(claim);
      try {
        await send({
          TableName,
          Key: keys.usage(orgId, day),
          UpdateExpression: `ADD calls :one, billed_micros :zero SET entity = :entity${guard ? `, ${guard.set}` : ''}`,
          ...(guard ? { ConditionExpression: guard.condition, ReturnValuesOnConditionCheckFailure: 'ALL_OLD' as const } : {}),
          ExpressionAttributeValues: { ':one': 1, ':zero': 0, ':entity': 'usage', ...guard?.values },
        });
      } catch (error) {
        if (!(claim && error instanceof ConditionalCheckFailedException)) throw error;
        const old = plain(error.Item);
        if (ownClaim(old, claim)) return { day }; // counted by the first attempt
        const repeated = guardedSubmission(old, claim);
        if (repeated) return { duplicateOf: repeated };
      }
      return { day };
    },

    async adoptClaim(orgId, { prepaid, day, guard, token, by }) {
      const n = guard.slot;
      try {
        await send({
          TableName,
          Key: prepaid ? keys.org(orgId) : keys.usage(orgId, day),
          UpdateExpression: `SET dr${n} = :ga`,
          ConditionExpression: `dr${n} = :gr`,
          ExpressionAttributeValues: { ':gr': token, ':ga': adoptedToken(token, by) },
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
        });
        return 'adopted';
      } catch (error) {
        if (!(error instanceof ConditionalCheckFailedException)) throw error;
        const old = plain(error.Item);
        // The SDK's retry of this adoption, its answer lost: adopted by this request.
        if (claimState(old, guard, token) === 'adopted') return old?.[`dr${n}`] === adoptedToken(token, by) ? 'adopted' : 'other';
        // Released (refunded), or taken by another submission (the first request's refund then credits without the slot).
        return 'released';
      }
    },

    async refundCall(orgId, { price, day, claim }) {
      const prepaid = price > 0;
      let open = prepaid; // prepaid: the day's count is still on the organization item
      let held = claim;
      let outcome: Refunded['outcome'] = 'refunded';
      for (;;) {
        try {
          await send(giveBack(TableName, orgId, price, day, open, held));
          break;
        } catch (error) {
          if (!(error instanceof ConditionalCheckFailedException)) throw error;
          const old = plain(error.Item);
          const state = held ? claimState(old, held.guard, held.token) : 'held';
          if (state === 'adopted') return { outcome: 'adopted' };
          if (state === 'released') { outcome = 'released'; break; } // the SDK's retry of this refund: the first attempt applied
          if (state === 'taken') held = undefined; // another submission has the slot: refund without it
          else if (open && old?.usageDay !== day) open = false; // the day was closed meanwhile
          else throw error;
        }
      }
      if (!prepaid || open) return { outcome };
      // The day was closed: its counts moved to its usage item.
      try {
        await send({ TableName, Key: keys.usage(orgId, day), UpdateExpression: 'ADD calls :minusOne, billed_micros :minusPrice', ExpressionAttributeValues: { ':minusOne': -1, ':minusPrice': -price } });
      } catch (error) {
        return { outcome: 'usage-owed', error: (error as Error).name };
      }
      return { outcome };
    },

    async dailyUsage(orgId, day) {
      const [usage, org] = await Promise.all([
        deps.doc.send(new GetCommand({ TableName, Key: keys.usage(orgId, day), ConsistentRead: true })),
        deps.doc.send(new GetCommand({ TableName, Key: keys.org(orgId), ConsistentRead: true })),
      ]);
      const open = org.Item?.usageDay === day;
      return {
        calls: Number(usage.Item?.calls ?? 0) + (open ? Number(org.Item?.usageCalls ?? 0) : 0),
        billedMicros: Number(usage.Item?.billed_micros ?? 0) + (open ? Number(org.Item?.usageBilledMicros ?? 0) : 0),
      };
    },

    async usageByDay(orgId, fromDay, toDay) {
      const [closed, org] = await Promise.all([
        queryAll(deps, {
          TableName, KeyConditionExpression: 'pk = :p AND sk BETWEEN :lo AND :hi',
          ExpressionAttributeValues: { ':p': keys.org(orgId).pk, ':lo': keys.usage(orgId, fromDay).sk, ':hi': keys.usage(orgId, toDay).sk },
        }),
        deps.doc.send(new GetCommand({ TableName, Key: keys.org(orgId), ConsistentRead: true })),
      ]);
      const counts = closed.map((item) => ({ day: String(item.sk).slice(keys.usagePrefix.length), calls: Number(item.calls ?? 0), billedMicros: Number(item.billed_micros ?? 0) }));
      const open = org.Item?.usageDay;
      if (typeof open === 'string' && open >= fromDay && open <= toDay) counts.push({ day: open, calls: Number(org.Item?.usageCalls ?? 0), billedMicros: Number(org.Item?.usageBilledMicros ?? 0) });
      return sumByDay(counts);
    },
  };
}

/**
 * The refund's update: the wallet credit (prepaid) and the count taken back (postpaid: the day's
 * usage item; prepaid: the organization item while `open`), with the claim's slot given back.
 */
function giveBack(TableName: string, orgId: string, price: number, day: string, open: boolean, claim?: Pick<GuardClaim, 'guard' | 'token'>): NonNullable<UpdateCommand['input']> {
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
    TableName,
    Key: prepaid ? keys.org(orgId) : keys.usage(orgId, day),
    UpdateExpression: parts.join(' '),
    ...(conditions.length ? { ConditionExpression: conditions.join(' AND '), ReturnValuesOnConditionCheckFailure: 'ALL_OLD' as const } : {}),
    ExpressionAttributeValues: values,
  };
}

/**
 * Moves the organization item's counters of a finished day to that day's usage item and opens
 * `day`, in one transaction conditioned on the counters just read, so no debit is lost. Once a day
 * per prepaid organization. A cancellation means another request moved first; the debit retries.
 */
async function openUsageDay(deps: Deps, orgId: string, old: Record<string, unknown>, day: string): Promise<void> {
  const TableName = deps.tables.organizations;
  const closing = old.usageDay as string | undefined;
  const calls = Number(old.usageCalls ?? 0);
  const billed = Number(old.usageBilledMicros ?? 0);
  // Organizations created before the ORGINDEX item carry the index keys themselves, so each debit
  // would also write gsi1: move them to the index item now, once.
  const legacyIndex = typeof old.gsi1pk === 'string' && typeof old.createdAt === 'string';
  try {
    await deps.doc.send(new TransactWriteCommand({
      TransactItems: [
        {
          Update: {
            TableName,
            Key: keys.org(orgId),
            UpdateExpression: `SET usageDay = :day, usageCalls = :zero, usageBilledMicros = :zero${legacyIndex ? ' REMOVE gsi1pk, gsi1sk' : ''}`,
            ConditionExpression: closing
              ? 'usageDay = :closing AND usageCalls = :calls AND usageBilledMicros = :billed'
              : 'attribute_exists(pk) AND attribute_not_exists(usageDay)',
            ExpressionAttributeValues: { ':day': day, ':zero': 0, ...(closing ? { ':closing': closing, ':calls': calls, ':billed': billed } : {}) },
          },
        },
        ...(closing && calls > 0
          ? [{ Update: { TableName, Key: keys.usage(orgId, closing), UpdateExpression: 'ADD calls :calls, billed_micros :billed SET entity = :entity', ExpressionAttributeValues: { ':calls': calls, ':billed': billed, ':entity': 'usage' } } }]
          : []),
        ...(legacyIndex
          ? [{ Put: { TableName, Item: { ...keys.orgIndexItem(orgId), ...keys.orgIndex(old.createdAt as string, orgId), entity: 'organization_index', id: orgId } } }]
          : []),
      ],
    }));
  } catch (error) {
    if (!(error instanceof TransactionCanceledException)) throw error;
  }
}

/** The wallet store of these deps (the in-memory twin in tests). */
export const walletPort = depsPort<WalletStore>('walletStore', dynamoWalletStore);
export const walletStore = walletPort.of;
