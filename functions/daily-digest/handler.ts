/** Every hour (EventBridge rule; a timer locally), acting in the digest hour: the day before's digest of each organization with a digest recipient (functions/core/settings/daily-digest.ts). */
import { lambdaDeps } from '../core/platform/deps.js';
import { runDailyDigest } from '../core/settings/daily-digest.js';
import { withMetrics } from '../core/platform/observability.js';
import { instrumented } from '../adapters/instrumentation.js';

export const handler = instrumented(withMetrics(async (): Promise<{ day?: string; produced: number }> => runDailyDigest(await lambdaDeps())));
