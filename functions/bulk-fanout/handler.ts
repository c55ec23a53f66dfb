/** Bulk queue → the recorded and queued deliveries of an organization's large share, or of a stretch after one (functions/core/events/bulk-share.ts). */
import type { SQSEvent, SQSBatchResponse } from 'aws-lambda';
import { lambdaDeps } from '../core/platform/deps.js';
import { fanOutBulkBatch } from './sqs-batch.js';
import { instrumented } from '../adapters/instrumentation.js';

export const handler = instrumented(async (event: SQSEvent): Promise<SQSBatchResponse> => fanOutBulkBatch(await lambdaDeps(), event.Records));
