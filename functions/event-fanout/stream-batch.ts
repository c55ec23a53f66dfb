/**
 * The stream adapter of the fan-out: Lambda's DynamoDB stream batch in, partial batch response out. Each record
 * becomes a plain StreamChange (the same conversion the replay uses); the first change the domain
 * could not finish is reported, so the event source retries from there.
 */
import type { AttributeValue } from '@aws-sdk/client-dynamodb';
import type { DynamoDBBatchResponse, DynamoDBRecord } from 'aws-lambda';
import type { Deps } from '../core/platform/deps.js';
import { fanOut } from '../core/events/fanout.js';
import { toStreamChange, type StreamChange } from '../core/events/stream-changes.js';
import { withMetrics } from '../core/platform/observability.js';

type AttributeMap = Record<string, AttributeValue>;

export function changeFromLambda(record: DynamoDBRecord): StreamChange {
  const identity = record.userIdentity as { type?: string; principalId?: string } | undefined;
  const d = record.dynamodb;
  return toStreamChange({
    stream: record.eventSourceARN ?? record.eventID ?? '',
    eventName: record.eventName,
    identity,
    sequenceNumber: d?.SequenceNumber,
    keys: d?.Keys as AttributeMap | undefined,
    newImage: d?.NewImage as AttributeMap | undefined,
    oldImage: d?.OldImage as AttributeMap | undefined,
    approximateCreationSeconds: d?.ApproximateCreationDateTime,
  });
}

/** The batch's metrics (e.g. TenantMismatch) are published when it ends, as every invocation's are. */
export const fanOutStreamBatch = withMetrics(async (deps: Deps, records: DynamoDBRecord[]): Promise<DynamoDBBatchResponse> => {
  const { failedFrom } = await fanOut(deps, records.map(changeFromLambda));
  return { batchItemFailures: failedFrom === undefined ? [] : [{ itemIdentifier: failedFrom }] };
});
