/**
 * The management API of the organization settings (docs/settings.md): one
 * session token (session-token.ts) per request, scoped to its organization on every route: an id
 * of another organization is simply not found (404). A per-organization rate limit, and every change
 * recorded in the audit log with the acting user. The operations are the domain's own (the CLI
 * calls the same ones): api-keys.ts, endpoints.ts, test-event.ts, redeliver.ts.
 */
import type { Deps } from '../platform/deps.js';
import { conflict, DomainError, methodNotAllowed, notFound, tooManyRequests, unauthorized } from '../platform/errors.js';
import { logger } from '../platform/observability.js';
import type { HttpOutcome, HttpRequest } from '../platform/http-request.js';
import { createApiKey, listApiKeys, revokeApiKey, rotateApiKey, type NewApiKeyOptions } from '../tenancy/api-keys.js';
import { getOrganization, revokeSettingsLinks, setDuplicatePolicy } from '../tenancy/organizations.js';
import { checkRateLimit, rateLimitHeaders } from '../tenancy/rate-limit.js';
import { addEndpoint, getEndpoint, listEndpoints, removeEndpoint, rotateSecret, updateEndpoint } from '../delivery/endpoints.js';
import { waitForFirstOutcome } from '../delivery/first-outcome.js';
import { sendTestEvent } from '../events/test-event.js';
import { checkReceiver } from '../events/receiver-check.js';
import { catalog } from '../events/catalog.js';
import { eventSchema } from '../events/event-schema.js';
import { listAudit, recordChange } from './audit-log.js';
import { bearerToken, verifySessionToken, type Session } from './session-token.js';
import { settingsOverview } from './overview.js';
import { listRequestHistory } from './request-history.js';
import { leadTrail } from './lead-trail.js';
import { deliveryOperations } from './delivery-operations.js';
import { statisticsOperations } from './statistics.js';
import { DEFAULT_PAGE_ROWS, readRequest, type Context, type Operation } from './request-fields.js';
import type { BodyOf, QueryOf } from './request-schemas.js';
import type { EndpointOptions } from '../delivery/endpoints.js';
import { deliveryDetail, endpointView, keyView } from './views.js';
import { listRecipients, setRecipients } from '../notify/recipients.js';
import type { Recipient } from '../notify/recipient-store.js';

/** Management requests per organization per minute (all of its admins together). */
export const SETTINGS_RATE_LIMIT_PER_MINUTE = 300;
/** How long "Send test event" waits for the first attempt before answering with the delivery still pending. */
export const TEST_EVENT_WAIT_MS = 10_000;
/** Seconds a caller waits before retrying when the session-token secret cannot be read. */
export const SECRET_RETRY_AFTER_SECONDS = 5;
/** The bounds live in the domain, enforced in the write that adds one (docs/decisions.md "Settings writes"). */
export { MAX_SIGNING_SECRETS } from '../delivery/endpoints.js';
export { MAX_LIVE_KEYS } from '../tenancy/api-keys.js';
export { REDELIVER_ALL_MAX } from './bulk-redelivery.js';

