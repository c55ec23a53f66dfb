/** The deliveries table's stream → counters per endpoint and hour (functions/core/events/delivery-outcomes.ts, docs/settings.md "Statistics"). */
import type { DynamoDBStreamEvent } from 'aws-lambda';
import { lambdaDeps } from '../core/platform/deps.js';
import { instrumented } from '../adapters/instrumentation.js';
import { changeFromLambda } from '../adapters/stream-records.js';
import { withMetrics } from '../core/platform/observability.js';
import { outcomesOf } from '../core/events/delivery-outcomes.js';
import { recordDeliveryOutcomes } from '../core/delivery/record-statistics.js';
import type { Deps } from '../core/platform/deps.js';

/** Best effort (record-statistics.ts): a batch is never reported failed, so it is never counted twice by a retry. */
const countBatch = withMetrics(async (deps: Deps, event: DynamoDBStreamEvent): Promise<void> => {
  await recordDeliveryOutcomes(deps, outcomesOf(event.Records.map(changeFromLambda), deps.now()));
});

export const handler = instrumented(async (event: DynamoDBStreamEvent): Promise<void> => countBatch(await lambdaDeps(), event));
