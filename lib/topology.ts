/**
 * The one description of the system: tables, streams, queues, functions, their event sources and
 * the HTTP routes. The CDK stack (lib/stacks) and the local stack (lib/local) both loop over it;
 * adding a function or a table is one entry here. Pure data: no CDK or SDK imports.
 */
import { DomainError, methodNotAllowed, notFound, payloadTooLarge, tooManyRequests, unsupportedMediaType } from '../functions/core/platform/errors.js';
import { TRAIL_CLIENT_FIELDS } from '../functions/core/settings/trail-fields.js';

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
  organizations: { envVar: 'ORGANIZATIONS_TABLE', partitionKey: pk, sortKey: sk, globalIndexes: [gsi1] },
  /** Webhook endpoints, their signing secrets and bound: a table lead intake cannot reach (docs/decisions.md). */
  endpoints: { envVar: 'ENDPOINTS_TABLE', partitionKey: pk, sortKey: sk, readableFields: ['pk', 'sk', 'id', 'organizationId', 'url', 'events', 'enabled', 'disabledReason', 'createdAt'] },
  /** Rate-limit counters: one item per key per 10 s sub-window (functions/core/tenancy/rate-limit.ts). */
  rateWindows: { envVar: 'RATE_WINDOWS_TABLE', partitionKey: pk, ttlAttribute: 'expiresAt' },
  /** CRM clients (leads included); its stream feeds the event fan-out. */
  // `match`: a lead's earlier clients by e-mail (else phone), newest first; sparse and keys-only, 1 write unit a lead (docs/leads.md).
  clients: {
    envVar: 'CLIENTS_TABLE', partitionKey: pk, sortKey: sk, stream: 'NEW_AND_OLD_IMAGES', ttlAttribute: 'expiresAt',
    globalIndexes: [{ name: 'match', partitionKey: { name: 'matchKey', type: 'S' }, sortKey: sk, projection: 'KEYS_ONLY' }],
  },
  /** Work orders, invoices and bookings as typed items; its stream feeds the event fan-out. */
  workOrders: { envVar: 'WORK_ORDERS_TABLE', partitionKey: pk, sortKey: sk, stream: 'NEW_AND_OLD_IMAGES', ttlAttribute: 'expiresAt' },
  /** One record per (event, endpoint) with every attempt; kept 30 days. */
  // Every index keys-only: a record's updates (attempts, status) write no index; `due` is sparse,
  // written only while a retry is parked out of the queue (docs/capacity.md).
  deliveries: {
    envVar: 'DELIVERIES_TABLE', partitionKey: pk, sortKey: sk, ttlAttribute: 'expiresAt',
    globalIndexes: [
      { ...gsi1, projection: 'KEYS_ONLY' }, { name: 'due', partitionKey: { name: 'duePk', type: 'S' }, sortKey: { name: 'dueAt', type: 'N' }, projection: 'KEYS_ONLY' },
      // The settings API's lists, newest first per organization (functions/core/settings/delivery-summaries.ts):
      // delivery records only (event items have no createdAt); written once per record, as its keys never change.
      { name: 'byCreated', partitionKey: { name: 'pk', type: 'S' }, sortKey: { name: 'createdAt', type: 'S' }, projection: 'KEYS_ONLY' },
    ],
  },
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
  /** Messages received this many times move to the named dead-letter queue (another entry of `queues`; a string to avoid a circular type). */
  deadLetter?: { queue: string; maxReceiveCount: number };
}

/** The delivery queues' maxReceiveCount: twice the 5 attempts, so throttles and crashes cannot spend a delivery's attempts. */
const MAX_RECEIVES = 10;

