/**
 * The one description of the system: tables, streams, queues, functions, their event sources and
 * the HTTP routes. The CDK stack (lib/stacks) and the local stack (lib/local) both loop over it;
 * adding a function or a table is one entry here. Pure data: no CDK or SDK imports.
 */

export type KeyType = 'S' | 'N';
export interface KeySpec { name: string; type: KeyType }

export interface TableSpec {
  /** Env var that names the table for every function bound to it. */
  envVar: string;
  partitionKey: KeySpec;
  sortKey?: KeySpec;
  /** Epoch-seconds attribute DynamoDB TTL deletes on. */
  ttlAttribute?: string;
  /** Tables whose changes become events carry a NEW_AND_OLD_IMAGES stream. */
  stream?: 'NEW_AND_OLD_IMAGES';
  globalIndexes?: { name: string; partitionKey: KeySpec; sortKey?: KeySpec }[];
}

const pk: KeySpec = { name: 'pk', type: 'S' };
const sk: KeySpec = { name: 'sk', type: 'S' };
const gsi1 = { name: 'gsi1', partitionKey: { name: 'gsi1pk', type: 'S' as const }, sortKey: { name: 'gsi1sk', type: 'S' as const } };

export const tables = {
  /** Organizations, API keys (by hash), webhook endpoints, notifications, usage counters. */
  organizations: { envVar: 'ORGANIZATIONS_TABLE', partitionKey: pk, sortKey: sk, globalIndexes: [gsi1] },
  /** Sliding-window rate-limit counters: one item per key per minute. */
  rateWindows: { envVar: 'RATE_WINDOWS_TABLE', partitionKey: pk, ttlAttribute: 'expiresAt' },
  /** CRM clients (leads included); its stream feeds the event fan-out. */
  clients: { envVar: 'CLIENTS_TABLE', partitionKey: pk, sortKey: sk, stream: 'NEW_AND_OLD_IMAGES', ttlAttribute: 'expiresAt' },
  /** Work orders, invoices and bookings as typed items; its stream feeds the event fan-out. */
  workOrders: { envVar: 'WORK_ORDERS_TABLE', partitionKey: pk, sortKey: sk, stream: 'NEW_AND_OLD_IMAGES', ttlAttribute: 'expiresAt' },
  /** One record per (event, endpoint) with every attempt; kept 30 days. */
  deliveries: { envVar: 'DELIVERIES_TABLE', partitionKey: pk, sortKey: sk, ttlAttribute: 'expiresAt', globalIndexes: [gsi1] },
  /** Per-organization request records, kept 30 days. */
  requestLog: { envVar: 'REQUEST_LOG_TABLE', partitionKey: pk, sortKey: sk, ttlAttribute: 'expiresAt' },
  /** Powertools idempotency records (its default attribute names). */
  idempotency: { envVar: 'IDEMPOTENCY_TABLE', partitionKey: { name: 'id', type: 'S' }, ttlAttribute: 'expiration' },
} satisfies Record<string, TableSpec>;
export type TableName = keyof typeof tables;

export interface QueueSpec {
  envVar: string;
  /** Seconds a received message stays invisible before it is handed out again. */
  visibilityTimeoutSeconds: number;
  retentionDays: number;
  /** Messages received this many times move to the named dead-letter queue. */
  deadLetter?: { queue: string; maxReceiveCount: number };
}
// (deadLetter.queue names another entry of `queues`; kept a string to avoid a circular type.)

export const queues = {
  /** Dead-letter queue of the delivery queue: deliveries that used all 5 attempts. */
  deliveryDlq: { envVar: 'DELIVERY_DLQ_URL', visibilityTimeoutSeconds: 30, retentionDays: 14 },
  /** One message per queued delivery; retries re-time it with ChangeMessageVisibility. */
  deliveryQueue: {
    envVar: 'DELIVERY_QUEUE_URL',
    // Lambda requires >= the function timeout; a crashed attempt is retried after this.
    visibilityTimeoutSeconds: 180,
    retentionDays: 14,
    deadLetter: { queue: 'deliveryDlq', maxReceiveCount: 5 },
  },
  /** On-failure destination of the stream event sources: batches the fan-out gave up on. */
  fanoutFailures: { envVar: 'FANOUT_FAILURES_QUEUE_URL', visibilityTimeoutSeconds: 30, retentionDays: 14 },
} satisfies Record<string, QueueSpec>;
export type QueueName = keyof typeof queues;

