/**
 * The digest queue's producer (functions/core/settings/digest-queue.ts) against a stubbed SQS: a
 * large account's jobs go 10 per SendMessageBatch, a bounded number of calls at a time, each job
 * once; a refused batch fails the run, once every other batch was tried.
 */
import { it, expect } from '@jest/globals';
import type { SendMessageBatchCommand } from '@aws-sdk/client-sqs';
import type { Deps } from '../../../functions/core/platform/deps.js';
import { digestQueuePort, DIGEST_SENDS_AT_ONCE, type DigestJob } from '../../../functions/core/settings/digest-queue.js';
import { memoryStores } from '../../support/stores/memory-deps.js';

/** An SQS stub that answers each call after a tick, counting the calls in flight; `refuse`: the call numbers to fail. */
function stubbedSqs(refuse: number[] = []) {
  const sent: string[] = [];
  let inFlight = 0;
  let calls = 0;
  const seen = { maxInFlight: 0 };
  const sqs = {
    send: async (command: SendMessageBatchCommand) => {
      const call = calls++;
      inFlight += 1;
      seen.maxInFlight = Math.max(seen.maxInFlight, inFlight);
      await new Promise((r) => setTimeout(r, 1));
      inFlight -= 1;
      if (refuse.includes(call)) throw Object.assign(new Error('throttled'), { name: 'RequestThrottled' });
      for (const e of command.input.Entries ?? []) sent.push(e.MessageBody!);
      return { Successful: [], Failed: [] };
    },
  };
  return { sqs, sent, seen };
}

const jobs = (n: number): DigestJob[] => Array.from({ length: n }, (_, i) => ({ organizationId: `org_${i}`, day: '2030-01-14' }));

it('queues a large account\'s jobs 10 per call, several calls at once but never more than DIGEST_SENDS_AT_ONCE, each job once', async () => {
  const { sqs, sent, seen } = stubbedSqs();
  const deps = { ...memoryStores().deps, sqs } as unknown as Deps;
  await digestQueuePort.of(deps).enqueue(jobs(2_000));
  expect(new Set(sent).size).toBe(2_000);
  expect(sent).toHaveLength(2_000);
  expect(seen.maxInFlight).toBeGreaterThan(1);
  expect(seen.maxInFlight).toBeLessThanOrEqual(DIGEST_SENDS_AT_ONCE);
});

it('a refused call fails the run, after every other batch was sent', async () => {
  const { sqs, sent } = stubbedSqs([3]);
  const deps = { ...memoryStores().deps, sqs } as unknown as Deps;
  await expect(digestQueuePort.of(deps).enqueue(jobs(200))).rejects.toThrow('could not queue 10 digests: RequestThrottled');
  expect(sent).toHaveLength(190);
});
