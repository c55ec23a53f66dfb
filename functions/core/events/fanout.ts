/**
 * Fan-out (docs/events.md, docs/webhooks.md): stream changes → events → one delivery per subscribed endpoint of the
 * event's organization. Each delivery has an id derived from (event id, endpoint id); a whole
 * batch's records are written together (delivery/queue.ts recordDeliveries: BatchWriteItem after
 * one BatchGetItem, so a re-processed batch creates nothing twice), then queued; an organization's
 * large share (and, for BULK_STAYS_MS after one, its shares of HANDED_OFF_SHARE events or more) is
 * handed to the bulk queue and recorded there the same way (bulk-share.ts). Events for a
 * disabled endpoint are recorded as skipped; payloads too big for the queue are recorded as failed
 * with the reason, never retried in a loop. The batch's new and returning leads are also the
 * team's lead notices (lead-notices.ts), handed to the notices queue in one call.
 */
import type { Deps } from '../platform/deps.js';
import type { DeliveryMessage, EventPayload, WebhookEndpoint } from '../platform/model.js';
import { MetricUnit } from '@aws-lambda-powertools/metrics';
import { markHandOff, routingOf } from '../delivery/endpoints.js';
import type { FanOutView } from '../delivery/endpoint-store.js';
import { queueDeliveries, recordDeliveries, type PlannedDelivery } from '../delivery/queue.js';
import { logger, metrics } from '../platform/observability.js';
import { derive } from './derive.js';
import { fitsBulkMessage, handOff } from './bulk-share.js';
import type { StreamChange } from './stream-changes.js';
import { isSubscribed } from '../delivery/subscriptions.js';
import { recordNewLeads } from '../delivery/record-statistics.js';
import { newLeadsOf } from './lead-statistics.js';
import { produceLeadNotices } from './lead-notices.js';

/** The deliveries of one event: one per endpoint of `endpoints` subscribed to it. */
const plan = (event: EventPayload, endpoints: WebhookEndpoint[]): PlannedDelivery[] =>
  endpoints.filter((e) => isSubscribed(e.events, event.type)).map((endpoint) => ({ event, endpoint }));

/** Records and queues the deliveries of one event to those of `endpoints` subscribed to it. */
export async function fanOutEvent(deps: Deps, event: EventPayload, endpoints: WebhookEndpoint[]): Promise<DeliveryMessage[]> {
  const recorded = await recordDeliveries(deps, plan(event, endpoints));
  await queueDeliveries(deps, recorded);
  return recorded.messages;
}

/** A change whose organization_id disagrees with its key is dropped: logged (ids only) and counted for the alarm. */
function reportTenantMismatch(change: StreamChange, organizationId: string | undefined): void {
  logger.warn('stream record dropped: its organization_id disagrees with its partition key', {
    organizationId, keyOrganizationId: organizationId, sequenceNumber: change.sequenceNumber, kind: change.kind, stream: change.stream,
  });
  metrics.addMetric('TenantMismatch', MetricUnit.Count, 1);
}

/**
 * An organization with at least this many events in one batch has their deliveries handed to the
 * bulk queue. Events, not deliveries: an organization with 10 endpoints would otherwise go bulk at
 * 3 events, an ordinary burst (docs/capacity.md "Fan-out lanes").
 */
export const LARGE_SHARE = 25;

/**
 * How long an organization that had a large share goes on being handed off. An import also
 * reaches the stream in small stretches (its first and last records, a pause between its writes):
 * 23 of its records recorded in the lane held that lane for 1.5 s on the local stack, everyone
 * sharing it waiting (docs/benchmarks.md "An importer stays handed off for 10 s"); on AWS the lane
 * would meet the importer's hot partition there. Within the window a share of HANDED_OFF_SHARE
 * events or more is handed off; fewer (a lead, an edit) stay in the lane and are not queued behind
 * the import. The window is a marker item beside the organization's endpoints (endpoint-store.ts
 * markHandOff), read by the Query that reads them: a lane's next batch decides alike in whichever
 * container runs it, on AWS as on the local stack (docs/decisions.md "Fair under volume").
 */
export const BULK_STAYS_MS = 10_000;
export const HANDED_OFF_SHARE = 5;

/**
 * The batch's deliveries split between the lane and the bulk queue (bulk-share.ts): each
 * organization with a large share (an import, a nightly sync), or with HANDED_OFF_SHARE events
 * while handed off (`handOffUntil`: the markers read, epoch ms), is handed off, one share per
 * organization, in order; everybody else's deliveries, and any event too big for a bulk message,
 * are recorded in the lane. Another organization's change in the same batch (one in ten shares the
 * importer's lane: docs/capacity.md "Fan-out lanes") is then queued without waiting for the
 * import's writes, and the lane keeps pace with the import. `large`: the organizations whose
 * marker the batch sets (until now + BULK_STAYS_MS).
 */
export function shares(planned: PlannedDelivery[], now: number, handOffUntil: ReadonlyMap<string, number> = new Map()): { lane: PlannedDelivery[]; bulk: PlannedDelivery[][]; large: string[] } {
  const events = new Map<string, Set<string>>();
  for (const p of planned) {
    const org = p.event.organization_id;
    if (!events.has(org)) events.set(org, new Set());
    events.get(org)!.add(p.event.id);
  }
  const large = [...events].filter(([, ids]) => ids.size >= LARGE_SHARE).map(([org]) => org);
  const handedOff = (org: string) => large.includes(org) || ((handOffUntil.get(org) ?? 0) > now && events.get(org)!.size >= HANDED_OFF_SHARE);
  const bulk = new Map<string, PlannedDelivery[]>();
  const lane: PlannedDelivery[] = [];
  for (const p of planned) {
    const org = p.event.organization_id;
    if (!handedOff(org) || !fitsBulkMessage(p.event)) lane.push(p);
    else if (bulk.has(org)) bulk.get(org)!.push(p);
    else bulk.set(org, [p]);
  }
  return { lane, bulk: [...bulk.values()], large };
}