/** The operations by `METHOD resource` (the resources of functions/front-door/routes.ts). */
const operations: Record<string, Operation> = {
  'GET /api/settings': async (c) => ({ status: 200, body: await settingsOverview(c.deps, c.organization, c.request.baseUrl ?? '', c.session.userId) }),
  // The organization's own choices; for now what a lead matching an existing client does (docs/leads.md "Duplicates").
  'PATCH /api/settings': async (c) => {
    const body = c.body as BodyOf<'PATCH /api/settings'>;
    const updated = await setDuplicatePolicy(c.deps, c.organization.id, body.duplicate_policy);
    await c.audit('organization.duplicate_policy_set', c.organization.id, { duplicatePolicy: updated.duplicatePolicy });
    return { status: 200, body: await settingsOverview(c.deps, updated, c.request.baseUrl ?? '', c.session.userId) };
  },

  'GET /api/settings/keys': async (c) => ({ status: 200, body: { keys: (await listApiKeys(c.deps, c.organization.id)).map((k) => keyView(k)) } }),
  'POST /api/settings/keys': async (c) => {
    const body = c.body as BodyOf<'POST /api/settings/keys'>;
    // A publishable key's policy (docs/leads.md#lead-forms-in-public-pages-publishable-keys), named as the rest of this API names fields;
    // the domain checks what the schema cannot (a policy on a secret key, the origins themselves).
    const options: NewApiKeyOptions = {
      ...(body.kind ? { kind: body.kind } : {}), ...(body.origins ? { origins: body.origins } : {}),
      ...(body.thank_you_url !== undefined ? { thankYouUrl: body.thank_you_url } : {}), ...(body.daily_cap !== undefined ? { dailyCap: body.daily_cap } : {}),
      ...(body.per_ip_limit !== undefined ? { perIpLimit: body.per_ip_limit } : {}), ...(body.honeypot_field !== undefined ? { honeypotField: body.honeypot_field } : {}),
    };
    const { key, record } = await createApiKey(c.deps, c.organization.id, body.name, options);
    await c.audit('key.created', record.keyId, { name: record.name, kind: record.kind ?? 'secret' });
    return { status: 201, body: { key: keyView(record, 'active'), secret: key } };
  },
  'POST /api/settings/keys/{id}/rotate': async (c) => {
    const { grace_hours: graceHours } = c.body as BodyOf<'POST /api/settings/keys/{id}/rotate'>;
    const { key, record, previous } = await rotateApiKey(c.deps, c.organization.id, c.params.id, { graceHours });
    await c.audit('key.rotated', c.params.id, { newKeyId: record.keyId, graceHours: graceHours ?? c.deps.config.rotationGraceHours });
    return { status: 201, body: { key: keyView(record, 'active'), secret: key, previous: keyView(previous) } };
  },
  'DELETE /api/settings/keys/{id}': async (c) => {
    const revoked = await revokeApiKey(c.deps, c.organization.id, c.params.id);
    await c.audit('key.revoked', c.params.id, { name: revoked.name });
    return { status: 200, body: { key: keyView(revoked) } };
  },

  'GET /api/settings/events': async () => ({
    status: 200,
    body: {
      // What an endpoint can subscribe to (webhook.test goes to every endpoint anyway), each with its
      // payload's JSON Schema and an example (the catalog's: docs/events.md).
      events: catalog.filter((e) => e.type !== 'webhook.test').map((e) => ({
        name: e.type, alias: e.alias ?? null, description: e.description, group: groupOf(e.type), schema: eventSchema(e), example: e.example,
      })),
    },
  }),

  'GET /api/settings/webhooks': async (c) => ({ status: 200, body: { endpoints: (await listEndpoints(c.deps, c.organization.id)).map(endpointView) } }),
  'POST /api/settings/webhooks': async (c) => {
    const body = c.body as BodyOf<'POST /api/settings/webhooks'>;
    const { endpoint, secret } = await addEndpoint(c.deps, c.organization.id, { url: body.url, events: body.events, description: body.description, ...(body.signing ? { signing: body.signing } : {}), ...endpointOptionsOf(body) });
    // As an update's: header names only, never their values (secrets).
    await c.audit('endpoint.created', endpoint.id, {
      url: endpoint.url, events: endpoint.events, signing: endpoint.signing,
      ...(endpoint.headers && Object.keys(endpoint.headers).length ? { headers: Object.keys(endpoint.headers) } : {}),
      ...(endpoint.rateLimitPerSecond ? { rateLimitPerSecond: endpoint.rateLimitPerSecond } : {}),
    });
    // An ed25519 endpoint has no secret to show: its public key is in the endpoint, at any time.
    return { status: 201, body: { endpoint: endpointView(endpoint), ...(secret ? { secret } : {}) } };
  },
  'PATCH /api/settings/webhooks/{id}': async (c) => {
    const body = c.body as BodyOf<'PATCH /api/settings/webhooks/{id}'>;
    const input = {
      ...(body.url !== undefined ? { url: body.url } : {}),
      ...(body.events !== undefined ? { events: body.events } : {}),
      ...(body.enabled !== undefined ? { enabled: body.enabled } : {}),
      ...(body.description !== undefined ? { description: body.description ?? '' } : {}),
      ...(body.keep_headers !== undefined ? { keepHeaders: body.keep_headers } : {}),
      ...(body.signing !== undefined ? { signing: body.signing } : {}),
      ...(body.grace_hours !== undefined ? { graceHours: body.grace_hours } : {}),
      ...endpointOptionsOf(body),
    };
    const { secret, ...updated } = await updateEndpoint(c.deps, c.organization.id, c.params.id, input);
    // Header names only, never their values (secrets).
    await c.audit('endpoint.updated', c.params.id, {
      fields: Object.keys(input).filter((f) => f !== 'keepHeaders'), ...(input.url ? { url: updated.url } : {}), ...(input.keepHeaders ? { keptHeaders: true } : {}), ...(input.enabled !== undefined ? { enabled: input.enabled } : {}),
      ...(input.headers ? { headers: Object.keys(input.headers as object).map((n) => n.toLowerCase()) } : {}),
      ...(input.rateLimitPerSecond !== undefined ? { rateLimitPerSecond: input.rateLimitPerSecond } : {}),
      ...(input.signing !== undefined ? { signing: input.signing, graceHours: input.graceHours ?? 24 } : {}),
    });
    // A switch to hmac shows its new secret this once, as a rotation does.
    return { status: 200, body: { endpoint: endpointView(updated), ...(secret ? { secret } : {}) } };
  },
  'DELETE /api/settings/webhooks/{id}': async (c) => {
    const removed = await removeEndpoint(c.deps, c.organization.id, c.params.id);
    await c.audit('endpoint.deleted', c.params.id, { url: removed.url });
    return { status: 200, body: { endpoint: endpointView(removed) } };
  },
  'POST /api/settings/webhooks/{id}/rotate-secret': async (c) => {
    const { grace_hours: graceHours } = c.body as BodyOf<'POST /api/settings/webhooks/{id}/rotate-secret'>;
    // Bounded (MAX_SIGNING_SECRETS) and versioned in the domain: a 422 past the bound, a 409 after repeated lost races.
    const { endpoint, secret } = await rotateSecret(c.deps, c.organization.id, c.params.id, { graceHours });
    await c.audit('endpoint.secret_rotated', c.params.id, { graceHours: graceHours ?? 24, signing: endpoint.signing });
    return { status: 200, body: { endpoint: endpointView(endpoint), ...(secret ? { secret } : {}) } };
  },
  'POST /api/settings/webhooks/{id}/test': async (c) => {
    const endpoint = await getEndpoint(c.deps, c.organization.id, c.params.id);
    if (!endpoint) throw notFound(`No endpoint ${c.params.id}.`);
    // A test is the check before enabling one's receiver: it would be skipped, or sent while the page says disabled.
    if (!endpoint.enabled) throw conflict(`The endpoint ${endpoint.id} is disabled: enable it, then send a test event.`);
    // Any event type the endpoint subscribes to, sent as its catalog example marked `"test": true`; webhook.test by default.
    const eventType = (c.body as BodyOf<'POST /api/settings/webhooks/{id}/test'>).event_type;
    const { eventId, deliveryIds: [deliveryId] } = await sendTestEvent(c.deps, c.organization.id, endpoint.id, { eventType });
    await c.audit('endpoint.tested', endpoint.id, { eventId, deliveryId, eventType: eventType ?? 'webhook.test' });
    // Bounded by the function's own time left (less a margin to answer), whichever is sooner.
    const left = c.request.deadline === undefined ? TEST_EVENT_WAIT_MS : c.request.deadline - Date.now() - 3_000;
    const delivery = await waitForFirstOutcome(c.deps, c.organization.id, { deliveryId, eventId }, Math.max(0, Math.min(TEST_EVENT_WAIT_MS, left)));
    if (!delivery) throw notFound(`The test delivery ${deliveryId} was not recorded.`);
    return { status: 200, body: { delivery: deliveryDetail(delivery, new Map([[endpoint.id, endpoint.url]])) } };
  },

  // The receiver check (docs/webhooks.md#checking-a-receiver): 404, 409 (disabled, paused), 429 within a minute of the last.
  'POST /api/settings/webhooks/{id}/check': async (c) => {
    const answer = await checkReceiver(c.deps, c.organization.id, c.params.id);
    await c.audit('endpoint.checked', c.params.id, { verdict: answer.verdict });
    return { status: 200, body: answer };
  },

  ...deliveryOperations,
  ...statisticsOperations,

  // Every link issued until now, this one included, is signed out (docs/settings.md "Signing out every link").
  'POST /api/settings/links/revoke': async (c) => {
    const at = await revokeSettingsLinks(c.deps, c.organization.id);
    await c.audit('settings.links_revoked', c.organization.id, { revokedAt: new Date(at).toISOString() });
    return { status: 200, body: { revoked_at: new Date(at).toISOString() } };
  },
  'GET /api/settings/audit': async (c) => {
    const { limit = DEFAULT_PAGE_ROWS } = c.query as QueryOf<'GET /api/settings/audit'>;
    return { status: 200, body: { entries: await listAudit(c.deps, c.organization.id, { limit }) } };
  },
  'GET /api/settings/requests': async (c) => {
    const { cursor, limit = DEFAULT_PAGE_ROWS } = c.query as QueryOf<'GET /api/settings/requests'>;
    return { status: 200, body: await listRequestHistory(c.deps, c.organization.id, { cursor, limit }) };
  },
  // Who is sent notices (docs/notifications.md "Recipients"); a new address gets its confirmation e-mail only.
  'GET /api/settings/notifications': async (c) => ({ status: 200, body: { recipients: (await listRecipients(c.deps, c.organization.id)).map(recipientView) } }),
  'PUT /api/settings/notifications': async (c) => {
    const body = c.body as BodyOf<'PUT /api/settings/notifications'>;
    const change = await setRecipients(c.deps, c.organization.id, body.recipients);
    if (change.added.length || change.removed.length || change.changed.length) {
      await c.audit('notifications.recipients_set', c.organization.id, { added: change.added, removed: change.removed, changed: change.changed });
    }
    return { status: 200, body: { recipients: change.recipients.map(recipientView) } };
  },
  'GET /api/settings/clients/{id}/trail': async (c) => ({ status: 200, body: await leadTrail(c.deps, c.organization.id, c.params.id) }),
};