export const queues = {
  /** Dead-letter queue of the delivery queue: deliveries that used all 5 attempts. */
  deliveryDlq: { envVar: 'DELIVERY_DLQ_URL', visibilityTimeoutSeconds: 30, retentionDays: 14 },
  /** One message per attempt. A retry is a new message (delayed ≤ 15 min) or waits in the due index (docs/webhooks.md). */
  deliveryQueue: {
    envVar: 'DELIVERY_QUEUE_URL',
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
    envVar: 'DELIVERY_SLOW_QUEUE_URL',
    visibilityTimeoutSeconds: 180,
    retentionDays: 14,
    deadLetter: { queue: 'deliveryDlq', maxReceiveCount: MAX_RECEIVES },
  },
  /** Dead-letter queue of the bulk queue: shares the bulk fan-out failed to record 5 times (re-drive them to the bulk queue). */
  bulkDlq: { envVar: 'BULK_DLQ_URL', visibilityTimeoutSeconds: 30, retentionDays: 14 },
  /**
   * An organization's large share of a stream batch (an import), handed off by the fan-out's lane in
   * compact messages and recorded by the bulk fan-out (docs/capacity.md "Fan-out lanes"). 6 x its time-out.
   */
  bulkQueue: { envVar: 'BULK_QUEUE_URL', visibilityTimeoutSeconds: 180, retentionDays: 14, deadLetter: { queue: 'bulkDlq', maxReceiveCount: 5 } },
  /** On-failure destination of the stream event sources: batches the fan-out gave up on. */
  fanoutFailures: { envVar: 'FANOUT_FAILURES_QUEUE_URL', visibilityTimeoutSeconds: 30, retentionDays: 14 },
} satisfies Record<string, QueueSpec>;
export type QueueName = keyof typeof queues;

/**
 * Secrets (AWS Secrets Manager): generated by the stack, never in the template; a function bound to
 * one gets GetSecretValue on it alone and the env var naming it. The local stack serves them from
 * files under .local/ through a Secrets Manager stand-in (lib/local/secrets-stand-in.ts).
 */
export interface SecretSpec { envVar: string; description: string }
export const secrets = {
  /** HMAC key of the settings session tokens (functions/core/settings/session-token.ts, docs/settings.md). */
  settingsToken: { envVar: 'SETTINGS_TOKEN_SECRET', description: 'Signs the session tokens of the organization settings (HS256)' },
} satisfies Record<string, SecretSpec>;
export type SecretName = keyof typeof secrets;
/** The secret's name in Secrets Manager (and in the local stand-in). */
export const secretName = (stage: string, name: SecretName) => `crm/${stage}/${name}`;

/**
 * `readFields`: Query only, projecting the table's `readableFields` alone (IAM-enforced).
 * `readUpdate`: reads, PutItem and UpdateItem (in transactions too), never DeleteItem or BatchWriteItem.
 * An object: exactly the actions named (on the table, and on one of its indexes), where the sets
 * above would give more than the job needs (Scan, BatchGetItem on PII); with `attributes`, reads
 * on the table that project those attributes alone (IAM-enforced).
 */
export type TableAccess = 'read' | 'readFields' | 'readUpdate' | 'write' | 'readWrite'
  | { actions: readonly string[]; index?: { name: string; actions: readonly string[] }; attributes?: readonly string[] };
