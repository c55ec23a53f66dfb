/**
 * What the DynamoDB rate-window store does with a throttled batch read (functions/core/tenancy/
 * rate-window-store.ts): keys left unprocessed are asked again, after the named backoff
 * (BACKOFFS.rateWindowUnprocessed), until all are answered, and a read still unprocessed after its
 * rounds fails (the limiter then fails open or closed). On a stand-in document client.
 */
import { describe, it, expect } from '@jest/globals';
import type { BatchGetCommand } from '@aws-sdk/lib-dynamodb';
import type { Deps } from '../../../functions/core/platform/deps.js';
import { dynamoRateWindowStore } from '../../../functions/core/tenancy/rate-window-store.js';

const NOW = Date.parse('2026-11-26T09:00:00.000Z');

/** A document client that leaves the last key of each batch read unprocessed, `times` times. */
function throttledReads(times: number) {
  const asked: string[][] = [];
  let left = times;
  const doc = {
    async send(command: BatchGetCommand) {
      const request = command.input.RequestItems!.rateWindows;
      const pks = request.Keys!.map((k) => String(k.pk));
      asked.push(pks);
      const answered = left > 0 ? pks.slice(0, -1) : pks;
      const unprocessed = left > 0 ? pks.slice(-1) : [];
      left -= 1;
      return {
        Responses: { rateWindows: answered.map((pk) => ({ pk, count: 1, s3: 1, expiresAt: NOW / 1000 + 60 })) },
        ...(unprocessed.length ? { UnprocessedKeys: { rateWindows: { Keys: unprocessed.map((pk) => ({ pk })), ConsistentRead: true } } } : {}),
      };
    },
  };
  const deps = { doc, tables: { rateWindows: 'rateWindows' }, now: () => NOW } as unknown as Pick<Deps, 'doc' | 'tables' | 'now'>;
  return { store: dynamoRateWindowStore(deps), asked };
}

const slots = [0, 0, 0, 1, 0, 0, 0, 0, 0, 0];

describe('a batch read of sub-windows DynamoDB leaves partly unprocessed', () => {
  it('asks again for the keys left, until every one is answered', async () => {
    const { store, asked } = throttledReads(2);
    expect(await store.readSubWindows('key', [1, 2, 3])).toEqual(new Map([[1, slots], [2, slots], [3, slots]]));
    expect(asked).toEqual([['RLS#key#1', 'RLS#key#2', 'RLS#key#3'], ['RLS#key#3'], ['RLS#key#3']]);
  });

  it('gives up after its rounds, so the check fails rather than waits', async () => {
    const { store, asked } = throttledReads(100);
    await expect(store.readSubWindows('key', [1, 2])).rejects.toThrow('unprocessed');
    expect(asked.length).toBe(8);
  });

  it('asks nothing for no sub-windows', async () => {
    const { store, asked } = throttledReads(0);
    expect(await store.readSubWindows('key', [])).toEqual(new Map());
    expect(asked).toEqual([]);
  });
});
