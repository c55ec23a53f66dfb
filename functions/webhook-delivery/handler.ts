/** Delivery queue → signed POSTs with retries (functions/core/delivery/deliver.ts). */
import type { SQSEvent, SQSBatchResponse } from 'aws-lambda';
import { lambdaDeps } from '../core/platform/deps.js';
import { withMetrics } from '../core/platform/observability.js';
import { deliverSqsBatch } from './sqs-batch.js';

export const handler = withMetrics(async (event: SQSEvent): Promise<SQSBatchResponse> => deliverSqsBatch(await lambdaDeps(), event.Records));