export type QueueAccess = 'send' | 'consume' | 'sendAndConsume';

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
      /** Retries of a failing batch before it goes to the on-failure queue. */
      maxRetries: number;
      bisectOnError: boolean;
      onFailure: QueueName;
    }
  | { kind: 'queue'; queue: QueueName; batchSize: number; maxConcurrency: number }
  /** Invoked on a fixed rate: an EventBridge rule on AWS, a timer in the local stack (same handler). */
  | { kind: 'schedule'; rateMinutes: number };

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
    // Routing fields only: the fan-out never reads a signing secret.
    tables: { endpoints: 'readFields', deliveries: 'readWrite' },
    // An organization's large share goes to the bulk queue instead of being recorded in the lane.
    queues: { deliveryQueue: 'send', bulkQueue: 'send' },
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
    queues: { deliveryQueue: 'sendAndConsume', deliveryDlq: 'send', deliverySlowQueue: 'sendAndConsume' },
    events: [
      { kind: 'queue', queue: 'deliveryQueue', batchSize: 10, maxConcurrency: deliveryMaxConcurrency },
      { kind: 'queue', queue: 'deliverySlowQueue', batchSize: 10, maxConcurrency: slowLaneMaxConcurrency },
    ],
  },
  bulkFanout: {
    entry: 'bulk-fanout',
    description: 'Records and queues the deliveries of an organization\'s large share, handed off by the event fan-out',
    timeoutSeconds: 30,
    memoryMb: 512,
    // The messages carry the planned deliveries (endpoint ids and states): no endpoint read.
    tables: { deliveries: 'readWrite' },
    queues: { bulkQueue: 'consume', deliveryQueue: 'send' },
    // One message (≤ 100 events) per batch; 10 at once: the importer's partition takes ~1,000 WRU/s (docs/capacity.md).
    events: [{ kind: 'queue', queue: 'bulkQueue', batchSize: 1, maxConcurrency: 10 }],
  },
  deliverySweeper: {
    entry: 'delivery-sweeper',
    description: 'Every minute: re-queues the deliveries parked in the due index whose retry falls due',
    timeoutSeconds: 60,
    memoryMb: 256,
    tables: { deliveries: 'readWrite' },
    queues: { deliveryQueue: 'send' },
    events: [{ kind: 'schedule', rateMinutes: 1 }],
  },
  settingsApi: {
    entry: 'settings-api',
    description: 'Organization settings: the management API (/api/settings/...) and the settings page (/settings)',
    // Sending a test event waits (bounded) for its first attempt's outcome.
    timeoutSeconds: 20,
    memoryMb: 512,
    tables: {
      organizations: 'readWrite', endpoints: 'readWrite', rateWindows: 'readWrite', deliveries: 'readWrite', requestLog: 'readWrite',
      // A lead's trail reads one client by its key (settings/lead-trail.ts); never a query or a scan of
      // clients, and only the trail's fields (never the contact details, consent proofs, addresses).
      clients: { actions: ['dynamodb:GetItem'], attributes: ['pk', 'sk', ...TRAIL_CLIENT_FIELDS] },
    },
    // Test events and re-deliveries are queued; never the shared dead-letter queue (redrive.ts RedriveOptions).
    queues: { deliveryQueue: 'send' },
    events: [],
    secrets: { settingsToken: 'read' },
    // The settings page's HTML, CSS and script (functions/settings-api/page.ts serves them).
    assets: 'page',
  },
} satisfies Record<string, FunctionSpec>;
export type FunctionName = keyof typeof functions;

export interface RouteSpec {
  method: 'GET' | 'POST' | 'PATCH' | 'DELETE';
  /** A segment `{name}` is a path parameter (one segment); a static sibling wins over it, as on API Gateway. */
  path: string;
  function: FunctionName;
  /**
   * Only for pages of this API's own origin (the settings page and its API): no CORS headers on its
   * answers and no preflight, so no other origin's script may call it (docs/settings.md).
   */
  sameOrigin?: true;
}

const settingsRoute = (method: RouteSpec['method'], path: string): RouteSpec => ({ method, path, function: 'settingsApi', sameOrigin: true });
export const routes: RouteSpec[] = [
  { method: 'GET', path: '/api/webhook/leads', function: 'leadIntake' },
  { method: 'POST', path: '/api/webhook/leads', function: 'leadIntake' },
  // Organization settings (docs/settings.md): the page and its assets, and the management API.
  settingsRoute('GET', '/settings'),
  settingsRoute('GET', '/settings/{asset}'),
  settingsRoute('GET', '/api/settings'),
  settingsRoute('PATCH', '/api/settings'),
  settingsRoute('GET', '/api/settings/keys'),
  settingsRoute('POST', '/api/settings/keys'),
  settingsRoute('DELETE', '/api/settings/keys/{id}'),
  settingsRoute('POST', '/api/settings/keys/{id}/rotate'),
  settingsRoute('GET', '/api/settings/events'),
  settingsRoute('GET', '/api/settings/webhooks'),
  settingsRoute('POST', '/api/settings/webhooks'),
  settingsRoute('PATCH', '/api/settings/webhooks/{id}'),
  settingsRoute('DELETE', '/api/settings/webhooks/{id}'),
  settingsRoute('POST', '/api/settings/webhooks/{id}/rotate-secret'),
  settingsRoute('POST', '/api/settings/webhooks/{id}/test'),
  settingsRoute('GET', '/api/settings/deliveries'),
  settingsRoute('POST', '/api/settings/deliveries/redeliver'),
  settingsRoute('POST', '/api/settings/deliveries/recover'),
  settingsRoute('GET', '/api/settings/deliveries/{id}'),
  settingsRoute('POST', '/api/settings/deliveries/{id}/redeliver'),
  settingsRoute('GET', '/api/settings/requests'),
  settingsRoute('GET', '/api/settings/clients/{id}/trail'),
  settingsRoute('GET', '/api/settings/audit'),
];

