/**
 * A DynamoDB stream record as the domain reads it: a plain change of one item. A stream record
 * reaches us in two wire shapes with the same attribute-value marshalling, Lambda's event-source
 * record (functions/event-fanout) and the Streams API's GetRecords record (the replay of failed
 * batches); both go through toStreamChange, so both derive the same events with the same ids.
 */
import { unmarshall } from '@aws-sdk/util-dynamodb';

export type Item = Record<string, unknown>;

/** `expire`: DynamoDB deleted the item itself (TTL), which is no event. */
export type ChangeKind = 'insert' | 'modify' | 'remove' | 'expire';

export interface StreamChange {
  /** The stream's ARN: with the sequence number it names the change (event ids derive from both). */
  stream: string;
  sequenceNumber: string;
  kind: ChangeKind;
  keys: Item;
  /** Absent when the stream did not carry it, or when it was no readable DynamoDB image. */
  newImage?: Item;
  oldImage?: Item;
  /** Epoch ms (whole seconds): when the stream recorded the change, approximately. */
  approximateCreationTime?: number;
}

/** A marshalled item (DynamoDB's attribute-value map), as unmarshall takes it: no table SDK needed to read a change. */
type AttributeMap = Parameters<typeof unmarshall>[0];

/** What a Streams API GetRecords record carries that a change needs (the SDK's `_Record`, structurally). */
export interface StreamsApiRecord {
  eventName?: string;
  userIdentity?: { Type?: string; PrincipalId?: string };
  dynamodb?: { SequenceNumber?: string; Keys?: unknown; NewImage?: unknown; OldImage?: unknown; ApproximateCreationDateTime?: Date };
}

/** The fields both wire shapes carry, under neutral names. */
export interface StreamRecordFields {
  stream: string;
  eventName?: string;
  /** Who made the change (`userIdentity`): the DynamoDB service principal for a TTL deletion on AWS. */
  identity?: { type?: string; principalId?: string };
  sequenceNumber?: string;
  keys?: AttributeMap;
  newImage?: AttributeMap;
  oldImage?: AttributeMap;
  approximateCreationSeconds?: number;
}

/**
 * TTL deletions: AWS reports them as REMOVE by the DynamoDB service principal; DynamoDB Local (a
 * Java program) with an event name its SDK does not know, which arrives as the string
 * `UNKNOWN_TO_SDK_VERSION`. Any name other than the three is taken for one.
 */
function kindOf({ eventName, identity }: StreamRecordFields): ChangeKind {
  if (eventName === 'INSERT') return 'insert';
  if (eventName === 'MODIFY') return 'modify';
  if (eventName !== 'REMOVE') return 'expire';
  return identity?.type === 'Service' && identity.principalId === 'dynamodb.amazonaws.com' ? 'expire' : 'remove';
}

/** Numbers beyond 2^53 stay strings instead of becoming BigInts, which JSON cannot carry. */
const safeNumber = (text: string) => {
  const n = Number(text);
  return Math.abs(n) <= Number.MAX_SAFE_INTEGER ? n : text;
};
const plain = (av: AttributeMap | undefined): Item | undefined => (av ? unmarshall(av, { wrapNumbers: safeNumber }) : undefined);

/** Total: a record that carries no readable DynamoDB images becomes a change without images. */
export function toStreamChange(fields: StreamRecordFields): StreamChange {
  let images: Pick<StreamChange, 'newImage' | 'oldImage'> = {};
  try {
    images = { newImage: plain(fields.newImage), oldImage: plain(fields.oldImage) };
  } catch {
    // not a DynamoDB image: nothing the CRM wrote
  }
  let keys: Item = {};
  try {
    keys = plain(fields.keys) ?? {};
  } catch {
    // the images still name the item
  }
  const seconds = fields.approximateCreationSeconds;
  return {
    stream: fields.stream, sequenceNumber: fields.sequenceNumber ?? '', kind: kindOf(fields), keys, ...images,
    ...(typeof seconds === 'number' && Number.isFinite(seconds) ? { approximateCreationTime: seconds * 1000 } : {}),
  };
}

/** A GetRecords record of the stream `streamArn` (the record itself does not name its stream). */
export function changeFromStreamsApi(record: StreamsApiRecord, streamArn: string): StreamChange {
  const d = record.dynamodb ?? {};
  return toStreamChange({
    stream: streamArn,
    eventName: record.eventName,
    identity: record.userIdentity && { type: record.userIdentity.Type, principalId: record.userIdentity.PrincipalId },
    sequenceNumber: d.SequenceNumber,
    keys: d.Keys as AttributeMap | undefined,
    newImage: d.NewImage as AttributeMap | undefined,
    oldImage: d.OldImage as AttributeMap | undefined,
    // Whole seconds, as Lambda's event source delivers it: both paths stamp events alike.
    approximateCreationSeconds: d.ApproximateCreationDateTime ? Math.floor(new Date(d.ApproximateCreationDateTime).getTime() / 1000) : undefined,
  });
}
