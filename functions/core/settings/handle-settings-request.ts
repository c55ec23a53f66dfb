/**
 * The management API of the organization settings (DESIGN §14, contract in docs/settings.md): one
 * session token (session-token.ts) per request, scoped to its organization on every route: an id
 * of another organization is simply not found (404). A per-organization rate limit, and every change
 * recorded in the audit log with the acting user. The operations are the domain's own (the CLI
 * calls the same ones): api-keys.ts, endpoints.ts, test-event.ts, redrive.ts.
 */
import type { Deps } from '../platform/deps.js';
import { DomainError, methodNotAllowed, notFound, tooManyRequests, unauthorized, validationFailed, type FieldError } from '../platform/errors.js';
import { logger } from '../platform/observability.js';
import { readJsonBody, type HttpOutcome, type HttpRequest } from '../platform/http-request.js';
import type { Organization } from '../platform/model.js';
import { createApiKey, listApiKeys, revokeApiKey, rotateApiKey, type NewApiKeyOptions } from '../tenancy/api-keys.js';
import { getOrganization, setDuplicatePolicy } from '../tenancy/organizations.js';
import { checkRateLimit, rateLimitHeaders } from '../tenancy/rate-limit.js';
import { addEndpoint, getEndpoint, listEndpoints, removeEndpoint, rotateSecret, updateEndpoint } from '../delivery/endpoints.js';
import { redriveDelivery, redriveFailed } from '../delivery/redrive.js';
import { findOrganizationDelivery, waitForFirstOutcome } from '../delivery/first-outcome.js';
import { sendTestEvent } from '../events/test-event.js';
import { catalog } from '../events/catalog.js';
import { listAudit, recordChange, type AuditAction } from './audit-log.js';
import { bearerToken, verifySessionToken, type Session } from './session-token.js';
import { settingsOverview } from './overview.js';
import { listRequestHistory } from './request-history.js';
import { listDeliverySummaries } from './delivery-summaries.js';
import { deliveryDetail, deliverySummary, endpointView, isRetrying, keyView, type DeliveryStatusView } from './views.js';

/** Management requests per organization per minute (all of its admins together). */
export const SETTINGS_RATE_LIMIT_PER_MINUTE = 300;
const MAX_BODY_BYTES = 16 * 1024;
/** How long "Send test event" waits for the first attempt before answering with the delivery still pending. */
export const TEST_EVENT_WAIT_MS = 10_000;
const MAX_GRACE_HOURS = 168;
/** Seconds a caller waits before retrying when the session-token secret cannot be read. */
export const SECRET_RETRY_AFTER_SECONDS = 5;
/** The statuses the deliveries list filters by (an unknown one is a 422, not an empty list). */
const DELIVERY_STATUSES: DeliveryStatusView[] = ['pending', 'retrying', 'delivered', 'failed', 'skipped'];
/** The bounds live in the domain, enforced in the write that adds one (docs/decisions.md "Settings writes"). */
export { MAX_SIGNING_SECRETS } from '../delivery/endpoints.js';
export { MAX_LIVE_KEYS } from '../tenancy/api-keys.js';
/** Failed deliveries one "Re-deliver all failed" re-queues (newest first); the answer's `remaining` counts the rest. */
export const REDELIVER_ALL_MAX = 500;

interface Context {
  deps: Deps;
  request: HttpRequest;
  session: Session;
  organization: Organization;
  params: Record<string, string>;
  query: Record<string, string>;
  /** Records a change in the audit log as the session's user. */
  audit(action: AuditAction, targetId?: string, detail?: Record<string, unknown>): Promise<unknown>;
}
type Answer = { status: number; body: unknown };
type Operation = (c: Context) => Promise<Answer>;