/** Headers a browser may send cross-origin, and the ones it may read back (docs/leads.md#browsers). */
export const cors = {
  allowOrigins: ['*'],
  allowHeaders: ['Content-Type', 'X-API-Key', 'Authorization', 'Idempotency-Key'],
  exposeHeaders: [
    'Retry-After', 'RateLimit', 'RateLimit-Policy',
    'X-RateLimit-Limit', 'X-RateLimit-Remaining', 'X-RateLimit-Reset', 'X-Request-Id',
  ],
  maxAgeSeconds: 600,
};

/** The CORS headers on every answer a browser may read (the function's, the gateway's own). */
export const corsResponseHeaders: Record<string, string> = {
  'Access-Control-Allow-Origin': cors.allowOrigins.join(','),
  'Access-Control-Expose-Headers': cors.exposeHeaders.join(','),
};

/**
 * The answer to a CORS preflight on a path serving `methods`, without a key: what the stage's
 * OPTIONS mock (rendered by CDK from `cors`) answers, for the local stack to answer the same.
 */
export const corsPreflightHeaders = (methods: string[]): Record<string, string> => ({
  'Access-Control-Allow-Headers': cors.allowHeaders.join(','),
  'Access-Control-Allow-Origin': corsResponseHeaders['Access-Control-Allow-Origin'],
  'Access-Control-Max-Age': String(cors.maxAgeSeconds),
  'Access-Control-Allow-Methods': [...methods, 'OPTIONS'].join(','),
});

/** Whether a browser of another origin may call `path` (a preflight is answered there): every route but the same-origin ones. */
export const crossOrigin = (path: string) => routes.some((r) => r.path === path && !r.sameOrigin);

/** Methods served on a route's path, a resource path like `/api/settings/keys/{id}` (an ANY on the path answers the others 405). */
export const methodsOn = (path: string) => [...new Set(routes.filter((r) => r.path === path).map((r) => r.method))];

const isParameter = (segment: string) => /^\{[^+}]+\}$/.test(segment);

/**
 * The REST API resource a request path lands on, as API Gateway matches it: segment by segment, a
 * static child first, else the parameter child (`{id}`); where neither exists, the `{proxy+}` under
 * the deepest resource reached. `parameters` holds the path parameters' values (undefined on a proxy).
 */
export function resourceFor(pathname: string): { resource: string; parameters: Record<string, string>; proxy: boolean } {
  const resources = apiResourcePaths();
  const parameters: Record<string, string> = {};
  let current = '/';
  for (const segment of pathname.split('/').filter((s, i) => i > 0 && s !== '')) {
    const prefix = current === '/' ? '' : current;
    const children = resources.filter((r) => r.startsWith(`${prefix}/`) && !r.slice(prefix.length + 1).includes('/'));
    const exact = children.find((r) => r === `${prefix}/${segment}`);
    const parameter = children.find((r) => isParameter(r.slice(prefix.length + 1)));
    if (exact) current = exact;
    else if (parameter) {
      current = parameter;
      parameters[parameter.slice(prefix.length + 2, -1)] = decodeURIComponent(segment);
    } else return { resource: `${prefix}/{proxy+}`, parameters: {}, proxy: true };
  }
  return { resource: current, parameters, proxy: false };
}

/** Resources with a parameter child get no `{proxy+}` sibling (API Gateway allows one variable child): the parameter takes that place. */
export const hasParameterChild = (resource: string) => apiResourcePaths().some((r) => {
  const prefix = resource === '/' ? '' : resource;
  return r.startsWith(`${prefix}/`) && isParameter(r.slice(prefix.length + 1));
});

// ---------------------------------------------------------------------------------------------
// The front door: what API Gateway (and the WAF in front of it) answer without a function. The
// CDK stack renders these as MOCK integrations, gateway responses and WAF rules; the local HTTP
// server answers the same from the same entries, so the two cannot drift (docs/capacity.md).

/** A problem+json answer the gateway makes itself (docs/architecture.md#errors). */
export interface GatewayAnswerSpec {
  /** Absent on the DEFAULT_4XX/5XX fallbacks: API Gateway keeps the status of the error and the body omits it. */
  status?: number;
  slug: string;
  title: string;
  /** Absent: API Gateway's own message for the error ($context.error.message). */
  detail?: string;
  headers?: Record<string, string>;
}

