/** Delivery queue → signed POSTs with retries (functions/core/delivery/deliver.ts). */
import type { SQSEvent, SQSBatchResponse } from 'aws-lambda';
import { lambdaDeps } from '../core/platform/deps.js';
import { deliverBatch } from '../core/delivery/deliver.js';
import { withMetrics } from '../core/platform/observability.js';

export const handler = withMetrics(async (event: SQSEvent): Promise<SQSBatchResponse> => deliverBatch(await lambdaDeps(), event.Records));