/** The operations by `METHOD resource` (the resources of lib/topology.ts routes). */
const operations: Record<string, Operation> = {
  'GET /api/settings': async (c) => ({ status: 200, body: await settingsOverview(c.deps, c.organization, c.request.baseUrl ?? '', c.session.userId) }),
  // The organization's own choices; for now what a lead matching an existing client does (docs/leads.md "Duplicates").
  'PATCH /api/settings': async (c) => {
    const body = objectBody(c.request);
    const errors = unknownFields(body, ['duplicate_policy']);
    if (typeof body.duplicate_policy !== 'string') errors.push({ field: 'duplicate_policy', message: 'is required: flag or merge' });
    if (errors.length) throw validationFailed(errors);
    const updated = await setDuplicatePolicy(c.deps, c.organization.id, body.duplicate_policy as string);
    await c.audit('organization.duplicate_policy_set', c.organization.id, { duplicatePolicy: updated.duplicatePolicy });
    return { status: 200, body: await settingsOverview(c.deps, updated, c.request.baseUrl ?? '', c.session.userId) };
  },

  'GET /api/settings/keys': async (c) => ({ status: 200, body: { keys: (await listApiKeys(c.deps, c.organization.id)).map((k) => keyView(k)) } }),
  'POST /api/settings/keys': async (c) => {
    const body = objectBody(c.request);
    const errors: FieldError[] = [];
    if (typeof body.name !== 'string') errors.push({ field: 'name', message: 'is required: 1 to 100 characters' });
    if (body.kind !== undefined && body.kind !== 'secret' && body.kind !== 'publishable') errors.push({ field: 'kind', message: 'must be secret or publishable' });
    if (body.origins !== undefined && !(Array.isArray(body.origins) && body.origins.every((o) => typeof o === 'string'))) errors.push({ field: 'origins', message: 'must be a list of origins' });
    // A publishable key's policy (DESIGN §15), named as the rest of this API names fields; the domain validates the values.
    const policyFields = { thank_you_url: 'thankYouUrl', daily_cap: 'dailyCap', per_ip_limit: 'perIpLimit', honeypot_field: 'honeypotField' } as const;
    for (const [field, option] of Object.entries(policyFields)) {
      const value = body[field];
      const want = option === 'dailyCap' || option === 'perIpLimit' ? 'number' : 'string';
      if (value !== undefined && typeof value !== want) errors.push({ field, message: `must be a ${want}` });
    }
    errors.push(...unknownFields(body, ['name', 'kind', 'origins', ...Object.keys(policyFields)]));
    if (errors.length) throw validationFailed(errors);
    const options: NewApiKeyOptions = { ...(body.kind ? { kind: body.kind as NewApiKeyOptions['kind'] } : {}), ...(body.origins ? { origins: body.origins as string[] } : {}) };
    for (const [field, option] of Object.entries(policyFields)) if (body[field] !== undefined) Object.assign(options, { [option]: body[field] });
    const { key, record } = await createApiKey(c.deps, c.organization.id, body.name as string, options);
    await c.audit('key.created', record.keyId, { name: record.name, kind: record.kind ?? 'secret' });
    return { status: 201, body: { key: keyView(record, 'active'), secret: key } };
  },
  'POST /api/settings/keys/{id}/rotate': async (c) => {
    const graceHours = graceOf(objectBody(c.request, true));
    const { key, record, previous } = await rotateApiKey(c.deps, c.organization.id, c.params.id, { graceHours });
    await c.audit('key.rotated', c.params.id, { newKeyId: record.keyId, graceHours: graceHours ?? c.deps.settings.rotationGraceHours });
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
      // What an endpoint can subscribe to: webhook.test goes to every endpoint anyway.
      events: catalog.filter((e) => e.type !== 'webhook.test').map((e) => ({ name: e.type, alias: e.alias ?? null, description: e.description, group: groupOf(e.type) })),
    },
  }),

  'GET /api/settings/webhooks': async (c) => ({ status: 200, body: { endpoints: (await listEndpoints(c.deps, c.organization.id)).map(endpointView) } }),
  'POST /api/settings/webhooks': async (c) => {
    const body = objectBody(c.request);
    const errors: FieldError[] = [];
    if (typeof body.url !== 'string') errors.push({ field: 'url', message: 'is required' });
    if (!Array.isArray(body.events) || body.events.length === 0 || !body.events.every((e) => typeof e === 'string')) errors.push({ field: 'events', message: 'must be a non-empty list of event names' });
    if (body.description !== undefined && typeof body.description !== 'string') errors.push({ field: 'description', message: 'must be text' });
    errors.push(...unknownFields(body, ['url', 'events', 'description']));
    if (errors.length) throw validationFailed(errors);
    const { endpoint, secret } = await addEndpoint(c.deps, c.organization.id, { url: body.url as string, events: body.events as string[], description: body.description as string | undefined });
    await c.audit('endpoint.created', endpoint.id, { url: endpoint.url, events: endpoint.events });
    return { status: 201, body: { endpoint: endpointView(endpoint), secret } };
  },
  'PATCH /api/settings/webhooks/{id}': async (c) => {
    const body = objectBody(c.request);
    const errors: FieldError[] = [];
    if (body.url !== undefined && typeof body.url !== 'string') errors.push({ field: 'url', message: 'must be a URL' });
    if (body.events !== undefined && !(Array.isArray(body.events) && body.events.length > 0 && body.events.every((e) => typeof e === 'string'))) errors.push({ field: 'events', message: 'must be a non-empty list of event names' });
    if (body.enabled !== undefined && typeof body.enabled !== 'boolean') errors.push({ field: 'enabled', message: 'must be true or false' });
    if (body.description !== undefined && body.description !== null && typeof body.description !== 'string') errors.push({ field: 'description', message: 'must be text' });
    const unknown = Object.keys(body).filter((k) => !['url', 'events', 'enabled', 'description'].includes(k));
    for (const field of unknown) errors.push({ field, message: 'is not a field of an endpoint' });
    if (errors.length) throw validationFailed(errors);
    const input = {
      ...(body.url !== undefined ? { url: body.url as string } : {}),
      ...(body.events !== undefined ? { events: body.events as string[] } : {}),
      ...(body.enabled !== undefined ? { enabled: body.enabled as boolean } : {}),
      ...(body.description !== undefined ? { description: (body.description as string | null) ?? '' } : {}),
    };
    const updated = await updateEndpoint(c.deps, c.organization.id, c.params.id, input);
    await c.audit('endpoint.updated', c.params.id, { fields: Object.keys(input), ...(input.url ? { url: updated.url } : {}), ...(input.enabled !== undefined ? { enabled: input.enabled } : {}) });
    return { status: 200, body: { endpoint: endpointView(updated) } };
  },
  'DELETE /api/settings/webhooks/{id}': async (c) => {
    const removed = await removeEndpoint(c.deps, c.organization.id, c.params.id);
    await c.audit('endpoint.deleted', c.params.id, { url: removed.url });
    return { status: 200, body: { endpoint: endpointView(removed) } };
  },
  'POST /api/settings/webhooks/{id}/rotate-secret': async (c) => {
    const graceHours = graceOf(objectBody(c.request, true));
    // Bounded (MAX_SIGNING_SECRETS) and versioned in the domain: a 422 past the bound, a 409 after repeated lost races.
    const { endpoint, secret } = await rotateSecret(c.deps, c.organization.id, c.params.id, { graceHours });
    await c.audit('endpoint.secret_rotated', c.params.id, { graceHours: graceHours ?? 24 });
    return { status: 200, body: { endpoint: endpointView(endpoint), secret } };
  },
  'POST /api/settings/webhooks/{id}/test': async (c) => {
    const endpoint = await getEndpoint(c.deps, c.organization.id, c.params.id);
    if (!endpoint) throw notFound(`No endpoint ${c.params.id}.`);
    const { eventId, deliveryIds: [deliveryId] } = await sendTestEvent(c.deps, c.organization.id, endpoint.id);
    await c.audit('endpoint.tested', endpoint.id, { eventId, deliveryId });
    // Bounded by the function's own time left (less a margin to answer), whichever is sooner.
    const left = c.request.deadline === undefined ? TEST_EVENT_WAIT_MS : c.request.deadline - Date.now() - 3_000;
    const delivery = await waitForFirstOutcome(c.deps, deliveryId, Math.max(0, Math.min(TEST_EVENT_WAIT_MS, left)));
    if (!delivery) throw notFound(`The test delivery ${deliveryId} was not recorded.`);
    return { status: 200, body: { delivery: deliveryDetail(delivery, new Map([[endpoint.id, endpoint.url]])) } };
  },

  'GET /api/settings/deliveries': async (c) => {
    const { status, endpoint, since, until, cursor } = c.query;
    const limit = limitOf(c.query.limit);
    if (status && !DELIVERY_STATUSES.includes(status as DeliveryStatusView)) throw validationFailed([{ field: 'status', message: `must be one of ${DELIVERY_STATUSES.join(', ')}` }]);
    if (endpoint && !(await getEndpoint(c.deps, c.organization.id, endpoint))) throw notFound(`No endpoint ${endpoint}.`);
    const after = cursor ? decodeCursor(cursor) : undefined;
    const [from, to] = [timeOf('since', since), timeOf('until', until)];
    // Summaries only (no payloads): see delivery-summaries.ts.
    const all = (await listDeliverySummaries(c.deps, c.organization.id))
      .filter((d) => (!endpoint || d.endpointId === endpoint) && (!from || d.createdAt >= from) && (!to || d.createdAt <= to));
    const filtered = status === 'retrying' ? all.filter(isRetrying)
      : status === 'pending' ? all.filter((d) => d.status === 'pending' && !isRetrying(d))
        : status ? all.filter((d) => d.status === status) : all;
    // Newest first by (createdAt, id): the cursor is the last item of the previous page.
    const ordered = filtered.sort((a, b) => b.createdAt.localeCompare(a.createdAt) || b.id.localeCompare(a.id));
    const rest = after ? ordered.filter((d) => d.createdAt < after.createdAt || (d.createdAt === after.createdAt && d.id < after.id)) : ordered;
    const page = rest.slice(0, limit);
    const urls = await endpointUrls(c);
    return {
      status: 200,
      body: { deliveries: page.map((d) => deliverySummary(d, urls)), nextCursor: rest.length > limit ? encodeCursor(page.at(-1)!) : null },
    };
  },
  'GET /api/settings/deliveries/{id}': async (c) => {
    const delivery = await requireDelivery(c);
    return { status: 200, body: { delivery: deliveryDetail(delivery, await endpointUrls(c)) } };
  },
  'POST /api/settings/deliveries/{id}/redeliver': async (c) => {
    await requireDelivery(c);
    // A tenant's click never sweeps the shared dead-letter queue (redrive.ts RedriveOptions).
    await redriveDelivery(c.deps, c.params.id, { sweepDeadLetters: false });
    await c.audit('delivery.redelivered', c.params.id);
    const delivery = await requireDelivery(c);
    return { status: 202, body: { delivery: deliverySummary(delivery, await endpointUrls(c)) } };
  },
  'POST /api/settings/deliveries/redeliver': async (c) => {
    const body = objectBody(c.request, true);
    const errors: FieldError[] = [];
    for (const field of ['endpoint', 'since', 'until']) if (body[field] !== undefined && typeof body[field] !== 'string') errors.push({ field, message: 'must be text' });
    errors.push(...unknownFields(body, ['endpoint', 'since', 'until']));
    if (errors.length) throw validationFailed(errors);
    const endpointId = body.endpoint as string | undefined;
    if (endpointId && !(await getEndpoint(c.deps, c.organization.id, endpointId))) throw notFound(`No endpoint ${endpointId}.`);
    const filter = { organizationId: c.organization.id, endpointId, since: timeOf('since', body.since as string | undefined), until: timeOf('until', body.until as string | undefined) };
    // Bounded per call so it ends well inside the function's time-out; the answer says what is left.
    const { redriven, hollow, remaining } = await redriveFailed(c.deps, filter, undefined, { sweepDeadLetters: false, limit: REDELIVER_ALL_MAX });
    await c.audit('deliveries.redelivered', endpointId, { count: redriven, since: filter.since, until: filter.until });
    return { status: 202, body: { count: redriven, ...(remaining ? { remaining } : {}), ...(hollow ? { notRedeliverable: hollow } : {}) } };
  },

  'GET /api/settings/audit': async (c) => ({ status: 200, body: { entries: await listAudit(c.deps, c.organization.id, { limit: limitOf(c.query.limit) }) } }),
  'GET /api/settings/requests': async (c) => ({ status: 200, body: await listRequestHistory(c.deps, c.organization.id, { cursor: c.query.cursor, limit: limitOf(c.query.limit) }) }),
};

