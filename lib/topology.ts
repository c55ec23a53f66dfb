/**
 * The one description of the system: tables, streams, queues, secrets, functions and their event
 * sources. The CDK stack (lib/stacks) and the local stack (lib/local) both loop over it; adding a
 * function or a table is one entry here. Pure data: no CDK or SDK imports. What the functions' code
 * shares with it (env var names, the endpoints' routing fields) it reads from
 * functions/core/platform/bindings.ts; the HTTP routes and the front door's answers, which run at
 * request time, live in functions/front-door/.
 */
import {
  DIGEST_INDEX_PK, deliveryMaxReceives, endpointRoutingFields, handOffMarkerFields, noticesMaxReceives, queueEnvVars, secretEnvVars, tableEnvVars,
  type QueueName, type SecretName, type TableName,
} from '../functions/core/platform/bindings.js';
import type { RoutedFunction } from '../functions/front-door/routes.js';

export type { QueueName, SecretName, TableName };
import { TRAIL_CLIENT_FIELDS } from '../functions/core/settings/trail-fields.js';
import { REQUEST_LOG_CLIENT_FIELDS } from '../functions/core/tenancy/request-log-fields.js';
import { ORGANIZATION_NAME_FIELDS, RECIPIENT_FIELDS, SUPPRESSION_FIELDS } from '../functions/core/notify/recipient-fields.js';

export type KeyType = 'S' | 'N';
export interface KeySpec { name: string; type: KeyType }

export interface TableSpec {
  /** Env var that names the table for every function bound to it. */
  envVar: string;
  partitionKey: KeySpec;
  sortKey?: KeySpec;
  /** Epoch-seconds attribute DynamoDB TTL deletes on. */
  ttlAttribute?: string;
  /**
   * Every item carries the TTL attribute: nothing in it outlives its retention, so AWS Backup keeps
   * no restore points of it (point-in-time recovery alone covers it; docs/operations.md "Backups").
   */
  everyItemExpires?: true;
  /** Tables whose changes become events carry a NEW_AND_OLD_IMAGES stream. */
  stream?: 'NEW_AND_OLD_IMAGES';
  /** `projection` absent: ALL (every attribute copied: each write of the item writes the index too). */
  globalIndexes?: { name: string; partitionKey: KeySpec; sortKey?: KeySpec; projection?: 'KEYS_ONLY' }[];
  /**
   * What a `readFields` grant may read (a Query with these in its ProjectionExpression and Select
   * SPECIFIC_ATTRIBUTES, enforced by IAM conditions): the endpoints' routing fields, never `secrets`.
   */
  readableFields?: readonly string[];
}

const pk: KeySpec = { name: 'pk', type: 'S' };
const sk: KeySpec = { name: 'sk', type: 'S' };
const gsi1 = { name: 'gsi1', partitionKey: { name: 'gsi1pk', type: 'S' as const }, sortKey: { name: 'gsi1sk', type: 'S' as const } };

