/**
 * The whole API's OpenAPI document: the lead endpoint's (functions/core/intake/openapi.ts) and the
 * management API of the organization settings, every /api/settings route of functions/front-door/routes.ts with
 * the shapes of views.ts and the session token. Each route's request body and query parameters are
 * generated from the zod schemas the handler validates with (request-schemas.ts), with the 422 (and,
 * for a body, 400, 413, 415) they cause. The local stack serves it at /openapi.json and
 * `npm run docs:openapi` writes docs/openapi.json; test/unit/settings/openapi.test.ts checks that
 * each route is documented.
 */
// Served by the local stack and the docs script only: no Lambda handler imports it, so z.toJSONSchema stays out of every bundle.
import { SUPPRESSED_REASONS } from '../notify/recipient-store.js';
import * as z from '../platform/zod-mini.js';
import { leadEndpointDocument } from '../intake/openapi.js';
import { requestSchemas, type RequestSchemas } from './request-schemas.js';

export function openApiDocument(serverUrl?: string) {
  const lead = leadEndpointDocument(serverUrl);
  return {
    ...lead,
    info: { ...lead.info, description: `${lead.info.description} Organization admins manage keys and webhooks through the settings API (/api/settings, session tokens).` },
    paths: { ...lead.paths, ...withRequests(settingsPaths) },
    components: {
      ...lead.components,
      securitySchemes: { ...lead.components.securitySchemes, ...settingsSecurityScheme },
      schemas: { ...lead.components.schemas, ...settingsSchemas },
    },
  };
}
const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });
const str = { type: 'string' };
const time = { type: 'string', format: 'date-time' };
const nullable = (schema: object) => ({ anyOf: [schema, { type: 'null' }] });
const obj = (properties: Record<string, unknown>, required = Object.keys(properties)) => ({ type: 'object', properties, required });
const json = (schema: unknown, description: string) => ({ description, content: { 'application/json': { schema } } });
const problem = (description: string) => ({ description, content: { 'application/problem+json': { schema: ref('Problem') } } });
const common = {
  401: problem('Missing, expired, tampered or wrong-audience session token, or an API key'),
  429: { ...problem('The organization made over 300 management calls in a minute'), headers: { 'Retry-After': { description: 'Seconds to wait', schema: { type: 'integer' } } } },
  500: problem('Unexpected fault; quote the request id'),
  503: { ...problem('The session-token secret cannot be read right now (Secrets Manager throttled or unreachable)'), headers: { 'Retry-After': { description: 'Seconds to wait', schema: { type: 'integer' } } } },
};
const notFound = { 404: problem('No such id in the token’s organization (another organization’s ids are not found either)') };
/** A read-modify-write that kept losing its race to concurrent requests (platform/optimistic.ts). */
const lostRace = { 409: problem('Changed by other requests at the same moment, again after retries: nothing was written; try again') };
const overview = obj({
  organization: obj({ id: str, name: str, plan: str, billing: { enum: ['prepaid', 'postpaid'] }, walletBalance: nullable({ type: 'number' }), currency: { const: 'USD' }, duplicatePolicy: { enum: ['flag', 'merge'] } }),
  usage: obj({ today: obj({ calls: { type: 'integer' }, billed: { type: 'number' } }), month: obj({ calls: { type: 'integer' }, billed: { type: 'number' } }) }),
  baseUrl: str, leadEndpoint: str, curlExamples: { type: 'array', items: obj({ title: str, command: str }) }, user: obj({ id: str }),
  revocationSeconds: { type: 'integer', description: 'A revoked key is refused everywhere within this many seconds' },
});
const id = { name: 'id', in: 'path', required: true, schema: str };
const op = (operationId: string, summary: string, responses: Record<string, unknown>, extra: Record<string, unknown> = {}) =>
  ({ operationId, summary, tags: ['Organization settings'], security: [{ sessionToken: [] }], ...extra, responses: { ...responses, ...common } });

/** An operation whose 429 has a cause of its own besides the organization's management rate. */
const withOwn429 = <O extends { responses: Record<string, unknown> }>(operation: O, why: string): O =>
  ({ ...operation, responses: { ...operation.responses, 429: { ...common[429], description: why } } });

