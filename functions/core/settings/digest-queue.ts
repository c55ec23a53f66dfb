/**
 * The digest queue's one producer (docs/notifications.md "The daily digest"): the schedule's run
 * lists the organizations with a digest recipient and queues one message per organization and day,
 * 10 per SendMessageBatch call; the daily-digest function makes each digest from its own message
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

async function sendJobs(deps: Deps, jobs: DigestJob[]): Promise<void> {
  const bodies = jobs.map((j) => JSON.stringify(j));
  for (const batch of inSqsBatches(bodies, (b) => Buffer.byteLength(b))) {
    const out = await deps.sqs.send(new SendMessageBatchCommand({ QueueUrl: deps.queues.digestQueue, Entries: batch.map((body, n) => ({ Id: String(n), MessageBody: body })) }));
    if (out.Failed?.length) throw new Error(`could not queue ${out.Failed.length} digests: ${out.Failed.map((f) => f.Code).join(', ')}`);
  }
}

export const digestQueuePort = depsPort<DigestQueue>('digestQueue', (deps) => ({ enqueue: (jobs) => sendJobs(deps, jobs) }));

/** A queued job from its body; throws on a body that is not one (its dead-letter queue keeps it). */
export function parseDigestJob(body: string): DigestJob {
  const job = JSON.parse(body) as Partial<DigestJob>;
  if (typeof job.organizationId !== 'string' || typeof job.day !== 'string' || !/^\d{4}-\d\d-\d\d$/.test(job.day)) throw new Error('not a digest job');
  return { organizationId: job.organizationId, day: job.day };
}
