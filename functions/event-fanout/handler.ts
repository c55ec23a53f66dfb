/** DynamoDB Streams (clients, work orders) → events → queued deliveries (functions/core/events/fanout.ts). */
import type { DynamoDBStreamEvent, DynamoDBBatchResponse } from 'aws-lambda';
import { lambdaDeps } from '../core/platform/deps.js';
import { fanOutStreamBatch } from './stream-batch.js';
import { instrumented } from '../adapters/instrumentation.js';

export const handler = instrumented(async (event: DynamoDBStreamEvent): Promise<DynamoDBBatchResponse> => fanOutStreamBatch(await lambdaDeps(), event.Records));