export const settingsSecurityScheme = {
  sessionToken: {
    type: 'http', scheme: 'bearer', bearerFormat: 'JWT',
    description: 'A session token the CRM app mints for a signed-in admin (HS256; org_id, sub, aud "crm-settings", exp ≤ 1 h): docs/settings.md. API keys are refused.',
  },
};

export const settingsSchemas = {
  KeySummary: obj({
    id: str, name: str, kind: { enum: ['secret', 'publishable'] }, prefix: { type: 'string', description: 'What the key starts with, and its last 4 characters where kept (`crm_live_…x7Qa`)' }, last4: nullable(str),
    status: { enum: ['active', 'expiring', 'expired', 'revoked'] }, createdAt: time, lastUsedAt: nullable(time), expiresAt: nullable(time),
    origins: { type: 'array', items: str, description: 'Publishable keys only' },
    thankYouUrl: { ...nullable(str), description: 'Publishable keys only: where a no-script form post is sent (303)' },
    dailyCap: { ...nullable({ type: 'integer' }), description: 'Publishable keys only: billed calls a day (null: none)' },
    perIpLimit: { ...nullable({ type: 'integer' }), description: 'Publishable keys only: leads a minute per client address (null: the default, 5)' },
    honeypotField: { ...nullable(str), description: 'Publishable keys only (null: "website")' },
  }, ['id', 'name', 'kind', 'prefix', 'status', 'createdAt', 'lastUsedAt', 'expiresAt']),
  Endpoint: obj({
    id: str, url: str, events: { type: 'array', items: str, description: 'Canonical dotted names, or ["*"]' }, enabled: { type: 'boolean' },
    description: nullable(str), createdAt: time, updatedAt: time,
    signing: { enum: ['hmac', 'ed25519'], description: 'hmac: `v1` signatures (whsec_ secret); ed25519: `v1a` signatures, verified with public_key' },
    public_key: { type: 'string', pattern: '^whpk_', description: 'ed25519 endpoints: `whpk_` + base64 of the raw 32-byte public key receivers verify with (docs/webhooks.md#verifying-ed25519-signatures)' },
    signing_keys: {
      type: 'array', description: 'Every key signing now, newest first; a retiring one (a rotation\'s or a scheme switch\'s grace) with its end time',
      items: obj({ scheme: { enum: ['hmac', 'ed25519'] }, public_key: { type: 'string', pattern: '^whpk_' }, expires_at: nullable(time) }, ['scheme', 'expires_at']),
    },
    secretCount: { type: 'integer' },
    headers: { type: 'object', additionalProperties: str, description: 'Custom headers sent with every delivery, by lower-case name; values masked (`••••` and, for 16 characters or more, the last 4)' },
    rateLimitPerSecond: { ...nullable({ type: 'integer' }), description: 'At most this many deliveries a second; null: no limit' },
    disabledReason: str, failingSince: time,
    circuit: obj({ state: { enum: ['closed', 'open', 'half-open'] }, until: time }, ['state']),
    lastCheck: { ...nullable(ref('ReceiverCheck')), description: 'The last receiver check (POST /api/settings/webhooks/{id}/check); null: never checked' },
  }, ['id', 'url', 'events', 'enabled', 'description', 'createdAt', 'updatedAt', 'signing', 'signing_keys', 'secretCount', 'headers', 'rateLimitPerSecond', 'lastCheck']),
  ReceiverCheck: obj({
    verdict: { enum: ['pass', 'fail'], description: 'pass: every rule met, the replay rule aside (advice only)' },
    checked_at: time,
    rules: { type: 'array', items: obj({
      rule: { enum: ['signed', 'wrong-signature', 'body-changed', 'no-signature', 'stale-timestamp', 'future-timestamp', 'replay', 'retired-secret'] },
      expected: { type: 'string', description: '2xx, refusal (non-2xx), or refusal or idempotent 2xx (the replay)' },
      status: { ...nullable({ type: 'integer' }), description: 'The receiver\'s HTTP status; null: no answer, or the rule was not checked (its advice says why)' },
      ok: { type: 'boolean' },
      advice: { ...nullable(str), description: 'What to change, with a link into docs/webhooks.md; null when the rule was met' },
    }) },
  }),
  DeliverySummary: obj({
    id: str, eventId: str, eventType: str, endpointId: str, url: nullable(str), status: { enum: ['pending', 'delivered', 'retrying', 'failed', 'skipped'] },
    attemptCount: { type: 'integer' }, lastStatusCode: nullable({ type: 'integer' }), createdAt: time, updatedAt: time, nextAttemptAt: nullable(time), reason: nullable(str),
  }),
  DeliveryDetail: {
    allOf: [ref('DeliverySummary'), obj({
      payload: { type: 'object', description: 'The event as sent' },
      attempts: { type: 'array', items: ref('Attempt') },
    })],
  },
  Attempt: obj({
    number: { type: 'integer', description: 'Over the delivery\'s life: a re-delivery continues it' }, attempt: { type: 'integer', description: 'Within its round' },
    manual: { type: 'boolean', description: 'The first attempt of a re-delivery' }, at: time,
    requestHeaders: nullable({ type: 'object', additionalProperties: str }), responseHeaders: nullable({ type: 'object', additionalProperties: str }), statusCode: nullable({ type: 'integer' }), durationMs: { type: 'integer' }, error: nullable(str), responseExcerpt: nullable(str) }),
};

