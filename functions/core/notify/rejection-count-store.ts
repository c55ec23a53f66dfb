/**
 * The mailer's count of refused addresses (docs/notifications.md "An address refused for good"),
 * in the rateWindows table, shared by every mailer instance so the breaker trips on the service's
 * refusals, not one container's:
 * - one item per 10-minute window (`MAILREJECT#<window start>`, kept a day by TTL) holding a string
 *   set of entries `<organization hash>.<address hash>` (short hashes: no address or organization
 *   is stored; the same address refused twice counts once). An entry without a dot (the previous
 *   version's: the address's hash alone) reads as an organization of its own. The set stops growing
 *   at REJECTION_WINDOW_CAP entries (the mailer adds at most REJECTION_LIMIT + 1 of an organization's),
 *   so a server refusing everything cannot grow the item without bound.
 * - the breaker's latches (`MAILREJECT#TRIPPED` for every organization, `MAILREJECT#TRIPPED#<organization
 *   hash>` for one), each with `until` (epoch ms), a TTL at it, and `refused`, the entries that set
 *   or extended it (a retry of one of them extends nothing); extended, never shortened.
 * The only module that reads or writes these items; tests use the twin
 * (test/support/stores/memory-rejection-count-store.ts) through `rejectionCountPort.with`.
 */
import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import { GetCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import type { Deps } from '../platform/deps.js';
import { depsPort } from '../platform/deps-port.js';

/** The breaker's window: refusals are counted per window of this length (the previous one weighed in too). */
export const REJECTION_WINDOW_MS = 10 * 60_000;
/** A window's set holds at most this many entries. */
export const REJECTION_WINDOW_CAP = 32;

/** A latch: until when (epoch ms), and the entries that set or extended it (none in an item of the previous version). */
export interface Latch { until: number; refused: string[] }

export interface RefusalCounts {
  /** The window's entries so far. */
  current: string[];
  /** The window before's entries. */
  previous: string[];
  /** The breaker's latches, for every organization and for this one, if it ever was. */
  latches: { all?: Latch; organization?: Latch };
}

export interface RejectionCountStore {
  /** The window starting at `windowStart`'s entries, the previous one's, and the latches (everyone's and `organizationKey`'s); writes nothing. */
  read(windowStart: number, organizationKey: string): Promise<RefusalCounts>;
  /** Adds `entry` (`<organization hash>.<address hash>`) to the window; answers its entries after, and `full` when it held REJECTION_WINDOW_CAP already (not added). */
  add(windowStart: number, entry: string): Promise<{ current: string[]; full: boolean }>;
  /**
   * Latches the breaker until `until` (later only) for everyone, or for one organization, and records
   * `entry` in it even when it was latched as late already (at most REJECTION_WINDOW_CAP entries;
   * `renew`: the latch had ended, its entries are replaced).
   */
  trip(scope: { organizationKey?: string }, until: number, entry: string, renew: boolean): Promise<void>;
}

const windowKey = (windowStart: number) => ({ pk: `MAILREJECT#${windowStart}` });
const latchKey = (organizationKey?: string) => ({ pk: organizationKey === undefined ? 'MAILREJECT#TRIPPED' : `MAILREJECT#TRIPPED#${organizationKey}` });
const entries = (item: Record<string, unknown> | undefined) => [...((item?.refused as Set<string> | undefined) ?? [])];
const latch = (item: Record<string, unknown> | undefined): Latch | undefined => (typeof item?.until === 'number' ? { until: item.until, refused: entries(item) } : undefined);

export function dynamoRejectionCountStore(deps: Deps): RejectionCountStore {
  const get = (Key: { pk: string }) => deps.doc.send(new GetCommand({ TableName: deps.tables.rateWindows, Key, ConsistentRead: true }));
  /** The update, false when its condition failed. */
  const conditional = async (command: UpdateCommand) => {
    try {
      await deps.doc.send(command);
      return true;
    } catch (error) {
      if (!(error instanceof ConditionalCheckFailedException)) throw error;
      return false;
    }
  };
  return {
    async read(windowStart, organizationKey) {
      const [current, previous, all, organization] = await Promise.all([
        get(windowKey(windowStart)), get(windowKey(windowStart - REJECTION_WINDOW_MS)), get(latchKey()), get(latchKey(organizationKey)),
      ]);
      return { current: entries(current.Item), previous: entries(previous.Item), latches: { all: latch(all.Item), organization: latch(organization.Item) } };
    },
    async add(windowStart, entry) {
      try {
        const { Attributes } = await deps.doc.send(new UpdateCommand({
          TableName: deps.tables.rateWindows,
          Key: windowKey(windowStart),
          UpdateExpression: 'ADD refused :a SET expiresAt = if_not_exists(expiresAt, :e)',
          ConditionExpression: 'attribute_not_exists(refused) OR size(refused) < :cap OR contains(refused, :entry)',
          ExpressionAttributeValues: { ':a': new Set([entry]), ':entry': entry, ':cap': REJECTION_WINDOW_CAP, ':e': Math.ceil((windowStart + 86_400_000) / 1000) },
          ReturnValues: 'UPDATED_NEW',
        }));
        return { current: entries(Attributes), full: false };
      } catch (error) {
        if (!(error instanceof ConditionalCheckFailedException)) throw error;
        return { current: entries((await get(windowKey(windowStart))).Item), full: true };
      }
    },
    async trip(scope, until, entry, renew) {
      const later = 'attribute_not_exists(#until) OR #until < :u';
      const base = { TableName: deps.tables.rateWindows, Key: latchKey(scope.organizationKey), ExpressionAttributeNames: { '#until': 'until' } };
      const values = { ':u': until, ':e': Math.ceil(until / 1000) };
      const recorded = await conditional(new UpdateCommand(renew
        ? { ...base, UpdateExpression: 'SET #until = :u, expiresAt = :e, refused = :a', ConditionExpression: later, ExpressionAttributeValues: { ...values, ':a': new Set([entry]) } }
        : {
          ...base,
          UpdateExpression: 'SET #until = :u, expiresAt = :e ADD refused :a',
          ConditionExpression: `(${later}) AND (attribute_not_exists(refused) OR size(refused) < :cap)`,
          ExpressionAttributeValues: { ...values, ':a': new Set([entry]), ':cap': REJECTION_WINDOW_CAP },
        }));
      if (recorded) return;
      // Latched as late already (another mailer, or this one within the same millisecond): the entry recorded all the same,
      // so its retries extend nothing; its entries full: `until` alone, later only.
      await conditional(new UpdateCommand({ ...base, UpdateExpression: 'ADD refused :a', ConditionExpression: 'attribute_exists(#until) AND (attribute_not_exists(refused) OR size(refused) < :cap)', ExpressionAttributeValues: { ':a': new Set([entry]), ':cap': REJECTION_WINDOW_CAP } }));
      await conditional(new UpdateCommand({ ...base, UpdateExpression: 'SET #until = :u, expiresAt = :e', ConditionExpression: later, ExpressionAttributeValues: values }));
    },
  };
}

export const rejectionCountPort = depsPort<RejectionCountStore>('rejectionCount', dynamoRejectionCountStore);
