/**
 * The mailer's count of refused addresses (docs/notifications.md "An address refused for good"):
 * one item per 10-minute window in the rateWindows table (`MAILREJECT#<window start>`, kept a day
 * by TTL) holding the short hashes of the addresses refused in it (a string set: an address refused
 * twice counts once, and no address is stored). Shared by every mailer instance, so the breaker
 * trips on the service's refusals, not one container's. The only module that reads or writes these
 * items; tests use the twin (test/support/stores/memory-rejection-count-store.ts) through `rejectionCountPort.with`.
 */
import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import type { Deps } from '../platform/deps.js';
import { depsPort } from '../platform/deps-port.js';

/** The breaker's window: refusals are counted per fixed window of this length. */
export const REJECTION_WINDOW_MS = 10 * 60_000;

export interface RejectionCountStore {
  /** Counts the address (`addressKey`, its short hash) refused in the window starting at `windowStart`; answers the distinct addresses refused in that window so far. */
  countRefused(windowStart: number, addressKey: string): Promise<number>;
}

const windowKey = (windowStart: number) => ({ pk: `MAILREJECT#${windowStart}` });

export function dynamoRejectionCountStore(deps: Deps): RejectionCountStore {
  return {
    async countRefused(windowStart, addressKey) {
      const { Attributes } = await deps.doc.send(new UpdateCommand({
        TableName: deps.tables.rateWindows,
        Key: windowKey(windowStart),
        UpdateExpression: 'ADD refused :a SET expiresAt = if_not_exists(expiresAt, :e)',
        ExpressionAttributeValues: { ':a': new Set([addressKey]), ':e': Math.ceil((windowStart + 86_400_000) / 1000) },
        ReturnValues: 'UPDATED_NEW',
      }));
      const refused = Attributes?.refused as Set<string> | undefined;
      return refused?.size ?? 1;
    },
  };
}

export const rejectionCountPort = depsPort<RejectionCountStore>('rejectionCount', dynamoRejectionCountStore);
