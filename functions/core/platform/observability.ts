/**
 * Logger, metrics and tracer, set up once (Powertools). Structured JSON lines; keys and PII values
 * are never passed to them. POWERTOOLS_DEV / POWERTOOLS_LOG_LEVEL tune them locally. The tracer
 * records only on Lambda (X-Ray active): it is a no-op in the local stack, the CLI and tests.
 */
import { Logger } from '@aws-lambda-powertools/logger';
import { Metrics } from '@aws-lambda-powertools/metrics';
import { Tracer } from '@aws-lambda-powertools/tracer';
import { metricsNamespace, serviceName } from '../../../lib/topology.js';

export const logger = new Logger({ serviceName });
export const metrics = new Metrics({ serviceName, namespace: metricsNamespace });
/** X-Ray subsegments for every SDK call of a captured client (deps.ts): which table or queue call was slow. */
export const tracer = new Tracer({ serviceName, captureHTTPsRequests: false });

/**
 * Publishes what an invocation stored (EMF on stdout). Every handler ends with it, success or
 * failure: a metric left in the buffer is lost when the container is frozen. Skipped when empty
 * (Powertools warns on an empty publish).
 */
export function flushMetrics(): void {
  if (metrics.hasStoredMetrics()) metrics.publishStoredMetrics();
}

/** An edge's work that flushes its metrics at the end of every invocation, answered or thrown. */
export function withMetrics<A extends unknown[], R>(work: (...args: A) => Promise<R>): (...args: A) => Promise<R> {
  return async (...args) => {
    try {
      return await work(...args);
    } finally {
      flushMetrics();
    }
  };
}
