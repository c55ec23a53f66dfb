/** Every minute (EventBridge rule; a timer locally): parked retries that fall due go back to the delivery queue (functions/core/delivery/sweep.ts). */
import { lambdaDeps } from '../core/platform/deps.js';
import { sweepDueDeliveries, type SweepOutcome } from '../core/delivery/sweep.js';
import { withMetrics } from '../core/platform/observability.js';
import { instrumented } from '../adapters/instrumentation.js';

export const handler = instrumented(withMetrics(async (): Promise<SweepOutcome> => sweepDueDeliveries(await lambdaDeps())));
