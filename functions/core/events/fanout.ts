/**
 * Fan-out (docs/events.md, docs/webhooks.md): stream changes → events → one delivery per subscribed endpoint of the
 * event's organization. Each delivery has an id derived from (event id, endpoint id); a whole
 * batch's records are written together (delivery/queue.ts recordDeliveries: BatchWriteItem after
 * one BatchGetItem, so a re-processed batch creates nothing twice), then queued. Events for a
 * disabled endpoint are recorded as skipped; payloads too big for the queue are recorded as failed
 * with the reason, never retried in a loop.
 */
import type { Deps } from '../platform/deps.js';
import type { DeliveryMessage, EventPayload, WebhookEndpoint } from '../platform/model.js';
import { MetricUnit } from '@aws-lambda-powertools/metrics';
import { currentEndpoints } from '../delivery/endpoints.js';
import { queueDeliveries, recordDeliveries, type PlannedDelivery } from '../delivery/queue.js';
import { logger, metrics } from '../platform/observability.js';
import { derive } from './derive.js';
import type { StreamChange } from './stream-changes.js';
import { isSubscribed } from '../delivery/subscriptions.js';

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
    keyOrganizationId: organizationId, sequenceNumber: change.sequenceNumber, kind: change.kind, stream: change.stream,
  });
  metrics.addMetric('TenantMismatch', MetricUnit.Count, 1);
}

/** An organization with at least this many deliveries in one batch has them recorded and queued on their own. */
export const LARGE_SHARE = 25;

/**
 * The batch's deliveries in shares recorded and queued at once: each organization with a large
 * share (an import, a nightly sync) on its own, everybody else's together. Another organization's
 * change in the same batch (one in ten shares the importer's lane: docs/capacity.md "Fan-out
 * lanes") is then queued without waiting for the import's hundreds of writes; each organization's
 * deliveries stay in one share, in order. A share of 25 or more fills a BatchWriteItem anyway.
 */
export function shares(planned: PlannedDelivery[]): PlannedDelivery[][] {
  const byOrg = new Map<string, PlannedDelivery[]>();
  for (const p of planned) {
    const org = p.event.organization_id;
    if (byOrg.has(org)) byOrg.get(org)!.push(p);
    else byOrg.set(org, [p]);
  }
  const large = [...byOrg.values()].filter((share) => share.length >= LARGE_SHARE);
  const rest = [...byOrg.values()].filter((share) => share.length < LARGE_SHARE).flat();
  return [...large, ...(rest.length > 0 ? [rest] : [])];
}

/** `failedFrom`: the sequence number of the first change whose work did not complete. */
export interface FanOutResult { failedFrom?: string }

/**
 * The stream batch's work. Each organization's endpoints are read once; the deliveries of every
 * change up to the first whose endpoints could not be read are recorded and queued in shares
 * (`shares`), in batches of 10. If that fails, the whole batch is reported failed (the event source retries it;
 * redoing it creates nothing twice); if an endpoint read failed, the batch is reported failed
 * from that change on.
 */
export async function fanOut(deps: Deps, changes: StreamChange[]): Promise<FanOutResult> {
  const work = changes.map((change) => {
    const { events, tenantMismatch } = derive(change);
    if (tenantMismatch) reportTenantMismatch(change, tenantMismatch.organizationId);
    return { change, events, ok: true, planned: [] as PlannedDelivery[] };
  });
  // Each organization's endpoints are read fresh, once per batch (never from a cache): an endpoint
  // added before a change was written hears of it, however recently it was added.
  const endpointsByOrg = new Map<string, Promise<WebhookEndpoint[]>>();
  const endpointsOf = (organizationId: string) => {
    if (!endpointsByOrg.has(organizationId)) endpointsByOrg.set(organizationId, currentEndpoints(deps, organizationId));
    return endpointsByOrg.get(organizationId)!;
  };
  await Promise.all(work.map(async (item) => {
    try {
      for (const event of item.events) item.planned.push(...plan(event, await endpointsOf(event.organization_id)));
    } catch (error) {
      item.ok = false;
      logger.error('fan-out failed', { sequenceNumber: item.change.sequenceNumber, error: error as Error });
    }
  }));
  // Record and queue what the changes before the first failure produced (changes after it will be redone).
  const firstFailed = work.findIndex((w) => !w.ok);
  const done = firstFailed === -1 ? work : work.slice(0, firstFailed);
  try {
    await Promise.all(shares(done.flatMap((w) => w.planned)).map(async (share) => queueDeliveries(deps, await recordDeliveries(deps, share))));
  } catch (error) {
    logger.error('recording or queuing deliveries failed', { error: error as Error });
    return changes[0] ? { failedFrom: changes[0].sequenceNumber } : {};
  }
  return firstFailed === -1 ? {} : { failedFrom: changes[firstFailed].sequenceNumber };
}
