/**
 * The rate limiter's store (docs/decisions.md "Rate limiter: closed 10 s sub-windows that never
 * over-admit"): the rateWindows table, one item per window key per 10 s sub-window (its count, its
 * per-second counts `s0`..`s9`, `closed` once closed) and one per key per UTC day for a publishable
 * key's daily cap. The only module that reads or writes it; tenancy/rate-limit.ts decides.
 * Every item carries `expiresAt` (TTL, epoch seconds): an item past it is absent to every read, as
 * DynamoDB may keep it for a while after. Tests substitute an in-memory twin
 * (test/support/memory-rate-window-store.ts) through `withRateWindowStore`.
 */
import { BatchGetCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import type { Deps } from '../platform/deps.js';
import { isConditionFailure } from '../platform/dynamo-store.js';
import { BACKOFFS, retry } from '../platform/retry.js';

/** Per-second counts of a sub-window: SLOTS seconds. */
export const SLOTS = 10;

/** What counting one request in a sub-window did: counted; refused (its count at the threshold); or found it closed. Each with the sub-window's counts after. */
export type CountOutcome = { outcome: 'counted' | 'full' | 'closed'; slots: number[] };

export interface RateWindowStore {
  /**
   * Counts one request in sub-window `sub` of `windowKey`, in second `slot`, unless the sub-window
   * is closed or already holds `threshold` requests: one conditional write, one round trip.
   */
  countRequest(windowKey: string, sub: number, slot: number, threshold: number, expiresAt: number): Promise<CountOutcome>;
  /** Closes sub-window `sub` (no request is counted in it afterwards) and answers its final counts. */
  closeSubWindow(windowKey: string, sub: number, expiresAt: number): Promise<number[]>;
  /** The per-second counts of these sub-windows (zeros for one never written or expired). */
  readSubWindows(windowKey: string, subs: number[]): Promise<Map<number, number[]>>;
  /** Takes one of `cap` calls of `day` for the key; false when all are taken. */
  reserveDailyCall(keyId: string, day: string, cap: number, expiresAt: number): Promise<boolean>;
  /** Gives one call of `day` back. */
  releaseDailyCall(keyId: string, day: string): Promise<void>;
}

/** The per-second counts an item holds (zeros for none). */
export const slotsOf = (item: Record<string, unknown> | undefined): number[] =>
  Array.from({ length: SLOTS }, (_, i) => Number(item?.[`s${i}`] ?? 0));

const subWindowKey = (windowKey: string, sub: number) => ({ pk: `RLS#${windowKey}#${sub}` });
const dailyKey = (keyId: string, day: string) => ({ pk: `CAP#${keyId}#${day}` });

/** Rounds of a batch read whose keys DynamoDB left unprocessed (throttling) before the check gives up (and fails open or closed). */
const UNPROCESSED_ROUNDS = 8;
class Unprocessed extends Error {
  override name = 'Unprocessed';
}

export function dynamoRateWindowStore(deps: Pick<Deps, 'doc' | 'tables' | 'now'>): RateWindowStore {
  const TableName = deps.tables.rateWindows;
  /** TTL deletion lags (up to days on AWS): an item past its expiry is treated as gone. */
  const live = (item: Record<string, unknown> | undefined) =>
    (item && (item.expiresAt === undefined || Number(item.expiresAt) * 1000 > deps.now()) ? item : undefined);

  return {
    async countRequest(windowKey, sub, slot, threshold, expiresAt) {
      try {
        const { Attributes } = await deps.doc.send(new UpdateCommand({
          TableName,
          Key: subWindowKey(windowKey, sub),
          UpdateExpression: 'ADD #c :one, #slot :one SET expiresAt = if_not_exists(expiresAt, :ttl)',
          ConditionExpression: 'attribute_not_exists(#closed) AND (attribute_not_exists(#c) OR #c < :threshold)',
          ExpressionAttributeNames: { '#c': 'count', '#slot': `s${slot}`, '#closed': 'closed' },
          ExpressionAttributeValues: { ':one': 1, ':threshold': threshold, ':ttl': expiresAt },
          ReturnValues: 'ALL_NEW',
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
        }));
        return { outcome: 'counted', slots: slotsOf(Attributes) };
      } catch (error) {
        if (!isConditionFailure(error)) throw error;
        const item = error.Item ? unmarshall(error.Item) : undefined;
        return { outcome: item?.closed ? 'closed' : 'full', slots: slotsOf(item) };
      }
    },

    async closeSubWindow(windowKey, sub, expiresAt) {
      const { Attributes } = await deps.doc.send(new UpdateCommand({
        TableName,
        Key: subWindowKey(windowKey, sub),
        UpdateExpression: 'SET #closed = :yes, expiresAt = if_not_exists(expiresAt, :ttl)',
        ExpressionAttributeNames: { '#closed': 'closed' },
        ExpressionAttributeValues: { ':yes': true, ':ttl': expiresAt },
        ReturnValues: 'ALL_NEW',
      }));
      return slotsOf(Attributes);
    },

    async readSubWindows(windowKey, subs) {
      const found = new Map<string, Record<string, unknown>>();
      let request: Record<string, { Keys: Record<string, unknown>[]; ConsistentRead: boolean }> | undefined = subs.length === 0
        ? undefined
        : { [TableName]: { Keys: subs.map((sub) => subWindowKey(windowKey, sub)), ConsistentRead: true } };
      // Keys left unprocessed (throttling) are asked again after a jittered, growing wait.
      if (request) {
        await retry(async () => {
          const out = await deps.doc.send(new BatchGetCommand({ RequestItems: request }));
          for (const item of out.Responses?.[TableName] ?? []) found.set(item.pk as string, item);
          request = out.UnprocessedKeys as typeof request;
          if (request && Object.keys(request).length > 0) throw new Unprocessed('rate windows left unprocessed');
        }, { backoff: BACKOFFS.rateWindowUnprocessed, attempts: UNPROCESSED_ROUNDS, shouldRetry: (error) => error instanceof Unprocessed });
      }
      return new Map(subs.map((sub) => [sub, slotsOf(live(found.get(subWindowKey(windowKey, sub).pk)))]));
    },

    async reserveDailyCall(keyId, day, cap, expiresAt) {
      try {
        await deps.doc.send(new UpdateCommand({
          TableName,
          Key: dailyKey(keyId, day),
          UpdateExpression: 'ADD #c :one SET expiresAt = if_not_exists(expiresAt, :ttl)',
          ConditionExpression: 'attribute_not_exists(#c) OR #c < :cap',
          ExpressionAttributeNames: { '#c': 'count' },
          ExpressionAttributeValues: { ':one': 1, ':cap': cap, ':ttl': expiresAt },
        }));
        return true;
      } catch (error) {
        if (isConditionFailure(error)) return false;
        throw error;
      }
    },

    async releaseDailyCall(keyId, day) {
      await deps.doc.send(new UpdateCommand({ TableName, Key: dailyKey(keyId, day), UpdateExpression: 'ADD #c :minus', ExpressionAttributeNames: { '#c': 'count' }, ExpressionAttributeValues: { ':minus': -1 } }));
    },
  };
}

/** A symbol, so that deps copied with a spread keep their store. */
const port = Symbol('rateWindowStore');
type WithRateWindowStore = Deps & { [port]?: RateWindowStore };

/** `deps` whose rate windows live in `store` (an in-memory twin in tests) instead of DynamoDB. */
export const withRateWindowStore = (deps: Deps, store: RateWindowStore): Deps => ({ ...deps, [port]: store }) as WithRateWindowStore;

/** The store `withRateWindowStore` put in these deps, if any. */
export const injectedRateWindowStore = (deps: Deps): RateWindowStore | undefined => (deps as WithRateWindowStore)[port];

export const rateWindowStore = (deps: Deps): RateWindowStore => injectedRateWindowStore(deps) ?? dynamoRateWindowStore(deps);
