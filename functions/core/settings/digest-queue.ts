/**
 * The digest queue's one producer (docs/notifications.md "The daily digest"): the schedule's run
 * lists the organizations with a digest recipient and queues one message per organization and day,
 * 10 per SendMessageBatch call, DIGEST_SENDS_AT_ONCE calls at a time, the refused ones tried again; the daily-digest function makes each digest from its own message
 * (functions/daily-digest/sqs-batch.ts), so a large account is many short invocations. Tests put
 * an in-memory queue in its place (`digestQueuePort.with`).
 */
import { SendMessageBatchCommand } from '@aws-sdk/client-sqs';
import { inSqsBatches } from '../platform/batches.js';
import type { Deps } from '../platform/deps.js';
import { depsPort } from '../platform/deps-port.js';
import { MetricUnit } from '@aws-lambda-powertools/metrics';
import { metrics } from '../platform/observability.js';
import { BACKOFFS, retry } from '../platform/retry.js';

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

/** Rounds of a run's queueing: the jobs a round could not queue are tried again, after a backoff. */
export const DIGEST_QUEUE_ATTEMPTS = 3;

/** One round: every batch is tried even when one fails, so as many jobs as can be queued are; answers the jobs not queued and why. */
async function sendJobs(deps: Deps, jobs: DigestJob[]): Promise<{ failed: DigestJob[]; codes: string[] }> {
  const batches = inSqsBatches(jobs, (j) => Buffer.byteLength(JSON.stringify(j)));
  const failed: DigestJob[] = [];
  const codes: string[] = [];
  let next = 0;
  const worker = async () => {
    while (next < batches.length) {
      const batch = batches[next++];
      try {
        const out = await deps.sqs.send(new SendMessageBatchCommand({ QueueUrl: deps.queues.digestQueue, Entries: batch.map((job, n) => ({ Id: String(n), MessageBody: JSON.stringify(job) })) }));
        for (const f of out.Failed ?? []) {
          const job = batch[Number(f.Id)];
          if (job) failed.push(job);
          codes.push(f.Code ?? 'Failed');
        }
      } catch (error) {
        failed.push(...batch);
        codes.push((error as Error).name);
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(DIGEST_SENDS_AT_ONCE, batches.length) }, worker));
  return { failed, codes };
}

/**
 * The run's jobs queued, those refused tried again (DIGEST_QUEUE_ATTEMPTS rounds in all): the
 * schedule does not retry a failed run, and the next hour's run is past the digest hour, so a job
 * not queued here is an organization without its digest that day. Those left are counted
 * (DigestJobsUnqueued, alarmed: docs/operations.md "Alarm: notices") and fail the run.
 */
async function enqueueJobs(deps: Deps, jobs: DigestJob[]): Promise<void> {
  let pending = jobs;
  try {
    await retry(async () => {
      const { failed, codes } = await sendJobs(deps, pending);
      pending = failed;
      if (failed.length) throw new Error(`could not queue ${failed.length} digests: ${[...new Set(codes)].join(', ')}`);
    }, { backoff: BACKOFFS.digestQueue, attempts: DIGEST_QUEUE_ATTEMPTS, shouldRetry: () => true });
  } catch (error) {
    metrics.addMetric('DigestJobsUnqueued', MetricUnit.Count, pending.length);
    throw error;
  }
}

export const digestQueuePort = depsPort<DigestQueue>('digestQueue', (deps) => ({ enqueue: (jobs) => enqueueJobs(deps, jobs) }));

/** A queued job from its body; throws on a body that is not one (its dead-letter queue keeps it). */
export function parseDigestJob(body: string): DigestJob {
  const job = JSON.parse(body) as Partial<DigestJob>;
  if (typeof job.organizationId !== 'string' || typeof job.day !== 'string' || !/^\d{4}-\d\d-\d\d$/.test(job.day)) throw new Error('not a digest job');
  return { organizationId: job.organizationId, day: job.day };
}