/** A bulk re-delivery's answer: queued (or counted), still retrying on their own, left out and why, whether there may be more. */
const bulkFields = {
  count: { type: 'integer' }, retrying: { type: 'integer', description: 'Deliveries still being retried on their own schedule (not failed yet)' },
  more: { const: true, description: 'The call stopped before the range\'s end (500 queued, or its read budget spent): the counts are lower bounds; call again' },
  notRedeliverable: { type: 'integer' }, endpointDisabled: { type: 'integer', description: 'Failed deliveries to a disabled endpoint, left out (enable it first)' },
};
const bulk = obj(bulkFields, ['count', 'retrying']);

const recipients = obj({
  recipients: {
    type: 'array',
    items: obj({
      email: str,
      notices: { type: 'array', items: { enum: ['lead.created', 'endpoint.paused', 'endpoint.disabled', 'daily_digest'] } },
      status: { enum: ['pending', 'confirmed', 'suppressed'], description: 'pending: waiting for its confirmation; suppressed: unsubscribed, bounced, complained or rejected (gets nothing)' },
      suppressed: {
        ...obj({
          reason: { enum: [...SUPPRESSED_REASONS], description: 'unsubscribed: its link was followed; bounced, complained: SES reported a permanent bounce or a complaint; rejected: the mail server refused the address as unknown (a 5.1.x to its RCPT TO); unlike the others, removed it may be added again' },
          at: time,
        }, []),
        description: 'A suppressed recipient: why, and since when',
      },
    }, ['email', 'notices', 'status']),
  },
});

