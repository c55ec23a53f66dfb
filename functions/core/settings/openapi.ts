/**
 * The whole API's OpenAPI document: the lead endpoint's (functions/core/intake/openapi.ts) and the
 * management API of the organization settings, every /api/settings route of functions/front-door/routes.ts with
 * the shapes of views.ts and the session token. The local stack serves it at /openapi.json and
 * `npm run docs:openapi` writes docs/openapi.json; test/unit/settings/openapi.test.ts checks that
 * each route is documented.
 */
import { leadEndpointDocument } from '../intake/openapi.js';

export function openApiDocument(serverUrl?: string) {
  const lead = leadEndpointDocument(serverUrl);
  return {
    ...lead,
    info: { ...lead.info, description: `${lead.info.description} Organization admins manage keys and webhooks through the settings API (/api/settings, session tokens).` },
    paths: { ...lead.paths, ...settingsPaths },
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
const invalid = { 422: problem('Invalid fields (`errors[]`)'), 400: problem('Malformed JSON'), 415: problem('Content-Type is not application/json') };
const overview = obj({
  organization: obj({ id: str, name: str, plan: str, billing: { enum: ['prepaid', 'postpaid'] }, walletBalance: nullable({ type: 'number' }), currency: { const: 'USD' }, duplicatePolicy: { enum: ['flag', 'merge'] } }),
  usage: obj({ today: obj({ calls: { type: 'integer' }, billed: { type: 'number' } }), month: obj({ calls: { type: 'integer' }, billed: { type: 'number' } }) }),
  baseUrl: str, leadEndpoint: str, curlExamples: { type: 'array', items: obj({ title: str, command: str }) }, user: obj({ id: str }),
  revocationSeconds: { type: 'integer', description: 'A revoked key is refused everywhere within this many seconds' },
});
const id = { name: 'id', in: 'path', required: true, schema: str };
/** An endpoint's options as a request gives them (delivery/endpoint-fields.ts). */
const endpointOptions = {
  headers: {
    type: 'object', maxProperties: 10, additionalProperties: nullable({ type: 'string', minLength: 1, maxLength: 1000 }),
    description: 'Custom headers by name (an RFC 9110 token; webhook-*, content-type, content-length, host, user-agent, connection and other headers the delivery sets are refused): a value sets one, null removes one; the others stay. At most 10.',
  },
  rate_limit_per_second: { ...nullable({ type: 'integer', minimum: 1, maximum: 100 }), description: 'At most this many deliveries a second to the endpoint; null: no limit. Over it, deliveries wait without using attempts.' },
};
const grace = (max: number, def: number) => ({ required: false, content: { 'application/json': { schema: obj({ grace_hours: { type: 'number', minimum: 0, maximum: max, default: def, description: 'Hours the old one keeps working' } }, []) } } });
const body = (schema: unknown) => ({ required: true, content: { 'application/json': { schema } } });
const op = (operationId: string, summary: string, responses: Record<string, unknown>, extra: Record<string, unknown> = {}) =>
  ({ operationId, summary, tags: ['Organization settings'], security: [{ sessionToken: [] }], ...extra, responses: { ...responses, ...common } });

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
    description: nullable(str), createdAt: time, updatedAt: time, secretCount: { type: 'integer' },
    headers: { type: 'object', additionalProperties: str, description: 'Custom headers sent with every delivery, by lower-case name; values masked (`••••` and, for 16 characters or more, the last 4)' },
    rateLimitPerSecond: { ...nullable({ type: 'integer' }), description: 'At most this many deliveries a second; null: no limit' },
    disabledReason: str, failingSince: time,
    circuit: obj({ state: { enum: ['closed', 'open', 'half-open'] }, until: time }, ['state']),
  }, ['id', 'url', 'events', 'enabled', 'description', 'createdAt', 'updatedAt', 'secretCount', 'headers', 'rateLimitPerSecond']),
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