/** A recipient as the API shows it: a suppressed one says why and since when, when it was recorded (items from before reasons were kept say neither). */
const recipientView = (r: Recipient) => ({
  email: r.email, notices: r.notices, status: r.status,
  ...(r.status === 'suppressed' && (r.suppressedReason || r.suppressedAt) ? { suppressed: { ...(r.suppressedReason ? { reason: r.suppressedReason } : {}), ...(r.suppressedAt ? { at: r.suppressedAt } : {}) } } : {}),
});

/** An endpoint body's `headers` and `rate_limit_per_second`, as the domain takes them (it checks what needs the endpoint: delivery/endpoint-fields.ts). */
const endpointOptionsOf = (body: BodyOf<'PATCH /api/settings/webhooks/{id}'>): EndpointOptions => ({
  ...(body.headers !== undefined ? { headers: body.headers } : {}),
  ...(body.rate_limit_per_second !== undefined ? { rateLimitPerSecond: body.rate_limit_per_second } : {}),
});

/** The methods served on each resource, for the 405 of a method the gateway routed here but no operation takes. */
const methodsOf = (resource: string) => Object.keys(operations).filter((k) => k.endsWith(` ${resource}`)).map((k) => k.split(' ')[0]);

export interface SettingsApiOptions {
  /** The session-token signing secret (token-secret.ts: Secrets Manager, cached). */
  tokenSecret: () => Promise<string>;
}