export const settingsPaths = {
  '/api/settings': {
    get: op('getSettings', 'The organization, its usage, base URL and cURL examples', { 200: json(overview, 'The settings overview') }),
    patch: op('updateSettings', 'Set what a lead matching an existing client does: `flag` (a new client marked possible_duplicate_of) or `merge` (docs/leads.md)', {
      200: json(overview, 'The settings overview, changed'),
    }),
  },
  '/api/settings/keys': {
    get: op('listKeys', 'API keys (never the keys themselves)', { 200: json(obj({ keys: { type: 'array', items: ref('KeySummary') } }), 'The keys') }),
    post: op('createKey', 'Generate an API key (the only response that shows it)', {
      201: json(obj({ key: ref('KeySummary'), secret: { type: 'string', description: 'The key: shown once' } }), 'Created'), ...lostRace,
    }),
  },
  '/api/settings/keys/{id}': {
    delete: op('revokeKey', 'Revoke a key now', { 200: json(obj({ key: ref('KeySummary') }), 'Revoked'), ...notFound, ...lostRace }, { parameters: [id] }),
  },
  '/api/settings/keys/{id}/rotate': {
    post: op('rotateKey', 'Issue a new key; the old one works for the grace', {
      201: json(obj({ key: ref('KeySummary'), secret: str, previous: ref('KeySummary') }), 'The new key (shown once) and the old one, now expiring'), ...notFound, ...lostRace,
    }, { parameters: [id] }),
  },
  '/api/settings/events': {
    get: op('listEvents', 'The events an endpoint can subscribe to, with both name forms, each payload\'s JSON Schema and an example', {
      200: json(obj({ events: { type: 'array', items: obj({ name: str, alias: nullable(str), description: str, group: str, schema: { type: 'object', description: 'JSON Schema (2020-12) of the payload' }, example: { type: 'object' } }) } }), 'The catalog'),
    }),
  },
  '/api/settings/webhooks': {
    get: op('listEndpoints', 'Webhook endpoints (never their secrets)', { 200: json(obj({ endpoints: { type: 'array', items: ref('Endpoint') } }), 'The endpoints') }),
    post: op('addEndpoint', 'Add an endpoint (the only response that shows its signing secret)', {
      201: json(obj({ endpoint: ref('Endpoint'), secret: { type: 'string', description: '`whsec_…`: shown once (hmac endpoints; an ed25519 endpoint answers its public_key instead)' } }, ['endpoint']), 'Added'), ...lostRace,
    }),
  },
  '/api/settings/webhooks/{id}': {
    patch: op('updateEndpoint', 'Change the URL, events, description, enabled flag, custom headers, rate limit or signing scheme (enabling closes the circuit)', {
      200: json(obj({ endpoint: ref('Endpoint'), secret: { type: 'string', description: 'A switch to hmac only: the new `whsec_…`, shown once' } }, ['endpoint']), 'Updated'), ...notFound, ...lostRace,
    }, {
      parameters: [id],
    }),
    delete: op('deleteEndpoint', 'Remove an endpoint', { 200: json(obj({ endpoint: ref('Endpoint') }), 'Removed'), ...notFound, ...lostRace }, { parameters: [id] }),
  },
  '/api/settings/webhooks/{id}/rotate-secret': {
    post: op('rotateEndpointSecret', 'A new signing secret or key (of the endpoint\'s scheme); the old ones keep signing for the grace', {
      200: json(obj({ endpoint: ref('Endpoint'), secret: { type: 'string', description: 'hmac endpoints: the new `whsec_…`, shown once (ed25519: the new public_key is in the endpoint)' } }, ['endpoint']), 'The new secret (shown once) or key'), ...notFound, ...lostRace,
    }, { parameters: [id] }),
  },
  '/api/settings/webhooks/{id}/test': {
    post: op('sendTestEvent', 'Send a test event (webhook.test, or any subscribed type as its catalog example marked "test": true) and wait (up to 10 s) for the first attempt', {
      200: json(obj({ delivery: ref('DeliveryDetail') }), 'The delivery: delivered, retrying, failed, or still pending after the wait'), ...notFound,
      409: problem('The endpoint is disabled: enable it first'),
    }, { parameters: [id] }),
  },
  '/api/settings/webhooks/{id}/check': {
    post: withOwn429(op('checkReceiver', 'Check the receiver: a fixed series of webhook.test events ("test": true), correctly signed, forged, altered, unsigned, stale, future-dated, replayed and signed with a retired secret, each judged by its answer; the result is kept on the endpoint (docs/webhooks.md#checking-a-receiver)', {
      200: json(ref('ReceiverCheck'), 'The verdict and each rule; the sends are in the delivery log as test deliveries'), ...notFound,
      409: problem('The endpoint is disabled (enable it first), paused by its circuit, has no active signing secret, or its URL is not https'),
    }, { parameters: [id] }), 'The endpoint was checked less than a minute ago, or the organization made over 300 management calls in a minute'),
  },
  '/api/settings/links/revoke': {
    post: op('revokeSettingsLinks', 'Sign out every settings link of the organization issued until now, this one included: each one\'s next request is a 401. Recorded in the audit log.', {
      200: json(obj({ revoked_at: time }), 'Signed out: open the settings page from the CRM again'),
    }),
  },
  '/api/settings/deliveries': {
    get: op('listDeliveries', 'Deliveries, newest first', { 200: json(obj({ deliveries: { type: 'array', items: ref('DeliverySummary') }, nextCursor: nullable(str) }), 'A page'), ...notFound }),
  },
  '/api/settings/deliveries/{id}': {
    get: op('getDelivery', 'A delivery with its payload and every attempt', { 200: json(obj({ delivery: ref('DeliveryDetail') }), 'The delivery'), ...notFound }, { parameters: [id] }),
  },
  '/api/settings/deliveries/{id}/redeliver': {
    post: op('redeliver', 'Send a delivery again, or a retrying one now ("Retry now"); same webhook-id: receivers dedupe', {
      202: json(obj({ delivery: ref('DeliverySummary'), endpoint: obj({ state: { enum: ['ready', 'recovering', 'paused', 'disabled', 'removed'] }, until: nullable(time) }, ['state']) }),
        'Queued; `endpoint` says whether it is sent now or held while the endpoint is paused'), ...notFound,
      409: problem('Its endpoint is disabled (enable it first), it is already queued and not attempted yet, or its payload was too large to keep'),
    }, { parameters: [id] }),
  },
  '/api/settings/deliveries/redeliver': {
    post: op('redeliverFailed', 'Send every failed delivery again (of one endpoint, in a time range)', {
      202: json(bulk, 'How many were queued'), ...notFound,
    }),
  },
  '/api/settings/deliveries/recover': {
    post: op('recoverFailed', 'Send again every delivery that failed since a time (of one endpoint or all); with dry_run, only count them', {
      200: json(obj({ ...bulkFields, dryRun: { const: true } }, ['count', 'retrying', 'dryRun']), 'How many would be queued (dry_run)'),
      202: json(bulk, 'How many were queued'), ...notFound,
    }),
  },
  '/api/settings/requests': {
    get: op('listRequests', 'The lead endpoint’s request log, newest first (kept 30 days)', {
      200: json(obj({
        requests: { type: 'array', items: obj({ at: time, method: str, path: str, status: { type: 'integer' }, keyId: nullable(str), keyName: nullable(str), keyLast4: nullable(str), requestId: str, durationMs: nullable({ type: 'integer' }), detail: nullable(str), clientId: nullable(str) }) },
        nextCursor: { ...nullable(str), description: 'Where the next page starts; null: no more. A page may hold fewer rows than `limit`, even none, while this is set: read on until it is null' },
      }), 'A page'),
    }),
  },
  '/api/settings/clients/{id}/trail': {
    get: op('getLeadTrail', 'A lead’s trail: the client, each submission (created, merged), the event it caused and that event’s deliveries with their attempts', {
      200: json(obj({
        client: obj({ id: str, name: nullable(str), status: nullable(str), source: nullable(str), createdAt: nullable(time), possibleDuplicateOf: nullable(str), submissionCount: { type: 'integer' } }),
        submissions: { type: 'array', items: obj({
          number: { type: 'integer' }, requestId: nullable(str), at: nullable(time),
          event: nullable(obj({ id: str, type: str, timestamp: nullable(time), recorded: { type: 'boolean' } })),
          deliveries: { type: 'array', items: { allOf: [ref('DeliverySummary'), obj({ attempts: { type: 'array', items: ref('Attempt') } })] } },
        }) },
      }), 'The trail'), ...notFound,
    }, { parameters: [id] }),
  },
  '/api/settings/webhooks/{id}/stats': {
    get: op('getEndpointStats', 'An endpoint’s deliveries over the last 24 hours (hourly buckets) or 7 days (daily, UTC days): delivered, failed for good, retrying (attempts that failed and will be retried), the success rate (delivered out of delivered and failed; null when none ended) and the latency of the attempts (p50/p95, the upper bound of a fixed histogram bucket; null without attempts)', {
      200: json(obj({
        window: { enum: ['24h', '7d'] },
        totals: obj({ delivered: { type: 'integer' }, failed: { type: 'integer' }, retrying: { type: 'integer' }, success_rate: nullable({ type: 'number', minimum: 0, maximum: 1 }) }),
        buckets: { type: 'array', items: obj({ start: time, delivered: { type: 'integer' }, failed: { type: 'integer' }, retrying: { type: 'integer' }, p50_ms: nullable({ type: 'integer' }), p95_ms: nullable({ type: 'integer' }) }) },
      }), 'The window, oldest bucket first'), ...notFound,
    }, { parameters: [id] }),
  },
  '/api/settings/leads/stats': {
    get: op('getLeadStats', 'New leads per day over the last 30 days (UTC days), by where they came in: the lead endpoint (secret keys), a page’s script (publishable keys) or a no-script form', {
      200: json(obj({
        window: { const: '30d' },
        totals: obj({ leads: { type: 'integer' } }),
        buckets: { type: 'array', items: obj({ start: time, by_source: obj({ lead_endpoint: { type: 'integer' }, page_key: { type: 'integer' }, no_script_form: { type: 'integer' } }) }) },
      }), 'The window, oldest day first'),
    }),
  },
  '/api/settings/notifications': {
    get: op('listNoticeRecipients', 'Who is sent notices (new leads, paused or disabled endpoints, a daily digest), each with its status', {
      200: json(recipients, 'The recipients'),
    }),
    put: op('setNoticeRecipients', 'Set the whole list of recipients (at most 10): a new address is sent one confirmation e-mail and gets nothing else until its link is followed; known ones keep their status', {
      200: json(recipients, 'The recipients, as stored'),
    }),
  },
  '/api/settings/audit': {
    get: op('listAudit', 'Changes made in the settings, with the acting user, newest first (kept 30 days)', {
      200: json(obj({ entries: { type: 'array', items: obj({ id: str, at: time, userId: str, action: str, targetId: str, detail: { type: 'object' }, requestId: str }, ['id', 'at', 'userId', 'action']) } }), 'The entries'),
    }),
  },
};