export const settingsPaths = {
  '/api/settings': {
    get: op('getSettings', 'The organization, its usage, base URL and cURL examples', { 200: json(overview, 'The settings overview') }),
    patch: op('updateSettings', 'Set what a lead matching an existing client does: `flag` (a new client marked possible_duplicate_of) or `merge` (docs/leads.md)', {
      200: json(overview, 'The settings overview, changed'), ...invalid,
    }, { requestBody: body(obj({ duplicate_policy: { enum: ['flag', 'merge'] } }, ['duplicate_policy'])) }),
  },
  '/api/settings/keys': {
    get: op('listKeys', 'API keys (never the keys themselves)', { 200: json(obj({ keys: { type: 'array', items: ref('KeySummary') } }), 'The keys') }),
    post: op('createKey', 'Generate an API key (the only response that shows it)', {
      201: json(obj({ key: ref('KeySummary'), secret: { type: 'string', description: 'The key: shown once' } }), 'Created'), ...invalid, ...lostRace,
    }, { requestBody: body(obj({ name: { type: 'string', minLength: 1, maxLength: 100 }, kind: { enum: ['secret', 'publishable'] }, origins: { type: 'array', items: str },
      thank_you_url: { type: 'string', format: 'uri' }, daily_cap: { type: 'integer', minimum: 1 }, per_ip_limit: { type: 'integer', minimum: 1 }, honeypot_field: str,
    }, ['name'])) }),
  },
  '/api/settings/keys/{id}': {
    delete: op('revokeKey', 'Revoke a key now', { 200: json(obj({ key: ref('KeySummary') }), 'Revoked'), ...notFound, ...lostRace }, { parameters: [id] }),
  },
  '/api/settings/keys/{id}/rotate': {
    post: op('rotateKey', 'Issue a new key; the old one works for the grace', {
      201: json(obj({ key: ref('KeySummary'), secret: str, previous: ref('KeySummary') }), 'The new key (shown once) and the old one, now expiring'), ...notFound, ...invalid, ...lostRace,
    }, { parameters: [id], requestBody: grace(168, 24) }),
  },
  '/api/settings/events': {
    get: op('listEvents', 'The events an endpoint can subscribe to, with both name forms, each payload\'s JSON Schema and an example', {
      200: json(obj({ events: { type: 'array', items: obj({ name: str, alias: nullable(str), description: str, group: str, schema: { type: 'object', description: 'JSON Schema (2020-12) of the payload' }, example: { type: 'object' } }) } }), 'The catalog'),
    }),
  },
  '/api/settings/webhooks': {
    get: op('listEndpoints', 'Webhook endpoints (never their secrets)', { 200: json(obj({ endpoints: { type: 'array', items: ref('Endpoint') } }), 'The endpoints') }),
    post: op('addEndpoint', 'Add an endpoint (the only response that shows its signing secret)', {
      201: json(obj({ endpoint: ref('Endpoint'), secret: { type: 'string', description: '`whsec_…`: shown once' } }), 'Added'), ...invalid, ...lostRace,
    }, { requestBody: body(obj({ url: str, events: { type: 'array', items: str, minItems: 1 }, description: str, ...endpointOptions }, ['url', 'events'])) }),
  },
  '/api/settings/webhooks/{id}': {
    patch: op('updateEndpoint', 'Change the URL, events, description, enabled flag, custom headers or rate limit (enabling closes the circuit)', { 200: json(obj({ endpoint: ref('Endpoint') }), 'Updated'), ...notFound, ...invalid, ...lostRace }, {
      parameters: [id], requestBody: body(obj({ url: str, events: { type: 'array', items: str, minItems: 1 }, enabled: { type: 'boolean' }, description: nullable(str), ...endpointOptions }, [])),
    }),
    delete: op('deleteEndpoint', 'Remove an endpoint', { 200: json(obj({ endpoint: ref('Endpoint') }), 'Removed'), ...notFound, ...lostRace }, { parameters: [id] }),
  },
  '/api/settings/webhooks/{id}/rotate-secret': {
    post: op('rotateEndpointSecret', 'A new signing secret; the old ones keep signing for the grace', {
      200: json(obj({ endpoint: ref('Endpoint'), secret: str }), 'The new secret (shown once)'), ...notFound, ...invalid, ...lostRace,
    }, { parameters: [id], requestBody: grace(168, 24) }),
  },
  '/api/settings/webhooks/{id}/test': {
    post: op('sendTestEvent', 'Send a test event (webhook.test, or any subscribed type as its catalog example marked "test": true) and wait (up to 10 s) for the first attempt', {
      200: json(obj({ delivery: ref('DeliveryDetail') }), 'The delivery: delivered, retrying, failed, or still pending after the wait'), ...notFound, ...invalid,
      409: problem('The endpoint is disabled: enable it first'),
    }, { parameters: [id], requestBody: body(obj({ event_type: { type: 'string', description: 'A type the endpoint subscribes to; default webhook.test' } }, [])) }),
  },
  '/api/settings/deliveries': {
    get: op('listDeliveries', 'Deliveries, newest first', { 200: json(obj({ deliveries: { type: 'array', items: ref('DeliverySummary') }, nextCursor: nullable(str) }), 'A page'), ...notFound, ...invalid }, {
      parameters: [
        { name: 'status', in: 'query', schema: { enum: ['pending', 'delivered', 'retrying', 'failed', 'skipped'] } },
        { name: 'endpoint', in: 'query', schema: str },
        { name: 'event_type', in: 'query', schema: str }, { name: 'search', in: 'query', schema: str, description: 'An event id or a delivery id' },
        { name: 'since', in: 'query', schema: time }, { name: 'until', in: 'query', schema: time },
        { name: 'cursor', in: 'query', schema: str, description: 'nextCursor of the previous page' },
        { name: 'limit', in: 'query', schema: { type: 'integer', minimum: 1, maximum: 200, default: 50 } },
      ],
    }),
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
      202: json(bulk, 'How many were queued'), ...notFound, ...invalid,
    }, { requestBody: { required: false, content: { 'application/json': { schema: obj({ endpoint: str, since: time, until: time }, []) } } } }),
  },
  '/api/settings/deliveries/recover': {
    post: op('recoverFailed', 'Send again every delivery that failed since a time (of one endpoint or all); with dry_run, only count them', {
      200: json(obj({ ...bulkFields, dryRun: { const: true } }, ['count', 'retrying', 'dryRun']), 'How many would be queued (dry_run)'),
      202: json(bulk, 'How many were queued'), ...notFound, ...invalid,
    }, { requestBody: body(obj({ since: time, endpoint_id: str, dry_run: { type: 'boolean' } }, ['since'])) }),
  },
  '/api/settings/requests': {
    get: op('listRequests', 'The lead endpoint’s request log, newest first (kept 30 days)', {
      200: json(obj({
        requests: { type: 'array', items: obj({ at: time, method: str, path: str, status: { type: 'integer' }, keyId: nullable(str), keyName: nullable(str), keyLast4: nullable(str), requestId: str, durationMs: nullable({ type: 'integer' }), detail: nullable(str), clientId: nullable(str) }) },
        nextCursor: { ...nullable(str), description: 'Where the next page starts; null: no more. A page may hold fewer rows than `limit`, even none, while this is set: read on until it is null' },
      }), 'A page'), ...invalid,
    }, { parameters: [{ name: 'cursor', in: 'query', schema: str }, { name: 'limit', in: 'query', schema: { type: 'integer', minimum: 1, maximum: 200, default: 50 } }] }),
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
  '/api/settings/audit': {
    get: op('listAudit', 'Changes made in the settings, with the acting user, newest first (kept 30 days)', {
      200: json(obj({ entries: { type: 'array', items: obj({ id: str, at: time, userId: str, action: str, targetId: str, detail: { type: 'object' }, requestId: str }, ['id', 'at', 'userId', 'action']) } }), 'The entries'),
    }, { parameters: [{ name: 'limit', in: 'query', schema: { type: 'integer', minimum: 1, maximum: 200, default: 50 } }] }),
  },
};
