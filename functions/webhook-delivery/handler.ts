/** Delivery queue → signed POSTs with retries (functions/core/delivery/deliver.ts). */
import type { SQSEvent, SQSBatchResponse } from 'aws-lambda';
import { lambdaDeps } from '../core/clients.js';
import { deliverBatch } from '../core/delivery/deliver.js';

export const handler = async (event: SQSEvent): Promise<SQSBatchResponse> => deliverBatch(await lambdaDeps(), event.Records);