export const tables = {
  /** Organizations, API keys (by hash), notifications, usage counters. */
  organizations: { envVar: tableEnvVars.organizations, partitionKey: pk, sortKey: sk, globalIndexes: [gsi1] },
  /** Webhook endpoints, their signing secrets and bound: a table lead intake cannot reach (docs/decisions.md). */
  // TTL: the fan-out's hand-off markers expire (delivery/endpoint-store.ts markHandOff); no other item has expiresAt.
  endpoints: { envVar: tableEnvVars.endpoints, partitionKey: pk, sortKey: sk, readableFields: endpointRoutingFields, ttlAttribute: 'expiresAt' },
  /** Rate-limit counters: one item per key per 10 s sub-window (functions/core/tenancy/rate-limit.ts). */
  rateWindows: { envVar: tableEnvVars.rateWindows, partitionKey: pk, ttlAttribute: 'expiresAt', everyItemExpires: true },
  /** CRM clients (leads included); its stream feeds the event fan-out. */
  // `match`: a lead's earlier clients by e-mail (else phone), newest first; sparse and keys-only, 1 write unit a lead (docs/leads.md).
  clients: {
    envVar: tableEnvVars.clients, partitionKey: pk, sortKey: sk, stream: 'NEW_AND_OLD_IMAGES', ttlAttribute: 'expiresAt',
    globalIndexes: [{ name: 'match', partitionKey: { name: 'matchKey', type: 'S' }, sortKey: sk, projection: 'KEYS_ONLY' }],
  },
  /** Work orders, invoices and bookings as typed items; its stream feeds the event fan-out. */
  workOrders: { envVar: tableEnvVars.workOrders, partitionKey: pk, sortKey: sk, stream: 'NEW_AND_OLD_IMAGES', ttlAttribute: 'expiresAt' },
  /** One record per (event, endpoint) with every attempt; kept 30 days. */
  // Every index keys-only: a record's updates (attempts, status) write no index; `due` is sparse,
  // written only while a retry is parked out of the queue (docs/capacity.md). gsi1 (find by id) is
  // no longer written: records from before are read through it until they expire, then it goes
  // (docs/deploy.md "Deploy order"). Its stream feeds the delivery statistics (functions/delivery-statistics):
  // outcomes are counted from the records' own changes, per stream batch, with no write added to a delivery.
  deliveries: {
    envVar: tableEnvVars.deliveries, partitionKey: pk, sortKey: sk, ttlAttribute: 'expiresAt', everyItemExpires: true, stream: 'NEW_AND_OLD_IMAGES',
    globalIndexes: [
      { ...gsi1, projection: 'KEYS_ONLY' }, { name: 'due', partitionKey: { name: 'duePk', type: 'S' }, sortKey: { name: 'dueAt', type: 'N' }, projection: 'KEYS_ONLY' },
      // The settings API's lists, newest first per organization (functions/core/settings/delivery-summaries.ts):
      // delivery records only (event items have no createdAt); written once per record, as its keys never change.
      { name: 'byCreated', partitionKey: { name: 'pk', type: 'S' }, sortKey: { name: 'createdAt', type: 'S' }, projection: 'KEYS_ONLY' },
    ],
  },
  /** Per-organization request records, kept 30 days. */
  requestLog: { envVar: tableEnvVars.requestLog, partitionKey: pk, sortKey: sk, ttlAttribute: 'expiresAt', everyItemExpires: true },
  /** Powertools idempotency records (its default attribute names). */
  idempotency: { envVar: tableEnvVars.idempotency, partitionKey: { name: 'id', type: 'S' }, ttlAttribute: 'expiration', everyItemExpires: true },
} satisfies Record<TableName, TableSpec>;

export interface QueueSpec {
  envVar: string;
  /** Seconds a received message stays invisible before it is handed out again. */
  visibilityTimeoutSeconds: number;
  retentionDays: number;
  /** Messages received this many times move to the named dead-letter queue (another entry of `queues`; a string to avoid a circular type). */
  deadLetter?: { queue: string; maxReceiveCount: number };
  /** A working queue whose messages exist nowhere else (nothing can rebuild them): retained with the stack, like a dead-letter queue. */
  holdsOnlyCopy?: boolean;
}

/** The delivery queues' maxReceiveCount (functions/core/platform/bindings.ts). */
const MAX_RECEIVES = deliveryMaxReceives;

