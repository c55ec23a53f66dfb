/**
 * Lambda's DynamoDB stream records as the domain's plain StreamChange (the same conversion the
 * fan-out's replay uses for the Streams API's records): shared by every function a table's stream feeds.
 */
import type { AttributeValue } from '@aws-sdk/client-dynamodb';
import type { DynamoDBRecord } from 'aws-lambda';
import { toStreamChange, type StreamChange } from '../core/events/stream-changes.js';

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
