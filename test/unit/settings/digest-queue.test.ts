/**
 * The digest queue's producer (functions/core/settings/digest-queue.ts) against a stubbed SQS: a
 * large account's jobs go 10 per SendMessageBatch, a bounded number of calls at a time, each job
 * once; a refused batch or entry is tried again within the run; jobs still refused after
 * DIGEST_QUEUE_ATTEMPTS rounds fail the run, counted, once every other batch was tried.
 */
import { it, expect, jest } from '@jest/globals';
import { metrics } from '../../../functions/core/platform/observability.js';
import type { SendMessageBatchCommand } from '@aws-sdk/client-sqs';
import type { Deps } from '../../../functions/core/platform/deps.js';
import { digestQueuePort, DIGEST_QUEUE_ATTEMPTS, DIGEST_SENDS_AT_ONCE, type DigestJob } from '../../../functions/core/settings/digest-queue.js';
import { memoryStores } from '../../support/stores/memory-deps.js';

/**
 * An SQS stub that answers each call after a tick, counting the calls in flight; `refuse`: the call
 * numbers to fail; `failEntries`: by call number, the entry ids SQS answers as Failed; `refuseAlways`:
 * a batch holding such a body is refused on every call.
 */
function stubbedSqs(refuse: number[] = [], failEntries: Record<number, string[]> = {}, refuseAlways: (body: string) => boolean = () => false) {
  const sent: string[] = [];
  const bodies: string[][] = [];
  let inFlight = 0;
  let calls = 0;
  const seen = { maxInFlight: 0 };
  const sqs = {
    send: async (command: SendMessageBatchCommand) => {
      const call = calls++;
      const entries = command.input.Entries ?? [];
      bodies.push(entries.map((e) => e.MessageBody!));
      inFlight += 1;
      seen.maxInFlight = Math.max(seen.maxInFlight, inFlight);
      await new Promise((r) => setTimeout(r, 1));
      inFlight -= 1;
      if (refuse.includes(call) || entries.some((e) => refuseAlways(e.MessageBody!))) throw Object.assign(new Error('throttled'), { name: 'RequestThrottled' });
      const failed = failEntries[call] ?? [];
      for (const e of entries) if (!failed.includes(e.Id!)) sent.push(e.MessageBody!);
      return { Successful: [], Failed: failed.map((Id) => ({ Id, Code: 'InternalError', SenderFault: false })) };
    },
  };
  const batchesOf = (text: string) => bodies.filter((b) => b.some((body) => body.includes(text))).length;
  return { sqs, sent, seen, batchesOf };
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

it('a refused call, or entries SQS failed, are tried again within the run: every job queued once', async () => {
  const { sqs, sent } = stubbedSqs([3], { 5: ['2', '7'] });
  const deps = { ...memoryStores().deps, sqs } as unknown as Deps;
  await digestQueuePort.of(deps).enqueue(jobs(200));
  expect(sent).toHaveLength(200);
  expect(new Set(sent).size).toBe(200);
});

it('jobs still refused after DIGEST_QUEUE_ATTEMPTS rounds fail the run, counted (DigestJobsUnqueued), every other batch sent', async () => {
  const { sqs, sent, batchesOf } = stubbedSqs([], {}, (body) => body.includes('"org_13"'));
  const deps = { ...memoryStores().deps, sqs } as unknown as Deps;
  const counted = jest.spyOn(metrics, 'addMetric').mockImplementation(() => metrics);
  try {
    await expect(digestQueuePort.of(deps).enqueue(jobs(200))).rejects.toThrow('could not queue 10 digests: RequestThrottled');
    expect(counted).toHaveBeenCalledWith('DigestJobsUnqueued', expect.anything(), 10);
  } finally { counted.mockRestore(); }
  expect(sent).toHaveLength(190);
  expect(batchesOf('"org_13"')).toBe(DIGEST_QUEUE_ATTEMPTS);
});
