/** Delivery queue → signed POSTs with retries (functions/core/delivery/deliver.ts). */
import type { SQSEvent, SQSBatchResponse } from 'aws-lambda';
import { lambdaDeps } from '../core/platform/deps.js';
import { deliverSqsBatch } from './sqs-batch.js';
import { instrumented } from '../adapters/instrumentation.js';

export const handler = instrumented(async (event: SQSEvent): Promise<SQSBatchResponse> => deliverSqsBatch(await lambdaDeps(), event.Records));