/**
 * API Gateway compresses an answer of at least this many bytes (gzip or deflate, as the client's
 * Accept-Encoding asks; it has no br): the settings page's script and styles, a page of deliveries.
 * The local gateway does the same (lib/local/http-server.ts).
 */
export const compressionMinBytes = 1024;

/**
 * Request types API Gateway hands the functions as bytes (base64, `isBase64Encoded`) rather than
 * as text it decoded itself: the functions decode UTF-8 strictly, so bytes that are not UTF-8 get a
 * 400 instead of being stored as U+FFFD (docs/leads.md). Parameters (charset) are not matched.
 */
export const binaryMediaTypes = ['application/json', 'application/x-www-form-urlencoded'] as const;
export const isBinaryMediaType = (contentType: string | undefined) =>
  (binaryMediaTypes as readonly string[]).includes((contentType ?? '').split(';')[0].trim().toLowerCase());

/** API Gateway's answer to a path with a malformed percent-escape (`%zz`, `%E2%82`): a 400 before any route. */
export const malformedPath = { type: 'DEFAULT_4XX' as const, status: 400, message: 'The request path has a malformed percent-escape.' };

/** API Gateway's hard payload limit (REQUEST_TOO_LARGE); the function enforces its own, smaller one. */
export const gatewayMaxBodyBytes = 10 * 1024 * 1024;

export interface ThrottleSpec { rateLimit: number; burstLimit: number }
/**
 * API Gateway throttles each method of the stage with a token bucket of its own (stage settings
 * apply "at the API method level"). Each lead method and its preflight: sized in docs/capacity.md;
 * per-key floods are stopped before it by the WAF rules below, so one key can not spend it for everyone.
 */
export const routeThrottle: ThrottleSpec = { rateLimit: 1000, burstLimit: 2000 };
/** Each catch-all MOCK method (the stage default): scanners' 404s must not claim the account's API Gateway quota. */
export const catchAllThrottle: ThrottleSpec = { rateLimit: 50, burstLimit: 100 };
/**
 * Each settings method and its preflight: a few admins per organization (300 calls/min each, the
 * function's own limit), not lead traffic. Sized like the catch-alls so the ~30 settings methods
 * (keyless floods of them reach the function as 401s) cannot claim the account's API Gateway quota
 * or the Lambda concurrency the lead endpoint needs (docs/capacity.md).
 */
export const settingsThrottle: ThrottleSpec = { rateLimit: 50, burstLimit: 100 };
/** The bucket of each routed method, by the function serving its path (routeThrottle unless named here). */
const functionThrottles: Partial<Record<FunctionName, ThrottleSpec>> = { settingsApi: settingsThrottle };

/** The REST API's resources: the root and every prefix of a route's path (each also has a `{proxy+}` child). */
export const apiResourcePaths = (): string[] => [...new Set(['/', ...routes.flatMap((r) =>
  r.path.split('/').slice(1).map((_, i, parts) => `/${parts.slice(0, i + 1).join('/')}`))])];

/**
 * The deployed method that takes `method` on `pathname` (API Gateway prefers an exact resource, else
 * the deepest `{proxy+}` above it), and its throttle: one bucket per (resource, method).
 */
export function apiMethodFor(pathname: string, method: string): { resource: string; method: string; throttle: ThrottleSpec } {
  const { resource, proxy } = resourceFor(pathname);
  const served = proxy ? [] : methodsOn(resource);
  if (served.includes(method as RouteSpec['method']) || (served.length > 0 && method === 'OPTIONS' && crossOrigin(resource))) {
    const fn = routes.find((r) => r.path === resource)!.function;
    return { resource, method, throttle: functionThrottles[fn] ?? routeThrottle };
  }
  return { resource, method: 'ANY', throttle: catchAllThrottle };
}

/** WAF text transformations, applied in order to a value before it is matched or counted. */
export type EdgeTransform = 'LOWERCASE' | 'COMPRESS_WHITE_SPACE';
export function applyEdgeTransforms(value: string, transforms: EdgeTransform[]): string {
  return transforms.reduce((v, t) => (t === 'LOWERCASE' ? v.toLowerCase() : v.replace(/[ \f\t\n\r\v\u00a0]+/g, ' ')), value);
}