export const queues = {
  /** Dead-letter queue of the delivery queue: deliveries that used all their attempts (the retry schedule's delays + 1). */
  deliveryDlq: { envVar: queueEnvVars.deliveryDlq, visibilityTimeoutSeconds: 30, retentionDays: 14 },
  /** One message per attempt. A retry is a new message (delayed ≤ 15 min) or waits in the due index (docs/webhooks.md). */
  deliveryQueue: {
    envVar: queueEnvVars.deliveryQueue,
    // AWS recommends >= 6 x the consuming function's time-out (30 s) for an SQS event source, so
    // Lambda's own retries of a throttled batch fit in; a crashed attempt is retried after this.
    visibilityTimeoutSeconds: 180,
    retentionDays: 14,
    // Exhausted deliveries are sent to the dead-letter queue by the delivery function, after 5
    // attempts counted from the delivery record (queue.ts attemptNumberOf). This is the safety net
    // above them: a message whose receives keep breaking off before an attempt (throttled batches,
    // crashes) moves after 10 receives, and deliver.ts records it failed on the last one.
    deadLetter: { queue: 'deliveryDlq', maxReceiveCount: MAX_RECEIVES },
  },
  /**
   * The slow lane (docs/architecture.md#fair-delivery): deliveries of endpoints that fail, time out or answer slowly, moved
   * here by the delivery function (functions/core/delivery/circuit-store.ts) and attempted with a
   * concurrency of their own (slowLaneMaxConcurrency), so they never hold the main lane's.
   */
  deliverySlowQueue: {
    envVar: queueEnvVars.deliverySlowQueue,
    visibilityTimeoutSeconds: 180,
    retentionDays: 14,
    deadLetter: { queue: 'deliveryDlq', maxReceiveCount: MAX_RECEIVES },
  },
  /** Dead-letter queue of the bulk queue: shares the bulk fan-out failed to record 20 times (`crm events replay-bulk` moves them back). */
  bulkDlq: { envVar: queueEnvVars.bulkDlq, visibilityTimeoutSeconds: 30, retentionDays: 14 },
  /**
   * An organization's large share of a stream batch (an import), handed off by the fan-out's lane in
   * compact messages and recorded by the bulk fan-out (docs/capacity.md "Fan-out lanes"). 6 x its time-out.
   * The only copy of those deliveries, run against a throttled partition: 20 receives (a repeat
   * creates nothing twice), and kept with the stack like a dead-letter queue.
   */
  bulkQueue: {
    envVar: queueEnvVars.bulkQueue, visibilityTimeoutSeconds: 180, retentionDays: 14, holdsOnlyCopy: true,
    deadLetter: { queue: 'bulkDlq', maxReceiveCount: 20 },
  },
  /** On-failure destination of the stream event sources: batches the fan-out gave up on. */
  fanoutFailures: { envVar: queueEnvVars.fanoutFailures, visibilityTimeoutSeconds: 30, retentionDays: 14 },
  /** Dead-letter queue of the notices queue: notices the mailer could not send in noticesMaxReceives tries (docs/notifications.md). */
  noticesDlq: { envVar: queueEnvVars.noticesDlq, visibilityTimeoutSeconds: 30, retentionDays: 14 },
  /**
   * One message per notice (functions/core/notify/notices-queue.ts, its one producer) and per
   * confirmation e-mail: the mailer sends it to each recipient who asked for it. A failed try waits
   * (the mailer sets its visibility, noticeRetrySeconds), then moves to the dead-letter queue. 6 x the mailer's time-out.
   */
  noticesQueue: {
    envVar: queueEnvVars.noticesQueue, visibilityTimeoutSeconds: 180, retentionDays: 14,
    deadLetter: { queue: 'noticesDlq', maxReceiveCount: noticesMaxReceives },
  },
  /** Dead-letter queue of the mail feedback queue: SES events the mail-feedback function could not record. */
  mailFeedbackDlq: { envVar: queueEnvVars.mailFeedbackDlq, visibilityTimeoutSeconds: 30, retentionDays: 14 },
  /** SES bounces and complaints (EventBridge on AWS), recorded by the mail-feedback function as suppressed addresses. */
  mailFeedbackQueue: {
    envVar: queueEnvVars.mailFeedbackQueue, visibilityTimeoutSeconds: 60, retentionDays: 14,
    deadLetter: { queue: 'mailFeedbackDlq', maxReceiveCount: 5 },
  },
  /** Dead-letter queue of the digest queue: organizations whose digest of a day could not be made in 3 tries. */
  digestDlq: { envVar: queueEnvVars.digestDlq, visibilityTimeoutSeconds: 30, retentionDays: 14 },
  /**
   * One message per organization and day (functions/core/settings/digest-queue.ts, its one
   * producer: the daily-digest schedule), consumed by the same function: a large account's digests
   * are many short invocations, not one that outlives Lambda's limits. 6 x its time-out. Kept a day:
   * a digest later than that is not worth sending.
   */
  digestQueue: {
    envVar: queueEnvVars.digestQueue, visibilityTimeoutSeconds: 6 * 60, retentionDays: 1,
    deadLetter: { queue: 'digestDlq', maxReceiveCount: 3 },
  },
} satisfies Record<QueueName, QueueSpec>;