/** A zod schema as the JSON Schema of what a request may send. */
const requestJsonSchema = (schema: z.ZodMiniType) => {
  const { $schema: _ignored, ...rest } = z.toJSONSchema(schema, { io: 'input', unrepresentable: 'any' }) as Record<string, unknown>;
  return rest;
};

const refused = problem('Invalid fields (`errors[]`, each naming its field): a field or query parameter not documented here, a value out of its bounds or format, or a rule of the domain');
const bodyProblems = {
  400: problem('Malformed JSON, or a body that is not UTF-8'),
  413: problem('Body larger than 16 KiB'),
  415: problem('Content-Type is not application/json'),
};

/**
 * The paths with each route's request body and query parameters from its zod schemas
 * (request-schemas.ts), and the answers an invalid request gets.
 */
function withRequests<P extends Record<string, Record<string, { parameters?: unknown[]; responses: Record<string, unknown> }>>>(paths: P): P {
  return Object.fromEntries(Object.entries(paths).map(([path, operations]) => [path, Object.fromEntries(Object.entries(operations).map(([method, operation]) => {
    const schemas = (requestSchemas as Record<string, RequestSchemas>)[`${method.toUpperCase()} ${path}`];
    if (!schemas) return [method, operation];
    const query = schemas.query ? requestJsonSchema(schemas.query) as { properties: Record<string, { description?: string }>; required?: string[] } : undefined;
    const parameters = [
      ...(operation.parameters ?? []),
      ...Object.entries(query?.properties ?? {}).map(([name, { description, ...schema }]) => ({
        name, in: 'query', ...(query?.required?.includes(name) ? { required: true } : {}), ...(description ? { description } : {}), schema,
      })),
    ];
    return [method, {
      ...operation,
      ...(parameters.length ? { parameters } : {}),
      ...(schemas.body ? { requestBody: { required: schemas.bodyRequired !== false, content: { 'application/json': { schema: requestJsonSchema(schemas.body) } } } } : {}),
      responses: { ...operation.responses, 422: refused, ...(schemas.body ? bodyProblems : {}) },
    }];
  }))])) as P;
}
