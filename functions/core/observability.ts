/**
 * Logger and metrics, set up once (Powertools). Structured JSON lines; keys and PII values are never
 * passed to them. POWERTOOLS_DEV / POWERTOOLS_LOG_LEVEL tune them locally.
 */
import { Logger } from '@aws-lambda-powertools/logger';
import { Metrics } from '@aws-lambda-powertools/metrics';
import { metricsNamespace, serviceName } from '../../lib/topology.js';

export const logger = new Logger({ serviceName });
export const metrics = new Metrics({ serviceName, namespace: metricsNamespace });
