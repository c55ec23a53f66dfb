/**
 * GET /api/settings/clients/{id}/trail: a lead's trail (docs/settings.md "A lead's trail"): the
 * client, each of its submissions (the request that created it and those merged into it), the event
 * each caused and that event's deliveries with their attempts. Everything is read by key
 * (docs/data-model.md "A lead's trail"): the client by GetItem (intake/clients-store.ts); its submissions' event ids derive
 * from the client (events/lead-events.ts); each event's deliveries from the event and each of the
 * organization's endpoints (delivery/queue.ts deliveryIdFor), read with BatchGetItem. No index, no
 * query over the organization's deliveries, and no write more per lead.
 */
import type { Deps } from '../platform/deps.js';
import { notFound } from '../platform/errors.js';
import { keys } from '../platform/model.js';
import { clientsStore } from '../intake/clients-store.js';
import { listEndpoints } from '../delivery/endpoints.js';
import { deliveryIdFor } from '../delivery/queue.js';
import { deliveryStore } from '../delivery/delivery-port.js';
import { leadEventId, submissionEventType, submissionRequestId } from '../events/lead-events.js';
import { summariesById } from './delivery-summaries.js';
import { TRAIL_CLIENT_FIELDS } from './trail-fields.js';
import { attemptViews, deliverySummary, type AttemptView, type DeliverySummaryView } from './views.js';


export interface TrailSubmission {
  /** 1: the request that created the client; 2…: those merged into it, oldest first. */
  number: number;
  /** The request, when the client records it: a merged submission's; the first's on a client that is its request's row in the request log (`request_id`). */
  requestId: string | null;
  at: string | null;
  /** Null for a client the CRM created (submission 1): its creation's event id is the stream's, not derived. */
  event: { id: string; type: string; timestamp: string | null; recorded: boolean } | null;
  deliveries: (DeliverySummaryView & { attempts: AttemptView[] })[];
}

export interface LeadTrail {
  client: { id: string; name: string | null; status: string | null; source: string | null; createdAt: string | null; possibleDuplicateOf: string | null; submissionCount: number };
  submissions: TrailSubmission[];
}

const text = (v: unknown) => (typeof v === 'string' ? v : null);

/** A client id as the lead endpoint and the CRM make them; anything else names no client (and could not be a key). */
const CLIENT_ID = /^cli_[A-Za-z0-9]{1,64}$/;

export async function leadTrail(deps: Deps, organizationId: string, clientId: string): Promise<LeadTrail> {
  if (!CLIENT_ID.test(clientId)) throw notFound(`No client ${clientId}.`);
  // The key is the organization's: another organization's client is not found, like one that does not exist.
  // Only these may be read (IAM: lib/topology.ts); a GetItem without the projection is denied.
  const [item, endpoints] = await Promise.all([
    clientsStore(deps).getClient(organizationId, clientId, { fields: TRAIL_CLIENT_FIELDS }),
    listEndpoints(deps, organizationId),
  ]);
  if (!item) throw notFound(`No client ${clientId}.`);
  const merged = Array.isArray(item.submissions) ? (item.submissions as Record<string, unknown>[]) : [];
  const count = Math.max(1, Number(item.submission_count) || 1, merged.length + 1);
  // A client the CRM created has no derived id for its creation (lead-events.ts): its first submission shows no event.
  const derived = (n: number) => n > 1 || item.source === 'api';
  const eventIdOf = (n: number) => leadEventId(organizationId, clientId, n, submissionRequestId(item, n));
  const eventIds = Array.from({ length: count }, (_, i) => i + 1).filter(derived).map(eventIdOf);
  const deliveryIds = eventIds.flatMap((eventId) => endpoints.map((e) => deliveryIdFor(eventId, e.id)));
  const [events, deliveries] = await Promise.all([
    deliveryStore(deps).get(eventIds.map((id) => keys.event(organizationId, id)), { projection: ['pk', 'sk', 'eventId', 'payload'] }),
    summariesById(deps, organizationId, deliveryIds),
  ]);
  const eventsById = new Map(events.map((e) => [String(e.eventId), e.payload as { timestamp?: string } | undefined]));
  const urls = new Map(endpoints.map((e) => [e.id, e.url]));
  const name = [text(item.first_name), text(item.last_name)].filter(Boolean).join(' ');
  return {
    client: {
      id: clientId, name: name || null, status: text(item.status), source: text(item.source), createdAt: text(item.created_at),
      possibleDuplicateOf: text(item.possible_duplicate_of), submissionCount: count,
    },
    submissions: Array.from({ length: count }, (_, i) => {
      const submission = i === 0 ? undefined : merged[i - 1];
      const id = derived(i + 1) ? eventIdOf(i + 1) : undefined;
      return {
        number: i + 1,
        requestId: text(i === 0 ? item.request_id : submission?.request_id),
        at: i === 0 ? text(item.created_at) : text(submission?.at),
        event: id ? { id, type: submissionEventType(i + 1), timestamp: text(eventsById.get(id)?.timestamp), recorded: eventsById.has(id) } : null,
        deliveries: id ? deliveries.filter((d) => d.eventId === id).map((d) => ({ ...deliverySummary(d, urls), attempts: attemptViews(d) })) : [],
      };
    }),
  };
}
