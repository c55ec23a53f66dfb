/**
 * Logger and metrics, set up once (Powertools). Structured JSON lines; keys and PII values
 * are never passed to them. POWERTOOLS_DEV / POWERTOOLS_LOG_LEVEL tune them locally. The tracer
 * is loaded on Lambda only (tracing.ts).
 */
import { Logger } from '@aws-lambda-powertools/logger';
import { Metrics } from '@aws-lambda-powertools/metrics';
import { metricsNamespace, serviceName } from './bindings.js';

export const logger = new Logger({ serviceName });
export const metrics = new Metrics({ serviceName, namespace: metricsNamespace });

/**
 * Publishes what an invocation stored (EMF on stdout). Every handler ends with it, success or
 * failure: a metric left in the buffer is lost when the container is frozen. Skipped when empty
 * (Powertools warns on an empty publish).
 */
export function flushMetrics(): void {
  if (metrics.hasStoredMetrics()) metrics.publishStoredMetrics();
}

/** An adapter.s work that flushes its metrics at the end of every invocation, answered or thrown. */
export function withMetrics<A extends unknown[], R>(work: (...args: A) => Promise<R>): (...args: A) => Promise<R> {
  return async (...args) => {
    try {
      return await work(...args);
    } finally {
      flushMetrics();
    }
  };
}