/** The route of the settings function's API paths (the HTTP adapter shapes the response). */
export function settingsApi(options: SettingsApiOptions) {
  return async function handleSettingsRequest(deps: Deps, request: HttpRequest): Promise<HttpOutcome> {
    let headers: Record<string, string> = {};
    try {
      const resource = request.resource ?? '';
      const route = `${request.method} ${resource}`;
      const operation = operations[route];
      if (!operation) {
        const allowed = methodsOf(resource);
        throw allowed.length ? methodNotAllowed(allowed) : notFound('No route for this path.');
      }
      const session = await authenticateSession(deps, request, options);
      // An organization deleted since the token was minted has nothing to manage. Read consistently:
      // a link signed out a moment ago is refused on its very next request.
      const organization = await getOrganization(deps, session.organizationId, { consistent: true });
      if (!organization) throw unauthorized('The session token is not valid.');
      if (organization.linksRevokedAt !== undefined && session.issuedAt.getTime() <= organization.linksRevokedAt) {
        throw unauthorized('This settings link was signed out: open the settings page from the CRM again.');
      }
      const limit = await checkRateLimit(deps, `settings#${organization.id}`, SETTINGS_RATE_LIMIT_PER_MINUTE);
      headers = rateLimitHeaders(limit);
      if (!limit.allowed) throw tooManyRequests(limit.retryAfterSeconds ?? 1);
      // Before the operation: nothing of an invalid request reaches the domain.
      const { body, query } = readRequest(route, request);
      const context: Context = {
        deps, request, session, organization, body, query,
        params: request.pathParameters ?? {},
        audit: (action, targetId, detail) => recordChange(deps, { organizationId: organization.id, userId: session.userId, action, targetId, detail, requestId: request.requestId }),
      };
      const answer = await operation(context);
      // Management calls are not the integration API's request log (that lists the lead endpoint's
      // calls); changes are in the audit log. Responses carry no caching: some hold a secret once.
      return { ...answer, headers: { ...headers, 'Cache-Control': 'no-store' } };
    } catch (error) {
      return { error, headers: { ...headers, 'Cache-Control': 'no-store' } };
    }
  };
}

