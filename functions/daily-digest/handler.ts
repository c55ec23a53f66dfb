/**
 * Every hour (EventBridge rule; a timer locally), acting in the digest hour: one job per organization
 * with a digest recipient, queued on the digest queue; and the digest queue's messages: each
 * organization's digest of the day before (functions/core/settings/daily-digest.ts).
 */
import type { SQSEvent, SQSBatchResponse } from 'aws-lambda';
import { lambdaDeps } from '../core/platform/deps.js';
import { runDailyDigest } from '../core/settings/daily-digest.js';
import { withMetrics } from '../core/platform/observability.js';
import { instrumented } from '../adapters/instrumentation.js';
import { digestBatch } from './sqs-batch.js';

const fromQueue = (event: unknown): event is SQSEvent => Array.isArray((event as SQSEvent | undefined)?.Records);

export const handler = instrumented(withMetrics(async (event: unknown): Promise<SQSBatchResponse | { day?: string; queued: number }> => {
  const deps = await lambdaDeps();
  return fromQueue(event) ? digestBatch(deps, event.Records) : runDailyDigest(deps);
}));
