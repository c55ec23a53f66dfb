/**
 * Every minute (EventBridge rule; a timer locally): parked retries that fall due go back to the
 * delivery queue (functions/core/delivery/sweep.ts), and notices the notices queue refused earlier
 * are handed over again (functions/core/notify/produce.ts redriveUnqueuedNotices, for at most 20 s).
 * A re-drive that fails leaves its notices for the next minute, never failing the sweep of deliveries.
 */
import { lambdaDeps } from '../core/platform/deps.js';
import { sweepDueDeliveries, type SweepOutcome } from '../core/delivery/sweep.js';
import type { Context } from 'aws-lambda';
import { REDRIVE_BUDGET_MS, redriveUnqueuedNotices } from '../core/notify/produce.js';
import { logger, withMetrics } from '../core/platform/observability.js';
import { instrumented } from '../adapters/instrumentation.js';

export const handler = instrumented(withMetrics(async (_event: unknown, context?: Partial<Context>): Promise<SweepOutcome & { noticesRedriven: number }> => {
  const deps = await lambdaDeps();
  // The re-drive's own budget, and never past the invocation's time-out (less a margin to finish the sweep and flush metrics).
  const remaining = typeof context?.getRemainingTimeInMillis === 'function' ? context.getRemainingTimeInMillis() - 10_000 : Infinity;
  const deadline = deps.now() + Math.min(REDRIVE_BUDGET_MS, remaining);
  const [swept, noticesRedriven] = await Promise.all([
    sweepDueDeliveries(deps),
    redriveUnqueuedNotices(deps, { deadline }).catch((error: unknown) => {
      logger.warn('unqueued notices: re-drive failed, tried again next minute', { error: (error as Error).name });
      return 0;
    }),
  ]);
  return { ...swept, noticesRedriven };
}));
