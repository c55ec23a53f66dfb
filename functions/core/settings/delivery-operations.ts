/**
 * The settings API's delivery log and re-delivery (docs/settings.md "Deliveries"): list with
 * filters and search, one delivery with its attempts, re-deliver one (also "Retry now" for one
 * still retrying), re-deliver the failed ones, and "Recover" (the failed ones since a time, counted
 * first). Re-queuing is the domain's (delivery/redeliver.ts); nothing here writes a delivery record.
 */
import { conflict, notFound, validationFailed } from '../platform/errors.js';
import { getEndpoint, listEndpoints, type EndpointSummary } from '../delivery/endpoints.js';
import { redeliverDelivery } from '../delivery/redeliver.js';
import { findOrganizationDelivery } from '../delivery/first-outcome.js';
import { deliveryIdFor } from '../delivery/queue.js';
import { normalizeEventName } from '../delivery/subscriptions.js';
import { pageDeliverySummaries, summariesById, type DeliverySummaryRecord } from './delivery-summaries.js';
import { queueScanned, scanFailed, type BulkScan } from './bulk-redelivery.js';
import { decodeCursor, DEFAULT_PAGE_ROWS, encodeCursor, timeOf, type Context, type Operation } from './request-fields.js';
import type { BodyOf, QueryOf } from './request-schemas.js';
import { awaitingRedelivery, deliveryDetail, deliverySummary, isRetrying } from './views.js';

interface Filter { endpointId?: string; eventType?: string; search?: string; since?: string; until?: string }

/** The filters not in the index's key (the time range is). */
const matches = (d: DeliverySummaryRecord, f: Filter) =>
  (!f.endpointId || d.endpointId === f.endpointId) &&
  (!f.eventType || d.eventType === f.eventType) &&
  (!f.search || d.id === f.search || d.eventId === f.search) &&
  (!f.since || d.createdAt >= f.since) &&
  (!f.until || d.createdAt <= f.until);

/**
 * The deliveries a search names: the delivery itself, or an event's deliveries, whose ids derive
 * from the event and each endpoint (queue.ts deliveryIdFor): read by key, not searched for.
 */
async function searched(c: Context, search: string, endpoints: EndpointSummary[]): Promise<DeliverySummaryRecord[]> {
  const ids = search.startsWith('evt_') ? endpoints.map((e) => deliveryIdFor(search, e.id)) : [search];
  return summariesById(c.deps, c.organization.id, ids);
}

const byStatus = (status: string | undefined) => (d: DeliverySummaryRecord) =>
  status === 'retrying' ? isRetrying(d)
    : status === 'pending' ? d.status === 'pending' && !isRetrying(d)
      : !status || d.status === status;

async function requireEndpointOf(c: Context, endpointId: string | undefined): Promise<void> {
  if (endpointId && !(await getEndpoint(c.deps, c.organization.id, endpointId))) throw notFound(`No endpoint ${endpointId}.`);
}

async function requireDelivery(c: Context) {
  const delivery = await findOrganizationDelivery(c.deps, c.organization.id, c.params.id);
  if (!delivery) throw notFound(`No delivery ${c.params.id}.`);
  return delivery;
}

const urlsOf = (endpoints: EndpointSummary[]) => new Map(endpoints.map((e) => [e.id, e.url]));

/**
 * Where a re-queued delivery goes next, from its endpoint's state: a disabled endpoint skips it, a
 * paused one (circuit open after failures) holds it until the pause ends, without using an attempt.
 */
function endpointState(endpoint: EndpointSummary | undefined) {
  if (!endpoint) return { state: 'removed' as const };
  if (!endpoint.enabled) return { state: 'disabled' as const };
  if (endpoint.circuit.state === 'open') return { state: 'paused' as const, until: endpoint.circuit.until ?? null };
  return { state: endpoint.circuit.state === 'half-open' ? 'recovering' as const : 'ready' as const };
}

/** The organization's disabled endpoints: a re-delivery to one would only be skipped (docs/settings.md). */
async function disabledEndpoints(c: Context): Promise<Set<string>> {
  return new Set((await listEndpoints(c.deps, c.organization.id)).filter((e) => !e.enabled).map((e) => e.id));
}

/** The answer of a bulk call: counted (dry run) or queued; lower bounds when `more`. */
const bulkAnswer = (scan: BulkScan, count: number) => ({
  count, retrying: scan.retrying, ...(scan.more ? { more: true } : {}),
  ...(scan.hollow ? { notRedeliverable: scan.hollow } : {}), ...(scan.endpointDisabled ? { endpointDisabled: scan.endpointDisabled } : {}),
});

