/**
 * Every minute (EventBridge rule; a timer locally): parked retries that fall due go back to the
 * delivery queue (functions/core/delivery/sweep.ts), and notices the notices queue refused earlier
 * are handed over again (functions/core/notify/produce.ts redriveUnqueuedNotices). A re-drive that
 * fails leaves its notices for the next minute, never failing the sweep of deliveries.
 */
import { lambdaDeps } from '../core/platform/deps.js';
import { sweepDueDeliveries, type SweepOutcome } from '../core/delivery/sweep.js';
import { redriveUnqueuedNotices } from '../core/notify/produce.js';
import { logger, withMetrics } from '../core/platform/observability.js';
import { instrumented } from '../adapters/instrumentation.js';

export const handler = instrumented(withMetrics(async (): Promise<SweepOutcome & { noticesRedriven: number }> => {
  const deps = await lambdaDeps();
  const [swept, noticesRedriven] = await Promise.all([
    sweepDueDeliveries(deps),
    redriveUnqueuedNotices(deps).catch((error: unknown) => {
      logger.warn('unqueued notices: re-drive failed, tried again next minute', { error: (error as Error).name });
      return 0;
    }),
  ]);
  return { ...swept, noticesRedriven };
}));