/**
 * Marks the organizations with a large share handed off for BULK_STAYS_MS: one UpdateItem each
 * per batch (docs/capacity.md "Fan-out lanes"). Best effort: the share itself is handed off
 * already, and a mark not written only lets the next stretch be recorded in the lane, as before
 * the marker; the batch does not fail (and redo its work) for it.
 */
async function markHandOffs(deps: Deps, organizations: string[], now: number): Promise<void> {
  await Promise.all(organizations.map(async (organizationId) => {
    try {
      await markHandOff(deps, organizationId, now + BULK_STAYS_MS);
    } catch (error) {
      logger.warn('hand-off marker not written', { organizationId, error: error as Error });
    }
  }));
}

/** Each organization's endpoints among `planned`. */
function endpointsByOrganization(planned: PlannedDelivery[]): Map<string, Set<string>> {
  const out = new Map<string, Set<string>>();
  for (const { event, endpoint } of planned) {
    if (!out.has(event.organization_id)) out.set(event.organization_id, new Set());
    out.get(event.organization_id)!.add(endpoint.id);
  }
  return out;
}

/** `failedFrom`: the sequence number of the first change whose work did not complete. */
export interface FanOutResult { failedFrom?: string }

/**
 * The stream batch's work. Each organization's endpoints are read once; the deliveries of every
 * change up to the first whose endpoints could not be read are recorded and queued in the lane,
 * or handed to the bulk queue (`shares`). If that fails, the whole batch is reported failed (the event source retries it;
 * redoing it creates nothing twice); if an endpoint read failed, the batch is reported failed
 * from that change on.
 */
export async function fanOut(deps: Deps, changes: StreamChange[]): Promise<FanOutResult> {
  const work = changes.map((change) => {
    const { events, tenantMismatch } = derive(change);
    if (tenantMismatch) reportTenantMismatch(change, tenantMismatch.organizationId);
    return { change, events, ok: true, planned: [] as PlannedDelivery[] };
  });
  // Each organization's endpoints, and its hand-off marker, are read fresh, once per batch (never
  // from a cache): an endpoint added before a change was written hears of it, however recently it
  // was added, and a batch in any container sees the marker an earlier batch wrote.
  const views = new Map<string, Promise<FanOutView>>();
  const viewOf = (organizationId: string) => {
    if (!views.has(organizationId)) views.set(organizationId, routingOf(deps, organizationId));
    return views.get(organizationId)!;
  };
  const handOffUntil = new Map<string, number>();
  await Promise.all(work.map(async (item) => {
    try {
      for (const event of item.events) {
        const view = await viewOf(event.organization_id);
        handOffUntil.set(event.organization_id, view.handOffUntil);
        item.planned.push(...plan(event, view.endpoints));
      }
    } catch (error) {
      item.ok = false;
      logger.error('fan-out failed', {
        sequenceNumber: item.change.sequenceNumber, organizationId: item.events[0]?.organization_id, error: error as Error,
      });
    }
  }));
  // Record and queue what the changes before the first failure produced (changes after it will be redone).
  const firstFailed = work.findIndex((w) => !w.ok);
  const done = firstFailed === -1 ? work : work.slice(0, firstFailed);
  const now = deps.now();
  const { lane, bulk, large } = shares(done.flatMap((w) => w.planned), now, handOffUntil);
  try {
    // The batch's lead notices (lead-notices.ts) go with its deliveries: a retry redoes both and repeats neither.
    await Promise.all([handOff(deps, bulk), (async () => queueDeliveries(deps, await recordDeliveries(deps, lane)))(), produceLeadNotices(deps, done)]);
    await markHandOffs(deps, large, now);
  } catch (error) {
    // One line per organization of the batch, naming its endpoints if it has any (its notices may be
    // what failed), so each organization's query finds it and a failed batch always says why.
    const organizations = endpointsByOrganization([...lane, ...bulk.flat()]);
    for (const organizationId of new Set(done.flatMap((w) => w.events.map((e) => e.organization_id)))) {
      if (!organizations.has(organizationId)) organizations.set(organizationId, new Set());
    }
    for (const [organizationId, endpointIds] of organizations) {
      logger.error('recording or queuing deliveries or notices failed', {
        organizationId, endpointIds: [...endpointIds].join(','), sequenceNumber: changes[0]?.sequenceNumber, error: error as Error,
      });
    }
    if (organizations.size === 0) logger.error('recording or queuing deliveries or notices failed', { sequenceNumber: changes[0]?.sequenceNumber, error: error as Error });
    return changes[0] ? { failedFrom: changes[0].sequenceNumber } : {};
  }
  // Counted once: the changes after a failure are redone by the retry, and counted then.
  await recordNewLeads(deps, newLeadsOf(done.map((w) => w.change)));
  return firstFailed === -1 ? {} : { failedFrom: changes[firstFailed].sequenceNumber };
}
