/**
 * Creates the topology's tables (keys, indexes, streams, TTL) and queues (with their redrive
 * policies) on the emulators. Idempotent: an existing table (persisted DynamoDB Local data) is kept.
 */
import {
  CreateTableCommand, DescribeTableCommand, UpdateTimeToLiveCommand, ResourceInUseException,
  type AttributeDefinition, type DynamoDBClient,
} from '@aws-sdk/client-dynamodb';
import { CreateQueueCommand, GetQueueAttributesCommand, type SQSClient } from '@aws-sdk/client-sqs';
import { tables, queues, type TableSpec, type QueueSpec, type TableName, type QueueName } from '../topology.js';

const localTableName = (name: string, prefix = 'crm-local') => `${prefix}-${name}`;

export async function createTable(dynamodb: DynamoDBClient, physicalName: string, spec: TableSpec): Promise<{ streamArn?: string }> {
  const attributes = new Map<string, AttributeDefinition>();
  const add = (k?: { name: string; type: string }) => k && attributes.set(k.name, { AttributeName: k.name, AttributeType: k.type as 'S' | 'N' });
  add(spec.partitionKey);
  add(spec.sortKey);
  spec.globalIndexes?.forEach((g) => (add(g.partitionKey), add(g.sortKey)));
  const keySchema = (p: { name: string }, s?: { name: string }) => [
    { AttributeName: p.name, KeyType: 'HASH' as const },
    ...(s ? [{ AttributeName: s.name, KeyType: 'RANGE' as const }] : []),
  ];
  try {
    await dynamodb.send(new CreateTableCommand({
      TableName: physicalName,
      BillingMode: 'PAY_PER_REQUEST',
      AttributeDefinitions: [...attributes.values()],
      KeySchema: keySchema(spec.partitionKey, spec.sortKey),
      GlobalSecondaryIndexes: spec.globalIndexes?.map((g) => ({
        IndexName: g.name, KeySchema: keySchema(g.partitionKey, g.sortKey), Projection: { ProjectionType: g.projection ?? 'ALL' },
      })),
      StreamSpecification: spec.stream ? { StreamEnabled: true, StreamViewType: spec.stream } : undefined,
    }));
    if (spec.ttlAttribute) {
      await dynamodb.send(new UpdateTimeToLiveCommand({ TableName: physicalName, TimeToLiveSpecification: { Enabled: true, AttributeName: spec.ttlAttribute } }));
    }
  } catch (error) {
    if (!(error instanceof ResourceInUseException)) throw error;
  }
  const { Table } = await dynamodb.send(new DescribeTableCommand({ TableName: physicalName }));
  return { streamArn: Table?.LatestStreamArn };
}

export async function createQueue(sqs: SQSClient, physicalName: string, spec: QueueSpec, deadLetterArn?: string): Promise<{ url: string; arn: string }> {
  const attributes: Record<string, string> = {
    VisibilityTimeout: String(spec.visibilityTimeoutSeconds),
    MessageRetentionPeriod: String(spec.retentionDays * 86_400),
  };
  if (spec.deadLetter && deadLetterArn) {
    attributes.RedrivePolicy = JSON.stringify({ deadLetterTargetArn: deadLetterArn, maxReceiveCount: spec.deadLetter.maxReceiveCount });
  }
  const { QueueUrl } = await sqs.send(new CreateQueueCommand({ QueueName: physicalName, Attributes: attributes }));
  const { Attributes } = await sqs.send(new GetQueueAttributesCommand({ QueueUrl, AttributeNames: ['QueueArn'] }));
  return { url: QueueUrl!, arn: Attributes!.QueueArn! };
}

export interface Provisioned {
  tables: Record<TableName, string>;
  streams: Partial<Record<TableName, string>>;
  queues: Record<QueueName, string>;
  queueArns: Record<QueueName, string>;
}

/** Every table and queue of the topology; dead-letter queues first so redrive policies can name them. */
export async function provisionTopology(dynamodb: DynamoDBClient, sqs: SQSClient, prefix = 'crm-local'): Promise<Provisioned> {
  const out: Provisioned = { tables: {} as Provisioned['tables'], streams: {}, queues: {} as Provisioned['queues'], queueArns: {} as Provisioned['queueArns'] };
  for (const [name, spec] of Object.entries(tables) as [TableName, TableSpec][]) {
    out.tables[name] = localTableName(name, prefix);
    const { streamArn } = await createTable(dynamodb, out.tables[name], spec);
    if (spec.stream) out.streams[name] = streamArn;
  }
  const ordered = (Object.entries(queues) as [QueueName, QueueSpec][]).sort(([, a], [, b]) => Number(!!a.deadLetter) - Number(!!b.deadLetter));
  for (const [name, spec] of ordered) {
    const dlqArn = spec.deadLetter ? out.queueArns[spec.deadLetter.queue as QueueName] : undefined;
    const { url, arn } = await createQueue(sqs, localTableName(name, prefix), spec, dlqArn);
    out.queues[name] = url;
    out.queueArns[name] = arn;
  }
  return out;
}