/** A header that carries an API key, and the shape of a well-formed one (matched after LOWERCASE). */
export interface EdgeKeySpec { header: string; pattern: string }

/**
 * The WAF (AWS WAFv2, REGIONAL) in front of the stage: rate-based rules in priority order; the first
 * that blocks ends the evaluation (later rules do not count that request). Over `limit` requests in
 * the trailing `windowSeconds` per key (a well-formed key header's value after `transforms`, or the
 * client address), the key is blocked (the WAF_FILTERED answer) until its rate falls back.
 * `withoutKey`: only requests carrying no well-formed key; `exceptMethods`: methods never counted.
 */
export interface EdgeRuleSpec {
  name: string;
  key: { header: EdgeKeySpec; transforms: EdgeTransform[] } | { address: true };
  withoutKey?: boolean;
  exceptMethods?: string[];
  limit: number;
  windowSeconds: 60 | 120 | 300 | 600;
}

/**
 * Per key, twice one organization's burst (50 leads/s, docs/capacity.md) and 6 x the highest plan
 * limit (1000/min, functions/core/platform/settings.ts): a key within its limit never meets it. Per-organization
 * overrides are capped at it (functions/core/tenancy/organizations.ts).
 */
export const edgeKeyLimitPerMinute = 6000;
/** Per address, all requests: 120/s over 5 minutes, above one key at the edge limit (docs/capacity.md). */
export const edgeAddressLimitPer5Minutes = 36_000;
/** functions/core/tenancy/api-keys.ts: `crm_live_` (secret) or `crm_pub_` (publishable, docs/leads.md#lead-forms-in-public-pages-publishable-keys) + base62 (lowercased here). */
const keyFormat = 'crm_(live|pub)_[0-9a-z]+';
/** The function accepts exactly these shapes (functions/core/tenancy/authenticate.ts), "Bearer" in any case. */
export const edgeKeys = {
  apiKey: { header: 'x-api-key', pattern: `^${keyFormat}$` },
  bearer: { header: 'authorization', pattern: `^bearer ${keyFormat}$` },
} satisfies Record<string, EdgeKeySpec>;
// WAF counts exact header values: case and whitespace variants of one key must be one key.
const keyTransforms: EdgeTransform[] = ['LOWERCASE', 'COMPRESS_WHITE_SPACE'];
export const edgeRules: EdgeRuleSpec[] = [
  // Random well-formed keys never trip a per-key rule: one address is bounded whatever it sends.
  { name: 'PerAddress', key: { address: true }, limit: edgeAddressLimitPer5Minutes, windowSeconds: 300 },
  { name: 'PerApiKey', key: { header: edgeKeys.apiKey, transforms: keyTransforms }, limit: edgeKeyLimitPerMinute, windowSeconds: 60 },
  { name: 'PerBearerKey', key: { header: edgeKeys.bearer, transforms: keyTransforms }, limit: edgeKeyLimitPerMinute, windowSeconds: 60 },
  // Requests with no well-formed key header get 401s (malformed ones are never a key of their own, so
  // their variants cannot dodge a limit); a flood of them must not spend the lead methods' buckets.
  // No-script form posts carry their publishable key in the body (WAF cannot key on a body field):
  // they count here, 600/min per address, far above the function's per-address window (5/min).
  // CORS preflights carry no key by design: a NATed office's burst of form posts must not lose them.
  { name: 'PerAddressWithoutKey', key: { address: true }, withoutKey: true, exceptMethods: ['OPTIONS'], limit: 600, windowSeconds: 60 },
];

/** The well-formed key headers a request carries (what the per-key rules count it under). */
export function wellFormedKeys(header: (name: string) => string | undefined): EdgeKeySpec[] {
  return Object.values(edgeKeys).filter((k) => {
    const value = header(k.header);
    return value !== undefined && new RegExp(k.pattern).test(applyEdgeTransforms(value, ['LOWERCASE']));
  });
}

const retryAfterEdge = 60; // the per-key rules' window: a blocked key is let through again within it
const mayHaveBeenProcessed = 'The request failed or timed out and may or may not have been processed: retry with the same Idempotency-Key.';
const answer = (e: DomainError): GatewayAnswerSpec => ({ status: e.status, slug: e.slug, title: e.title, detail: e.message, headers: e.extra.headers });
/**
 * Gateway responses (API Gateway response types), problem+json like the function's own errors.
 * MISSING_AUTHENTICATION_TOKEN is what API Gateway answers for a path no resource matches: with
 * no IAM auth anywhere it can only mean "no such route" (the catch-all routes make it a backstop).
 */
