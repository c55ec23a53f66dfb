/**
 * The mailer's count of refused addresses (docs/notifications.md "An address refused for good"),
 * in the rateWindows table, shared by every mailer instance so the breaker trips on the service's
 * refusals, not one container's:
 * - one item per 10-minute window (`MAILREJECT#<window start>`, kept a day by TTL) holding a string
 *   set of entries `<organization hash>.<address hash>` (short hashes: no address or organization
 *   is stored; the same address refused twice counts once). An entry without a dot (the previous
 *   version's: the address's hash alone) reads as an organization of its own. The set stops growing
 *   at REJECTION_WINDOW_CAP entries: far past any count that trips the breaker, so a full window
 *   trips it, and a server refusing everything cannot grow the item without bound.
 * - the breaker's latches (`MAILREJECT#TRIPPED` for every organization, `MAILREJECT#TRIPPED#<organization
 *   hash>` for one), each with `until` (epoch ms) and a TTL at it; extended, never shortened.
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

export interface RefusalCounts {
  /** The window's entries so far (this one among them unless the window was full). */
  current: string[];
  /** The window before's entries. */
  previous: string[];
  /** The window held REJECTION_WINDOW_CAP entries already: this one was not added. */
  full: boolean;
  /** Until when (epoch ms) the breaker is latched for every organization, and for this one, if it ever was. */
  trippedUntil: { all?: number; organization?: number };
}

export interface RejectionCountStore {
  /** Counts `entry` (`<organization hash>.<address hash>`) refused in the window starting at `windowStart`; answers that window's entries, the previous one's, and the latches (`organizationKey`'s and everyone's). */
  countRefused(windowStart: number, organizationKey: string, entry: string): Promise<RefusalCounts>;
  /** Latches the breaker until `until` (later only) for everyone, or for one organization. */
  trip(scope: { organizationKey?: string }, until: number): Promise<void>;
}

const windowKey = (windowStart: number) => ({ pk: `MAILREJECT#${windowStart}` });
const latchKey = (organizationKey?: string) => ({ pk: organizationKey === undefined ? 'MAILREJECT#TRIPPED' : `MAILREJECT#TRIPPED#${organizationKey}` });
const entries = (item: Record<string, unknown> | undefined) => [...((item?.refused as Set<string> | undefined) ?? [])];

export function dynamoRejectionCountStore(deps: Deps): RejectionCountStore {
  const get = (Key: { pk: string }) => deps.doc.send(new GetCommand({ TableName: deps.tables.rateWindows, Key, ConsistentRead: true }));
  async function add(windowStart: number, entry: string): Promise<{ current: string[]; full: boolean }> {
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
  }
  return {
    async countRefused(windowStart, organizationKey, entry) {
      const [added, previous, all, organization] = await Promise.all([
        add(windowStart, entry), get(windowKey(windowStart - REJECTION_WINDOW_MS)), get(latchKey()), get(latchKey(organizationKey)),
      ]);
      return {
        ...added,
        previous: entries(previous.Item),
        trippedUntil: { all: all.Item?.until as number | undefined, organization: organization.Item?.until as number | undefined },
      };
    },
    async trip(scope, until) {
      try {
        await deps.doc.send(new UpdateCommand({
          TableName: deps.tables.rateWindows,
          Key: latchKey(scope.organizationKey),
          UpdateExpression: 'SET #until = :u, expiresAt = :e',
          ConditionExpression: 'attribute_not_exists(#until) OR #until < :u',
          ExpressionAttributeNames: { '#until': 'until' },
          ExpressionAttributeValues: { ':u': until, ':e': Math.ceil(until / 1000) },
        }));
      } catch (error) {
        // Latched later already (another mailer): nothing to extend.
        if (!(error instanceof ConditionalCheckFailedException)) throw error;
      }
    },
  };
}

export const rejectionCountPort = depsPort<RejectionCountStore>('rejectionCount', dynamoRejectionCountStore);
