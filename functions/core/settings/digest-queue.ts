/**
 * The digest queue's one producer (docs/notifications.md "The daily digest"): the schedule's run
 * lists the organizations with a digest recipient and queues one message per organization and day,
 * 10 per SendMessageBatch call, DIGEST_SENDS_AT_ONCE calls at a time; the daily-digest function makes each digest from its own message
 * (functions/daily-digest/sqs-batch.ts), so a large account is many short invocations. Tests put
 * an in-memory queue in its place (`digestQueuePort.with`).
 */
import { SendMessageBatchCommand } from '@aws-sdk/client-sqs';
import { inSqsBatches } from '../platform/batches.js';
import type { Deps } from '../platform/deps.js';
import { depsPort } from '../platform/deps-port.js';

/** One organization's digest of one UTC day (`YYYY-MM-DD`). */
export interface DigestJob { organizationId: string; day: string }

export interface DigestQueue {
  enqueue(jobs: DigestJob[]): Promise<void>;
}

/**
 * SendMessageBatch calls in flight at once: 10,000 organizations are 1,000 calls, one after another
 * ~20 s or more of the run's 60; ten at a time a few seconds, well under SQS's rate.
 */
export const DIGEST_SENDS_AT_ONCE = 10;

async function sendJobs(deps: Deps, jobs: DigestJob[]): Promise<void> {
  const batches = inSqsBatches(jobs.map((j) => JSON.stringify(j)), (b) => Buffer.byteLength(b));
  const failed: string[] = [];
  let next = 0;
  // Every batch is tried even when one fails: as many jobs as can be queued are.
  const worker = async () => {
    while (next < batches.length) {
      const batch = batches[next++];
      try {
        const out = await deps.sqs.send(new SendMessageBatchCommand({ QueueUrl: deps.queues.digestQueue, Entries: batch.map((body, n) => ({ Id: String(n), MessageBody: body })) }));
        for (const f of out.Failed ?? []) failed.push(f.Code ?? 'Failed');
      } catch (error) {
        failed.push(...batch.map(() => (error as Error).name));
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(DIGEST_SENDS_AT_ONCE, batches.length) }, worker));
  if (failed.length) throw new Error(`could not queue ${failed.length} digests: ${[...new Set(failed)].join(', ')}`);
}

export const digestQueuePort = depsPort<DigestQueue>('digestQueue', (deps) => ({ enqueue: (jobs) => sendJobs(deps, jobs) }));

/** A queued job from its body; throws on a body that is not one (its dead-letter queue keeps it). */
export function parseDigestJob(body: string): DigestJob {
  const job = JSON.parse(body) as Partial<DigestJob>;
  if (typeof job.organizationId !== 'string' || typeof job.day !== 'string' || !/^\d{4}-\d\d-\d\d$/.test(job.day)) throw new Error('not a digest job');
  return { organizationId: job.organizationId, day: job.day };
}
