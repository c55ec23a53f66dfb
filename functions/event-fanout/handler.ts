/** DynamoDB Streams (clients, work orders) → events → queued deliveries (functions/core/events/fanout.ts). */
import type { DynamoDBStreamEvent, DynamoDBBatchResponse } from 'aws-lambda';
import { lambdaDeps } from '../core/clients.js';
import { fanOut } from '../core/events/fanout.js';

export const handler = async (event: DynamoDBStreamEvent): Promise<DynamoDBBatchResponse> => fanOut(await lambdaDeps(), event.Records);
