/**
 * What a deployed function and its code agree on: the env vars naming the tables, queues and
 * secret a function is bound to (the stacks set them, lib/topology.ts names each binding with
 * these), the runtime configuration's parameter, the service name of logs and traces, the metrics
 * namespace. Pure data: lib/topology.ts reads it from here, so the domain never imports lib/.
 */

/** `rateWindows` + `TABLE` → `RATE_WINDOWS_TABLE`: each binding's env var, derived so no name is spelled twice. */
function envVarsOf<N extends string>(names: readonly N[], suffix: string): Record<N, string> {
  return Object.fromEntries(names.map((name) => [name, `${name.replace(/[A-Z]/g, (c) => `_${c}`).toUpperCase()}_${suffix}`])) as Record<N, string>;
}

/** The env var naming each table's physical name in a function bound to it (`ORGANIZATIONS_TABLE`, …). */
export const tableEnvVars = envVarsOf(['organizations', 'endpoints', 'rateWindows', 'clients', 'workOrders', 'deliveries', 'requestLog', 'idempotency'] as const, 'TABLE');
export type TableName = keyof typeof tableEnvVars;

/** The env var naming each queue's URL in a function bound to it (`DELIVERY_QUEUE_URL`, …). */
export const queueEnvVars = envVarsOf(['deliveryDlq', 'deliveryQueue', 'deliverySlowQueue', 'bulkDlq', 'bulkQueue', 'fanoutFailures', 'noticesDlq', 'noticesQueue', 'mailFeedbackDlq', 'mailFeedbackQueue', 'digestDlq', 'digestQueue'] as const, 'URL');
export type QueueName = keyof typeof queueEnvVars;

/** The env var naming each secret (its name in Secrets Manager) in a function bound to it. */
export const secretEnvVars = {
  settingsToken: 'SETTINGS_TOKEN_SECRET',
  noticeLinks: 'NOTICE_LINKS_SECRET',
} as const;
export type SecretName = keyof typeof secretEnvVars;

/** Env var naming the SSM parameter with the stage's runtime configuration (functions/core/platform/config.ts). */
export const settingsParameterEnvVar = 'SETTINGS_PARAMETER';
export const serviceName = 'crm-integration-api';
/** CloudWatch namespace of the functions' metrics (Powertools) and of the alarms on them. */
export const metricsNamespace = 'CrmIntegrationApi';

/**
 * The delivery queues' maxReceiveCount: how often one message may be received, a safety net for a
 * message whose receives keep breaking off (the delivery function records its delivery failed on
 * the last). It does not bound the attempts (platform/config.ts deliveryAttempts): every retry and
 * every deferral is a new message, and attempts are counted from the delivery record.
 */
export const deliveryMaxReceives = 10;

/**
 * The endpoints' routing fields, never `secrets`, and the hand-off marker's `handOffUntil`: what the
 * fan-out's grant may read (lib/topology.ts `readableFields`) and what it projects
 * (functions/core/delivery/endpoint-store.ts fanOutRead).
 */
export const endpointRoutingFields = ['pk', 'sk', 'id', 'organizationId', 'url', 'events', 'enabled', 'disabledReason', 'createdAt', 'handOffUntil'] as const;

/**
 * What the mailer learns from its stack rather than from the runtime configuration: the API's base
 * URL (the confirm and unsubscribe links in notices) and, on AWS, the SES configuration set every
 * notice is sent through (its bounces and complaints suppress the address: docs/notifications.md).
 */
export const mailerEnvVars = { publicApiUrl: 'PUBLIC_API_URL', sesConfigurationSet: 'SES_CONFIGURATION_SET' } as const;

/** How often one notices-queue message may be received before it moves to the notices dead-letter queue (each failed receive waits longer: platform/config.ts noticeRetrySeconds). */
export const noticesMaxReceives = 8;
/**
 * What the fan-out may write on the endpoints table: the hand-off marker's fields
 * (delivery/endpoint-store.ts markHandOff). `expiresAt` is the table's TTL attribute.
 */
export const handOffMarkerFields = ['pk', 'sk', 'handOffUntil', 'expiresAt'] as const;

/**
 * The partition of the organizations table that lists who gets a daily digest (one item per
 * recipient who picked it, kept by functions/core/notify/recipient-store.ts): the daily-digest
 * function's grant reads this partition alone.
 */
export const DIGEST_INDEX_PK = 'DIGEST#RECIPIENTS';
