/**
 * Least privilege, bound next to the name: granting a function access to a table or queue also
 * sets the env var that names it, so a function can never read a name it has no grant for (and
 * functions/core/clients.ts refuses names that are not set).
 */
import type { ITable } from 'aws-cdk-lib/aws-dynamodb';
import type { IQueue } from 'aws-cdk-lib/aws-sqs';
import type { Function as LambdaFunction } from 'aws-cdk-lib/aws-lambda';
import type { TableAccess, QueueAccess, TableSpec, QueueSpec } from '../topology.js';

export function bindTable(fn: LambdaFunction, table: ITable, spec: TableSpec, access: TableAccess): void {
  if (access === 'read') table.grantReadData(fn);
  else if (access === 'write') table.grantWriteData(fn);
  else table.grantReadWriteData(fn);
  fn.addEnvironment(spec.envVar, table.tableName);
}

export function bindQueue(fn: LambdaFunction, queue: IQueue, spec: QueueSpec, access: QueueAccess): void {
  if (access === 'send' || access === 'sendAndConsume') queue.grantSendMessages(fn);
  if (access === 'consume' || access === 'sendAndConsume') queue.grantConsumeMessages(fn);
  fn.addEnvironment(spec.envVar, queue.queueUrl);
}