async function authenticateSession(deps: Deps, request: HttpRequest, options: SettingsApiOptions): Promise<Session> {
  const token = bearerToken(request.headers);
  // An API key authorizes the integration API only, never the management of keys and webhooks.
  if (!token && request.headers['x-api-key'] !== undefined) throw unauthorized('API keys do not authorize the settings API: open the settings page from the CRM.');
  if (!token) return verifySessionToken('', token, deps.now()); // the 401 for a missing token, no secret needed
  let secret: string;
  try {
    secret = await options.tokenSecret();
  } catch (error) {
    // Secrets Manager throttled or unreachable (a failed read is not cached): a 503 the page may
    // retry, not a 500; the cause is logged for the operator.
    logger.error('settings: cannot read the session-token secret', { error: error as Error });
    throw new DomainError(503, 'service-unavailable', 'Service unavailable',
      `The settings cannot be opened right now; retry in ${SECRET_RETRY_AFTER_SECONDS} s.`, { headers: { 'Retry-After': String(SECRET_RETRY_AFTER_SECONDS) } });
  }
  return verifySessionToken(secret, token, deps.now());
}

const groups: Record<string, string> = { client: 'Clients', work_order: 'Work orders', invoice: 'Invoices', booking: 'Bookings', webhook: 'Testing' };
const groupOf = (type: string) => groups[type.split('.')[0]] ?? 'Other';