/**
 * Secrets (AWS Secrets Manager): generated by the stack, never in the template; a function bound to
 * one gets GetSecretValue on it alone and the env var naming it. The local stack serves them from
 * files under .local/ through a Secrets Manager stand-in (lib/local/secrets-stand-in.ts).
 */
export interface SecretSpec { envVar: string; description: string }
export const secrets = {
  /** HMAC key of the settings session tokens (functions/core/settings/session-token.ts, docs/settings.md). */
  settingsToken: { envVar: secretEnvVars.settingsToken, description: 'Signs the session tokens of the organization settings (HS256)' },
  /** HMAC key of the confirm and unsubscribe links in notices (functions/core/notify/notice-links.ts). */
  noticeLinks: { envVar: secretEnvVars.noticeLinks, description: 'Signs the confirm and unsubscribe links of notice e-mails (HMAC-SHA256)' },
} satisfies Record<SecretName, SecretSpec>;
/** The secret's name in Secrets Manager (and in the local stand-in). */
export const secretName = (stage: string, name: SecretName) => `crm/${stage}/${name}`;

/**
 * `readFields`: Query only, projecting the table's `readableFields` alone (IAM-enforced).
 * `readUpdate`: reads, PutItem and UpdateItem (in transactions too), never DeleteItem or BatchWriteItem.
 * An object: exactly the actions named (on the table, and on one of its indexes), where the sets
 * above would give more than the job needs (Scan, BatchGetItem on PII); with `attributes`, reads
 * on the table that project those attributes alone (IAM-enforced); with `leadingKeys`, only items
 * whose partition key matches one of these patterns (`dynamodb:LeadingKeys`, IAM-enforced).
 */
export type TableGrant = {
  actions: readonly string[]; index?: { name: string; actions: readonly string[] }; attributes?: readonly string[];
  /** Only items under these partition keys (IAM's `dynamodb:LeadingKeys`, exact values). */
  leadingKeys?: readonly string[];
};
/** A list of grants: each its own statement (e.g. GetItem projecting some attributes, Query projecting others). */
export type TableAccess = 'read' | 'readFields' | 'readUpdate' | 'write' | 'readWrite' | TableGrant | readonly TableGrant[];
/** `consumeWithBackoff`: consume, and set a failed message's visibility (ChangeMessageVisibility) so its next try waits. */
export type QueueAccess = 'send' | 'consume' | 'sendAndConsume' | 'consumeWithBackoff';

/**
 * A Lambda event filter pattern, of the forms used here: a field's allowed values (exact strings or
 * `{ prefix }`), nested objects for nested fields. Matched against the record as the function gets it.
 */
export interface FilterPattern { readonly [field: string]: FilterPattern | readonly (string | { prefix: string })[] }