export const gatewayResponses = {
  MISSING_AUTHENTICATION_TOKEN: answer(notFound('No route for this path.')),
  THROTTLED: answer(tooManyRequests(1)),
  // The WebACL holds only rate rules, so a WAF block always means "this key (or address) is flooding".
  WAF_FILTERED: answer(tooManyRequests(retryAfterEdge)),
  REQUEST_TOO_LARGE: answer(payloadTooLarge(gatewayMaxBodyBytes)),
  // A catch-all mock given a Content-Type it has no request template for (mockRequestContentTypes).
  UNSUPPORTED_MEDIA_TYPE: answer(unsupportedMediaType('This Content-Type is not accepted here: send application/json.')),
  // Never fires for lead intake (10 s time-out, under the 29 s integration limit): kept as a backstop.
  INTEGRATION_TIMEOUT: answer(new DomainError(504, 'gateway-timeout', 'Gateway timeout', mayHaveBeenProcessed)),
  DEFAULT_4XX: { slug: 'gateway-error', title: 'Request refused' },
  // A function that timed out or crashed (502) may have written the lead already: say how to retry safely.
  DEFAULT_5XX: { slug: 'gateway-error', title: 'Bad gateway', detail: mayHaveBeenProcessed },
} satisfies Record<string, GatewayAnswerSpec>;
export type GatewayResponseType = keyof typeof gatewayResponses;

/** API Gateway's status and message when the Lambda proxy integration fails (crash, time-out, bad answer). */
export const lambdaFailure = { type: 'DEFAULT_5XX' as const, status: 502, message: 'Internal server error' };

/**
 * Content types the catch-all mocks have a request template (`{"statusCode": 200}`) for. Without
 * one, API Gateway passes the raw body to the mock, which fails on anything but that JSON (a 500);
 * with passthrough NEVER, any other type is answered UNSUPPORTED_MEDIA_TYPE (415).
 */
export const mockRequestContentTypes = ['application/json', 'application/x-www-form-urlencoded', 'text/plain', 'multipart/form-data', 'application/xml'];
export const mockRequestTemplate = '{"statusCode": 200}';
/** Whether a catch-all mock takes a request: no Content-Type counts as application/json, as on API Gateway; parameters are ignored. */
export const mockAcceptsContentType = (contentType: string | undefined) =>
  contentType === undefined || mockRequestContentTypes.includes(contentType.split(';')[0].trim().toLowerCase());

/** Answers of the catch-all routes (MOCK integrations: no function runs, no Lambda cost). */
export const catchAllAnswers = {
  /** ANY on a path with no route (`/`, intermediate paths, `{proxy+}` under each of them). */
  notFound: gatewayResponses.MISSING_AUTHENTICATION_TOKEN,
  /** ANY on a route's path, for the methods it does not serve. */
  methodNotAllowed: (allowed: string[]) => answer(methodNotAllowed(allowed)),
};

/**
 * The body of a gateway answer. `requestId` and `message` are values locally, and VTL references
 * ($context.requestId, $context.error.messageString, already quoted) in the CDK templates.
 */
export function gatewayProblemBody(spec: GatewayAnswerSpec, requestId: string, message: { json: string } | string = ''): string {
  const MESSAGE = '\u0000message\u0000';
  const problem = new DomainError(spec.status ?? 0, spec.slug, spec.title, spec.detail ?? MESSAGE).toProblem(requestId);
  if (spec.status === undefined) delete (problem as { status?: number }).status;
  const body = JSON.stringify(problem);
  return body.replace(JSON.stringify(MESSAGE), typeof message === 'string' ? JSON.stringify(message) : message.json);
}

/** Env var naming the SSM parameter with the stage's runtime settings (functions/core/platform/settings.ts). */
export const settingsParameterEnvVar = 'SETTINGS_PARAMETER';
export const settingsParameterName = (stage: string) => `/crm/${stage}/settings`;
export const serviceName = 'crm-integration-api';
/** CloudWatch namespace of the functions' metrics (Powertools) and of the alarms on them. */
export const metricsNamespace = 'CrmIntegrationApi';

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