/** Re-queues the failed deliveries of `filter` (bounded: REDELIVER_ALL_MAX and a read budget), with what was left and why. */
async function redeliverFailed(c: Context, filter: Filter) {
  const scan = await scanFailed(c.deps, c.organization.id, filter, await disabledEndpoints(c));
  return bulkAnswer(scan, await queueScanned(c.deps, scan));
}

export const deliveryOperations: Record<string, Operation> = {
  'GET /api/settings/deliveries': async (c) => {
    // Validated by its schema (request-schemas.ts): a known status and event name, a bounded search, ISO times.
    const { status, endpoint, cursor, event_type: eventType, search, since, until, limit = DEFAULT_PAGE_ROWS } = c.query as QueryOf<'GET /api/settings/deliveries'>;
    const type = eventType ? normalizeEventName(eventType) : undefined;
    await requireEndpointOf(c, endpoint);
    const after = cursor ? decodeCursor(cursor) : undefined;
    const filter: Filter = { endpointId: endpoint, eventType: type, search: search?.trim() || undefined, since: timeOf('since', since), until: timeOf('until', until) };
    const endpoints = await listEndpoints(c.deps, c.organization.id);
    const keep = (d: DeliverySummaryRecord) => matches(d, filter) && byStatus(status)(d);
    // Summaries only (no payloads), from the index (delivery-summaries.ts); a search reads by key.
    const { items, next } = filter.search
      ? { items: (await searched(c, filter.search, endpoints)).filter(keep).slice(0, limit), next: null }
      : await pageDeliverySummaries(c.deps, c.organization.id, { since: filter.since, until: filter.until, after, limit, keep });
    return { status: 200, body: { deliveries: items.map((d) => deliverySummary(d, urlsOf(endpoints))), nextCursor: next ? encodeCursor(next) : null } };
  },
  'GET /api/settings/deliveries/{id}': async (c) => {
    const delivery = await requireDelivery(c);
    return { status: 200, body: { delivery: deliveryDetail(delivery, urlsOf(await listEndpoints(c.deps, c.organization.id))) } };
  },
  'POST /api/settings/deliveries/{id}/redeliver': async (c) => {
    const before = await requireDelivery(c);
    // Re-queued and not attempted since: another click would only queue the same send again.
    const target = (await listEndpoints(c.deps, c.organization.id)).find((e) => e.id === before.endpointId);
    if (target && !target.enabled) throw conflict(`The endpoint ${target.id} is disabled: enable it, then re-deliver.`);
    if (awaitingRedelivery(before)) throw conflict(`Delivery ${c.params.id} is already queued: it is sent again shortly, then can be re-delivered once more.`);
    // A tenant's click never passes over the shared dead-letter queue (redeliver.ts RedeliverOptions).
    await redeliverDelivery(c.deps, c.params.id, { removeDeadLetterCopies: false, organizationId: c.organization.id });
    await c.audit('delivery.redelivered', c.params.id, { status: isRetrying(before) ? 'retrying' : before.status });
    const [delivery, endpoints] = await Promise.all([requireDelivery(c), listEndpoints(c.deps, c.organization.id)]);
    return { status: 202, body: { delivery: deliverySummary(delivery, urlsOf(endpoints)), endpoint: endpointState(endpoints.find((e) => e.id === delivery.endpointId)) } };
  },
  'POST /api/settings/deliveries/redeliver': async (c) => {
    const body = c.body as BodyOf<'POST /api/settings/deliveries/redeliver'>;
    const endpointId = body.endpoint;
    await requireEndpointOf(c, endpointId);
    const filter = { endpointId, since: timeOf('since', body.since), until: timeOf('until', body.until) };
    const answer = await redeliverFailed(c, filter);
    await c.audit('deliveries.redelivered', endpointId, { count: answer.count, since: filter.since, until: filter.until });
    return { status: 202, body: answer };
  },
  'POST /api/settings/deliveries/recover': async (c) => {
    const body = c.body as BodyOf<'POST /api/settings/deliveries/recover'>;
    const since = timeOf('since', body.since)!;
    if (since > new Date(c.deps.now()).toISOString()) throw validationFailed([{ field: 'since', message: 'must not be in the future' }]);
    const endpointId = body.endpoint_id;
    await requireEndpointOf(c, endpointId);
    const filter = { endpointId, since };
    if (body.dry_run === true) {
      // The count first (nothing queued), by the very reader that queues: what "Recover" would send again.
      const scan = await scanFailed(c.deps, c.organization.id, filter, await disabledEndpoints(c));
      return { status: 200, body: { ...bulkAnswer(scan, scan.redeliverable.length), dryRun: true } };
    }
    const answer = await redeliverFailed(c, filter);
    await c.audit('deliveries.recovered', endpointId, { count: answer.count, since });
    return { status: 202, body: answer };
  },
};
