/**
 * The stream adapter of the fan-out: Lambda's DynamoDB stream batch in, partial batch response out. Each record
 * becomes a plain StreamChange (adapters/stream-records.ts, the same conversion the replay uses); the first
 * change the domain could not finish is reported, so the event source retries from there.
 */
import type { DynamoDBBatchResponse, DynamoDBRecord } from 'aws-lambda';
import type { Deps } from '../core/platform/deps.js';
import { fanOut } from '../core/events/fanout.js';
import { changeFromLambda } from '../adapters/stream-records.js';
import { withMetrics } from '../core/platform/observability.js';

/** The batch's metrics (e.g. TenantMismatch) are published when it ends, as every invocation's are. */
export const fanOutStreamBatch = withMetrics(async (deps: Deps, records: DynamoDBRecord[]): Promise<DynamoDBBatchResponse> => {
  const { failedFrom } = await fanOut(deps, records.map(changeFromLambda));
  return { batchItemFailures: failedFrom === undefined ? [] : [{ itemIdentifier: failedFrom }] };
});