export type EventSourceSpec =
  | {
      kind: 'stream';
      table: TableName;
      batchSize: number;
      /**
       * Batches of one shard processed at once (Lambda's ParallelizationFactor, 1..10); records of
       * one partition key stay in order in one lane. Every CRM item of an organization has the
       * partition key `ORG#…`, so one organization's import holds one lane (docs/capacity.md).
       */
      parallelizationFactor: number;
      /** Retries of a failing batch before it goes to the on-failure queue (or, without one, is dropped). */
      maxRetries: number;
      bisectOnError: boolean;
      /** Where a batch that kept failing is recorded for replay; absent where losing it loses nothing durable (statistics). */
      onFailure?: QueueName;
      /** Lambda's MaximumBatchingWindowInSeconds (0..300): gathers records for this long before invoking, so a batch sums more. */
      batchingWindowSeconds?: number;
      /**
       * Lambda's event filtering (FilterCriteria): only records matching this pattern reach the
       * function, the others are skipped unbilled; the local poller applies the same pattern
       * (lib/local/stream-filter.ts).
       */
      filter?: FilterPattern;
    }
  | { kind: 'queue'; queue: QueueName; batchSize: number; maxConcurrency: number }
  /**
   * Invoked on a fixed rate: an EventBridge rule on AWS, a timer in the local stack (same handler).
   * `oneAtATime`: reserved concurrency 1 on AWS (the stage's sweeperReservedConcurrency), so a run
   * still going makes the next one wait; only for a function with no other event source (a queue's
   * mapping would be throttled by it).
   */
  | { kind: 'schedule'; rateMinutes: number; oneAtATime?: true };

/**
 * Delivery batches (of 10) attempted at once, all organizations together: sized in
 * docs/capacity.md ("Delivery concurrency") for the planned peak of 200 leads/s at 5 events per
 * lead (1,000–1,250 deliveries/s, a batch taking ~0.55 s) with twice the headroom; a deploy may set
 * another (the stage's `deliveryMaxConcurrency` in lib/stages.ts, 2..1000).
 */
export const deliveryMaxConcurrency = 150;
/**
 * Slow-lane batches attempted at once: everything failing, hanging or slow shares it; an open
 * circuit parks its deliveries instead of attempting them, so it holds only the endpoints still
 * being tried (docs/capacity.md "Delivery concurrency", docs/decisions.md "Fair delivery").
 */
export const slowLaneMaxConcurrency = 10;

export interface FunctionSpec {
  /** Folder under functions/ holding handler.ts (exports `handler`). */
  entry: string;
  description: string;
  timeoutSeconds: number;
  memoryMb: number;
  tables: Partial<Record<TableName, TableAccess>>;
  queues: Partial<Record<QueueName, QueueAccess>>;
  events: EventSourceSpec[];
  /** Secrets the function reads (GetSecretValue only). */
  secrets?: Partial<Record<SecretName, 'read'>>;
  /** Sends e-mail through SES (ses:SendEmail, ses:SendRawEmail on the stage's identity and configuration set only). */
  sendsMail?: true;
  /**
   * A folder under functions/<entry>/ of static files the function reads at run time (relative to
   * its module, `new URL('./<folder>/...', import.meta.url)`): the bundling copies it next to index.mjs.
   */
  assets?: string;
}