export type TableAccess = 'read' | 'write' | 'readWrite';
export type QueueAccess = 'send' | 'consume' | 'sendAndConsume';

export type EventSourceSpec =
  | {
      kind: 'stream';
      table: TableName;
      batchSize: number;
      /** Retries of a failing batch before it goes to the on-failure queue. */
      maxRetries: number;
      bisectOnError: boolean;
      onFailure: QueueName;
    }
  | { kind: 'queue'; queue: QueueName; batchSize: number; maxConcurrency: number };

export interface FunctionSpec {
  /** Folder under functions/ holding handler.ts (exports `handler`). */
  entry: string;
  description: string;
  timeoutSeconds: number;
  memoryMb: number;
  tables: Partial<Record<TableName, TableAccess>>;
  queues: Partial<Record<QueueName, QueueAccess>>;
  events: EventSourceSpec[];
}

export const functions = {
  leadIntake: {
    entry: 'lead-intake',
    description: 'POST/GET /api/webhook/leads: authenticate, rate-limit, validate, create the lead',
    timeoutSeconds: 10,
    memoryMb: 512,
    tables: { organizations: 'readWrite', rateWindows: 'readWrite', clients: 'write', requestLog: 'write', idempotency: 'readWrite' },
    queues: {},
    events: [],
  },
  eventFanout: {
    entry: 'event-fanout',
    description: 'Turns client and work-order stream records into events and queued deliveries',
    timeoutSeconds: 30,
    memoryMb: 512,
    tables: { organizations: 'read', deliveries: 'readWrite' },
    queues: { deliveryQueue: 'send' },
    events: [
      { kind: 'stream', table: 'clients', batchSize: 100, maxRetries: 10, bisectOnError: true, onFailure: 'fanoutFailures' },
      { kind: 'stream', table: 'workOrders', batchSize: 100, maxRetries: 10, bisectOnError: true, onFailure: 'fanoutFailures' },
    ],
  },
  webhookDelivery: {
    entry: 'webhook-delivery',
    description: 'Signs and POSTs queued deliveries, records attempts, schedules retries',
    timeoutSeconds: 30,
    memoryMb: 512,
    tables: { organizations: 'readWrite', deliveries: 'readWrite' },
    queues: { deliveryQueue: 'consume' },
    events: [{ kind: 'queue', queue: 'deliveryQueue', batchSize: 10, maxConcurrency: 10 }],
  },
} satisfies Record<string, FunctionSpec>;
export type FunctionName = keyof typeof functions;

export interface RouteSpec {
  method: 'GET' | 'POST';
  path: string;
  function: FunctionName;
}

export const routes: RouteSpec[] = [
  { method: 'GET', path: '/api/webhook/leads', function: 'leadIntake' },
  { method: 'POST', path: '/api/webhook/leads', function: 'leadIntake' },
];

/** Headers a browser may send cross-origin, and the ones it may read back (DESIGN §6 Browsers). */
export const cors = {
  allowOrigins: ['*'],
  allowHeaders: ['Content-Type', 'X-API-Key', 'Authorization', 'Idempotency-Key'],
  exposeHeaders: [
    'Retry-After', 'RateLimit', 'RateLimit-Policy',
    'X-RateLimit-Limit', 'X-RateLimit-Remaining', 'X-RateLimit-Reset', 'X-Request-Id',
  ],
  maxAgeSeconds: 600,
};

/** Env var naming the SSM parameter with the stage's runtime settings (functions/core/settings.ts). */
export const settingsParameterEnvVar = 'SETTINGS_PARAMETER';
export const settingsParameterName = (stage: string) => `/crm/${stage}/settings`;
export const serviceName = 'crm-integration-api';
/** CloudWatch namespace of the functions' metrics (Powertools) and of the alarms on them. */
export const metricsNamespace = 'CrmIntegrationApi';

/** CloudFormation output names, shared by the stack (writes them) and the CLI (reads them). */
const cap = (s: string) => s[0].toUpperCase() + s.slice(1);
export const outputKeys = {
  apiUrl: 'ApiUrl',
  table: (name: TableName) => `${cap(name)}Table`,
  queue: (name: QueueName) => `${cap(name)}Url`,
  settingsParameter: 'SettingsParameter',
};
export const stackName = (stage: string) => `Crm-${stage}`;