/** The methods served on each resource, for the 405 of a method the gateway routed here but no operation takes. */
const methodsOf = (resource: string) => Object.keys(operations).filter((k) => k.endsWith(` ${resource}`)).map((k) => k.split(' ')[0]);

export interface SettingsApiOptions {
  /** The session-token signing secret (token-secret.ts: Secrets Manager, cached). */
  tokenSecret: () => Promise<string>;
}

/** The route of the settings function's API paths (the HTTP edge shapes the response). */
export function settingsApi(options: SettingsApiOptions) {
  return async function handleSettingsRequest(deps: Deps, request: HttpRequest): Promise<HttpOutcome> {
    let headers: Record<string, string> = {};
    try {
      const resource = request.resource ?? '';
      const operation = operations[`${request.method} ${resource}`];
      if (!operation) {
        const allowed = methodsOf(resource);
        throw allowed.length ? methodNotAllowed(allowed) : notFound('No route for this path.');
      }
      const session = await authenticateSession(deps, request, options);
      // An organization deleted since the token was minted has nothing to manage.
      const organization = await getOrganization(deps, session.organizationId);
      if (!organization) throw unauthorized('The session token is not valid.');
      const limit = await checkRateLimit(deps, `settings#${organization.id}`, SETTINGS_RATE_LIMIT_PER_MINUTE);
      headers = rateLimitHeaders(limit);
      if (!limit.allowed) throw tooManyRequests(limit.retryAfterSeconds ?? 1);
      const context: Context = {
        deps, request, session, organization,
        params: request.pathParameters ?? {},
        query: request.query ?? {},
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

function objectBody(request: HttpRequest, optional = false): Record<string, unknown> {
  const raw = Buffer.isBuffer(request.body) ? request.body.toString('utf8') : request.body ?? '';
  if (optional && raw.trim() === '') return {};
  const body = readJsonBody(request, MAX_BODY_BYTES);
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw validationFailed([{ field: '(body)', message: 'must be a JSON object' }]);
  return body as Record<string, unknown>;
}

function graceOf(body: Record<string, unknown>): number | undefined {
  const grace = body.grace_hours;
  const errors = unknownFields(body, ['grace_hours']);
  if (grace !== undefined && (typeof grace !== 'number' || !Number.isFinite(grace) || grace < 0 || grace > MAX_GRACE_HOURS)) errors.push({ field: 'grace_hours', message: `must be 0 to ${MAX_GRACE_HOURS} hours` });
  if (errors.length) throw validationFailed(errors);
  return grace as number | undefined;
}

/**
 * Fields a body may not carry: a misspelt one is a 422, never ignored (`{"grace": 0}` meant to cut
 * a leaked key off now must not leave it working for the default grace).
 */
function unknownFields(body: Record<string, unknown>, known: string[]): FieldError[] {
  return Object.keys(body).filter((k) => !known.includes(k)).map((field) => ({ field, message: 'is not a field of this request' }));
}

function limitOf(value: string | undefined): number {
  if (value === undefined || value === '') return 50;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1 || n > 200) throw validationFailed([{ field: 'limit', message: 'must be 1 to 200' }]);
  return n;
}

function timeOf(field: string, value: string | undefined): string | undefined {
  if (value === undefined || value === '') return undefined;
  const t = Date.parse(value);
  if (Number.isNaN(t)) throw validationFailed([{ field, message: 'must be an ISO-8601 time' }]);
  return new Date(t).toISOString();
}

const encodeCursor = (d: { createdAt: string; id: string }) => Buffer.from(JSON.stringify([d.createdAt, d.id])).toString('base64url');
function decodeCursor(cursor: string): { createdAt: string; id: string } {
  try {
    const [createdAt, id] = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as unknown[];
    if (typeof createdAt === 'string' && typeof id === 'string') return { createdAt, id };
  } catch { /* answered below */ }
  throw validationFailed([{ field: 'cursor', message: 'is not a cursor this API returned' }]);
}

async function requireDelivery(c: Context) {
  const delivery = await findOrganizationDelivery(c.deps, c.organization.id, c.params.id);
  if (!delivery) throw notFound(`No delivery ${c.params.id}.`);
  return delivery;
}

async function endpointUrls(c: Context): Promise<Map<string, string>> {
  return new Map((await listEndpoints(c.deps, c.organization.id)).map((e) => [e.id, e.url]));
}

const groups: Record<string, string> = { client: 'Clients', work_order: 'Work orders', invoice: 'Invoices', booking: 'Bookings', webhook: 'Testing' };
const groupOf = (type: string) => groups[type.split('.')[0]] ?? 'Other';