export const functions = {
  leadIntake: {
    entry: 'lead-intake',
    description: 'POST/GET /api/webhook/leads: authenticate, rate-limit, validate, create the lead',
    timeoutSeconds: 10,
    memoryMb: 512,
    tables: {
      // Keys, wallet and usage are updated, never deleted: no DeleteItem or BatchWriteItem on organizations.
      organizations: 'readUpdate', rateWindows: 'readWrite', requestLog: 'write', idempotency: 'readWrite',
      // Writes a client (alone or in the prepaid transaction), reads one by its key and queries the
      // match index (docs/leads.md "Duplicates"): no Scan, no BatchGetItem of other clients.
      clients: { actions: ['dynamodb:PutItem', 'dynamodb:UpdateItem', 'dynamodb:ConditionCheckItem', 'dynamodb:GetItem'], index: { name: 'match', actions: ['dynamodb:Query'] } },
    },
    queues: {},
    events: [],
  },
  eventFanout: {
    entry: 'event-fanout',
    description: 'Turns client and work-order stream records into events and queued deliveries',
    timeoutSeconds: 30,
    memoryMb: 512,
    // Routing fields only: the fan-out never reads a signing secret. It writes the hand-off marker's
    // fields alone (docs/decisions.md "Fair under volume"): UpdateItem, no Put or Delete. rateWindows:
    // the lead notices' cap counter, an UpdateItem of it and of the batch's answer, a GetItem of that answer (functions/core/notify/notice-cap-store.ts), NOTICES# items alone.
    tables: {
      endpoints: [{ actions: ['dynamodb:Query'], attributes: endpointRoutingFields }, { actions: ['dynamodb:UpdateItem'], attributes: handOffMarkerFields }],
      deliveries: 'readWrite', rateWindows: { actions: ['dynamodb:UpdateItem', 'dynamodb:GetItem'], leadingKeys: ['NOTICES#*'] },
    },
    // An organization's large share goes to the bulk queue instead of being recorded in the lane;
    // the batch's lead notices to the notices queue (functions/core/events/lead-notices.ts).
    queues: { deliveryQueue: 'send', bulkQueue: 'send', noticesQueue: 'send' },
    events: [
      { kind: 'stream', table: 'clients', batchSize: 400, parallelizationFactor: 10, maxRetries: 10, bisectOnError: true, onFailure: 'fanoutFailures' },
      { kind: 'stream', table: 'workOrders', batchSize: 400, parallelizationFactor: 10, maxRetries: 10, bisectOnError: true, onFailure: 'fanoutFailures' },
    ],
  },
  webhookDelivery: {
    entry: 'webhook-delivery',
    description: 'Signs and POSTs queued deliveries, records attempts, schedules retries',
    timeoutSeconds: 30,
    memoryMb: 512,
    tables: { endpoints: 'readWrite', deliveries: 'readWrite' },
    // A retry is re-sent as a delayed message; an exhausted delivery is sent to the dead-letter queue.
    // The slow lane: an unhealthy endpoint's deliveries are moved there (and parked there by an open circuit).
    // An endpoint paused or disabled is a notice (functions/core/delivery/endpoint-notices.ts).
    queues: { deliveryQueue: 'sendAndConsume', deliveryDlq: 'send', deliverySlowQueue: 'sendAndConsume', noticesQueue: 'send' },
    events: [
      { kind: 'queue', queue: 'deliveryQueue', batchSize: 10, maxConcurrency: deliveryMaxConcurrency },
      { kind: 'queue', queue: 'deliverySlowQueue', batchSize: 10, maxConcurrency: slowLaneMaxConcurrency },
    ],
  },
  bulkFanout: {
    entry: 'bulk-fanout',
    description: 'Records and queues the deliveries of an organization\'s large share (and its stretches after one), handed off by the event fan-out',
    timeoutSeconds: 30,
    memoryMb: 512,
    // The messages carry the planned deliveries (endpoint ids and states): no endpoint read. On
    // deliveries only recordDeliveries' BatchGetItem and the records' and event items' BatchWriteItem puts.
    tables: { deliveries: { actions: ['dynamodb:BatchGetItem', 'dynamodb:BatchWriteItem'] } },
    queues: { bulkQueue: 'consume', deliveryQueue: 'send' },
    // One message (≤ 100 events) per batch; 3 at once: one importer's partition takes ~1,000 WRU/s,
    // more would only throttle each other (fair queues do not cap one group) (docs/capacity.md).
    events: [{ kind: 'queue', queue: 'bulkQueue', batchSize: 1, maxConcurrency: 3 }],
  },
  deliveryStatistics: {
    entry: 'delivery-statistics',
    description: 'Counts delivery outcomes per endpoint and hour from the deliveries table\'s stream, one write per endpoint-hour a batch touched',
    timeoutSeconds: 30,
    memoryMb: 512,
    // Adds to its counters only (their `STATS#<org>` partitions): no read, no write of a delivery record.
    tables: { deliveries: { actions: ['dynamodb:UpdateItem'], leadingKeys: ['STATS#*'] } },
    queues: {},
    // A minute's records per invocation (docs/capacity.md "Statistics"); a batch that keeps failing is
    // dropped after its retries: statistics are best effort, the delivery log is the record.
    // Only delivery records' inserts and changes: not TTL deletes, event items or its own counters (docs/capacity.md "Statistics").
    events: [{
      kind: 'stream', table: 'deliveries', batchSize: 1000, parallelizationFactor: 4, maxRetries: 2, bisectOnError: false, batchingWindowSeconds: 60,
      filter: { eventName: ['INSERT', 'MODIFY'], dynamodb: { Keys: { sk: { S: [{ prefix: 'DELIVERY#' }] } } } },
    }],
  },
  deliverySweeper: {
    entry: 'delivery-sweeper',
    description: 'Every minute: re-queues the deliveries parked in the due index whose retry falls due, and the notices the notices queue refused',
    timeoutSeconds: 60,
    memoryMb: 256,
    tables: { deliveries: 'readWrite' },
    // Notices kept while the notices queue refused them (functions/core/notify/unqueued-notices-store.ts) are handed over again.
    queues: { deliveryQueue: 'send', noticesQueue: 'send' },
    events: [{ kind: 'schedule', rateMinutes: 1, oneAtATime: true }],
  },
  dailyDigest: {
    entry: 'daily-digest',
    description: 'Every hour, acting once a day: queues the day before\'s digest of each organization with a digest recipient, then makes each from its own message',
    // One organization's digest per message (at most DIGEST_READ_BUDGET deliveries read); the schedule's run only lists and queues.
    timeoutSeconds: 60,
    memoryMb: 256,
    tables: {
      // What the settings page's lists read, no more (functions/core/settings/daily-digest.ts): the
      // day's lead rows (who sent each lead and when, never contact details), the day's deliveries
      // through the byCreated index, the endpoints' routing fields.
      clients: { actions: ['dynamodb:Query'], attributes: REQUEST_LOG_CLIENT_FIELDS },
      deliveries: { actions: ['dynamodb:BatchGetItem'], index: { name: 'byCreated', actions: ['dynamodb:Query'] } },
      endpoints: 'readFields',
      // The organizations with a digest recipient: the recipients store's digest index items, nothing else of that table.
      organizations: { actions: ['dynamodb:Query'], leadingKeys: [DIGEST_INDEX_PK] },
    },
    queues: { noticesQueue: 'send', digestQueue: 'sendAndConsume' },
    events: [{ kind: 'schedule', rateMinutes: 60 }, { kind: 'queue', queue: 'digestQueue', batchSize: 1, maxConcurrency: 2 }],
  },
  settingsApi: {
    entry: 'settings-api',
    description: 'Organization settings: the management API (/api/settings/...) and the settings page (/settings)',
    // Sending a test event waits (bounded) for its first attempt's outcome.
    timeoutSeconds: 20,
    memoryMb: 512,
    tables: {
      organizations: 'readWrite', endpoints: 'readWrite', rateWindows: 'readWrite', deliveries: 'readWrite', requestLog: 'readWrite',
      // A lead's trail reads one client by its key (settings/lead-trail.ts), only the trail's fields;
      // the request log queries the clients leads created (settings/request-log-read.ts), only who sent
      // each and when. Never a scan, never the contact details, consent proofs, addresses.
      clients: [
        { actions: ['dynamodb:GetItem'], attributes: ['pk', 'sk', ...TRAIL_CLIENT_FIELDS] },
        { actions: ['dynamodb:Query'], attributes: REQUEST_LOG_CLIENT_FIELDS },
      ],
    },
    // Test events and re-deliveries are queued; never the shared dead-letter queue (redeliver.ts RedeliverOptions).
    // A new notice recipient's confirmation e-mail is queued for the mailer.
    queues: { deliveryQueue: 'send', noticesQueue: 'send' },
    events: [],
    // noticeLinks: the public confirm and unsubscribe pages check their links (docs/notifications.md).
    secrets: { settingsToken: 'read', noticeLinks: 'read' },
    // The settings page's HTML, CSS and script (functions/settings-api/page.ts serves them).
    assets: 'page',
  },
  mailer: {
    entry: 'mailer',
    description: 'Sends each queued notice to the confirmed recipients who asked for it, once per recipient, through SMTP or SES',
    timeoutSeconds: 30,
    memoryMb: 256,
    tables: {
      // The recipients (a Query of the organization's RECIPIENT# items) and the organization's name,
      // projected (recipient-store.ts): never a whole item (a wallet, a key's hash). Its one write is
      // mail-feedback's: an address the mail server refused for good suppressed (notify/mailer.ts),
      // an UpdateItem naming the suppression's attributes alone.
      organizations: [
        { actions: ['dynamodb:GetItem'], attributes: [...RECIPIENT_FIELDS, ...ORGANIZATION_NAME_FIELDS] },
        { actions: ['dynamodb:Query'], attributes: RECIPIENT_FIELDS },
        // An organization's own items (its recipients, its SUPPRESSED# records), never an API key's lookup item.
        { actions: ['dynamodb:UpdateItem'], attributes: SUPPRESSION_FIELDS, leadingKeys: ['ORG#*'] },
      ],
      // The sent marks alone (notify/notice-mark-store.ts: `notice#…` items with a TTL), not the lead endpoint's idempotency records beside them.
      idempotency: { actions: ['dynamodb:GetItem', 'dynamodb:UpdateItem'], leadingKeys: ['notice#*'] },
      // A leads summary claims its window's count when it is sent (notify/notice-cap-store.ts): the lead notices' counters alone, not the rate limits beside them;
      // and the addresses refused in a window, counted for the suppression breaker (notify/rejection-count-store.ts), which also reads the window before and its latches.
      rateWindows: [
        { actions: ['dynamodb:UpdateItem'], leadingKeys: ['NOTICES#*', 'MAILREJECT#*'] },
        { actions: ['dynamodb:GetItem'], leadingKeys: ['MAILREJECT#*'] },
      ],
    },
    queues: { noticesQueue: 'consumeWithBackoff' },
    // Few at once: a mail server or SES's sending rate is the bound, not Lambda.
    events: [{ kind: 'queue', queue: 'noticesQueue', batchSize: 10, maxConcurrency: 5 }],
    secrets: { noticeLinks: 'read' },
    sendsMail: true,
  },
  mailFeedback: {
    entry: 'mail-feedback',
    description: 'Records SES bounces and complaints: the address stops receiving notices (suppressed)',
    timeoutSeconds: 10,
    memoryMb: 256,
    // Sets a recipient's status: UpdateItem naming the suppression's attributes alone (recipient-store.ts SUPPRESSION_FIELDS).
    tables: { organizations: { actions: ['dynamodb:UpdateItem'], attributes: SUPPRESSION_FIELDS, leadingKeys: ['ORG#*'] } },
    queues: { mailFeedbackQueue: 'consume' },
    events: [{ kind: 'queue', queue: 'mailFeedbackQueue', batchSize: 10, maxConcurrency: 2 }],
  },
} satisfies Record<string, FunctionSpec>;
export type FunctionName = keyof typeof functions;
/** Every function a route names (functions/front-door/routes.ts) is one of these. */
export const routedFunctions: Record<RoutedFunction, FunctionSpec> = functions;

export const settingsParameterName = (stage: string) => `/crm/${stage}/settings`;

/** CloudFormation output names, shared by the stack (writes them) and the CLI (reads them). */
const cap = (s: string) => s[0].toUpperCase() + s.slice(1);
export const outputKeys = {
  apiUrl: 'ApiUrl',
  backupVault: 'BackupVaultName',
  backupRestoreRole: 'BackupRestoreRoleArn',
  table: (name: TableName) => `${cap(name)}Table`,
  queue: (name: QueueName) => `${cap(name)}Url`,
  settingsParameter: 'SettingsParameter',
  /** The secret's ARN (never its value). */
  secret: (name: SecretName) => `${cap(name)}Secret`,
};
export const stackName = (stage: string) => `Crm-${stage}`;
