/**
 * Hand-written stream records in the two shapes the fan-out receives:
 * - `aws`: what Lambda's DynamoDB event source delivers (seconds timestamps, hex event ids; a TTL
 *   expiry is a REMOVE by the DynamoDB service principal);
 * - `local`: a DynamoDB Local Streams API record (region `ddblocal`, UUID event ids, short sequence
 *   numbers, minute-precision Date timestamps; a TTL expiry has the event name
 *   `UNKNOWN_TO_SDK_VERSION`), converted by `toLambdaRecord` exactly as the local stream poller does.
 * The domain reads them as the stream adapter hands them over (deriveEvents, isTtlExpiry below).
 */
import { createHash } from 'node:crypto';
import { marshall } from '@aws-sdk/util-dynamodb';
import type { _Record } from '@aws-sdk/client-dynamodb-streams';
import type { DynamoDBRecord } from 'aws-lambda';
import { toLambdaRecord } from '../../../lib/local/stream-poller.js';
import { changeFromLambda } from '../../../functions/adapters/stream-records.js';
import { derive } from '../../../functions/core/events/derive.js';

export type Item = Record<string, unknown>;
export type Shape = 'aws' | 'local';
export type Change = 'INSERT' | 'MODIFY' | 'REMOVE' | 'TTL';

export const streamArns = {
  aws: 'arn:aws:dynamodb:us-east-1:123456789012:table/crm-prod-clients/stream/2026-11-01T00:00:00.000',
  local: 'arn:aws:dynamodb:ddblocal:000000000000:table/crm-local-clients/stream/2026-11-22T18:04:39.524',
};

export interface RecordOptions { sequence?: number; at?: Date | null; arn?: string }

let nextSequence = 1;
const av = (item: Item | undefined) => (item ? marshall(item, { removeUndefinedValues: true }) : undefined);
const keysOf = (item: Item) => marshall({ pk: item.pk, sk: item.sk });

/** One stream record of `change` with the given images; `at: null` leaves the creation time out. */
export function streamRecord(shape: Shape, change: Change, images: { old?: Item; new?: Item }, options: RecordOptions = {}): DynamoDBRecord {
  const sequence = options.sequence ?? nextSequence++;
  const at = options.at === undefined ? new Date('2026-11-02T09:15:00.000Z') : options.at;
  const arn = options.arn ?? streamArns[shape];
  const item = (images.new ?? images.old)!;
  if (shape === 'aws') {
    return {
      eventID: createHash('md5').update(String(sequence)).digest('hex'),
      eventName: (change === 'TTL' ? 'REMOVE' : change),
      eventVersion: '1.1',
      eventSource: 'aws:dynamodb',
      awsRegion: 'us-east-1',
      eventSourceARN: arn,
      ...(change === 'TTL' ? { userIdentity: { type: 'Service', principalId: 'dynamodb.amazonaws.com' } } : {}),
      dynamodb: {
        ...(at ? { ApproximateCreationDateTime: Math.floor(at.getTime() / 1000) } : {}),
        Keys: keysOf(item) as never,
        ...(images.new ? { NewImage: av(images.new) as never } : {}),
        ...(images.old ? { OldImage: av(images.old) as never } : {}),
        SequenceNumber: String(1_111_000_000_000_000_000_000n + BigInt(sequence)),
        SizeBytes: 321,
        StreamViewType: 'NEW_AND_OLD_IMAGES',
      },
    };
  }
  const local: _Record = {
    eventID: `6ef83aa7-e481-4e36-910b-${String(sequence).padStart(12, '0')}`,
    eventName: (change === 'TTL' ? 'UNKNOWN_TO_SDK_VERSION' : change) as _Record['eventName'],
    eventVersion: '1.1',
    eventSource: 'aws:dynamodb',
    awsRegion: 'ddblocal',
    dynamodb: {
      // DynamoDB Local rounds creation times down to the minute.
      ...(at ? { ApproximateCreationDateTime: new Date(Math.floor(at.getTime() / 60_000) * 60_000) } : {}),
      Keys: keysOf(item) as never,
      ...(images.new ? { NewImage: av(images.new) as never } : {}),
      ...(images.old ? { OldImage: av(images.old) as never } : {}),
      SequenceNumber: String(sequence).padStart(21, '0'),
      SizeBytes: 321,
      StreamViewType: 'NEW_AND_OLD_IMAGES',
    },
  };
  return toLambdaRecord(local, arn);
}

/** The time deriveEvents should report for a record made with `at` in `shape`. */
export const expectedTimestamp = (shape: Shape, at = new Date('2026-11-02T09:15:00.000Z')) =>
  new Date(shape === 'aws' ? Math.floor(at.getTime() / 1000) * 1000 : Math.floor(at.getTime() / 60_000) * 60_000).toISOString();

/** The events the domain derives from a Lambda-shaped record, converted as the stream adapter does. */
export const deriveEvents = (record: DynamoDBRecord) => derive(changeFromLambda(record)).events;

/** Whether the stream adapter reads a Lambda-shaped record as a TTL expiry. */
export const isTtlExpiry = (record: DynamoDBRecord) => changeFromLambda(record).kind === 'expire';
