/**
 * The settings API's delivery lists, served from the deliveries table's `byCreated` index
 * (lib/topology.ts: keys-only, the organization's partition key and each record's `createdAt`; event
 * items have no `createdAt`, so only delivery records are in it). A page is read newest first, a
 * time range is the index's key condition, and each page of index keys is followed by one
 * BatchGetItem of the summaries' attributes (never a payload, never an event item). Status, endpoint
 * and event type are filters over what was read: a page looks at READ_BUDGET keys at most and
 * otherwise ends short with a cursor, so no call reads the organization's whole history.
 */
import type { Deps } from '../platform/deps.js';
import { keys, type DeliveryRecord } from '../platform/model.js';
import { deliveryStore } from '../delivery/delivery-port.js';
import type { CreatedKey } from '../delivery/delivery-state.js';

/** What deliverySummary (views.ts) shows: no payload. */
export type DeliverySummaryRecord = Omit<DeliveryRecord, 'payload'>;

const shown = ['pk', 'sk', 'id', 'organizationId', 'endpointId', 'eventId', 'eventType', 'status', 'reason', 'attempts', 'olderAttempts', 'createdAt', 'updatedAt', 'nextAttemptAt', 'payloadOmitted', 'check'];
/** The index the lists read (lib/topology.ts `deliveries.globalIndexes`), through the delivery store. */
export { BY_CREATED_INDEX } from '../delivery/delivery-record.js';
/** Index keys one call looks at, at most, before answering a short page with a cursor. */
export const READ_BUDGET = 1_000;
const INDEX_PAGE = 100;

/** Where the next page starts: the index position of the last delivery shown (or looked at). */
export interface SummaryCursor { createdAt: string; id: string }

export interface SummaryQuery {
  since?: string;
  until?: string;
  after?: SummaryCursor;
  /** Deliveries wanted; with `limit + 1` found the page ends and `next` is set. */
  limit: number;
  keep?: (d: DeliverySummaryRecord) => boolean;
  /** Index keys to look at before ending a short page (READ_BUDGET by default). */
  budget?: number;
}

const toSummary = ({ pk: _pk, sk: _sk, ...item }: Record<string, unknown>) => ({ ...item, attempts: item.attempts ?? [] }) as unknown as DeliverySummaryRecord;

/** A page of the organization's deliveries, newest first (by creation, then id). */
export async function pageDeliverySummaries(deps: Deps, organizationId: string, query: SummaryQuery): Promise<{ items: DeliverySummaryRecord[]; next: SummaryCursor | null; looked: number }> {
  const budget = query.budget ?? READ_BUDGET;
  const found: DeliverySummaryRecord[] = [];
  let start: CreatedKey | undefined = query.after && { ...keys.delivery(organizationId, query.after.id), createdAt: query.after.createdAt };
  let looked = 0;
  for (;;) {
    const out = await deliveryStore(deps).newestDeliveries(organizationId, { since: query.since, until: query.until, after: start, limit: Math.min(INDEX_PAGE, budget - looked) });
    const indexKeys = out.keys;
    looked += indexKeys.length;
    const records = await deliveryStore(deps).get(indexKeys.map(({ pk, sk }) => ({ pk, sk })), { consistent: true, projection: shown });
    const bySk = new Map(records.map((r) => [r.sk as string, r]));
    for (const key of indexKeys) {
      const item = bySk.get(key.sk);
      if (!item) continue; // expired (TTL) between the index read and the record read
      const summary = toSummary(item);
      if (query.keep && !query.keep(summary)) continue;
      found.push(summary);
      if (found.length > query.limit) {
        const items = found.slice(0, query.limit);
        return { items, next: { createdAt: items.at(-1)!.createdAt, id: items.at(-1)!.id }, looked };
      }
    }
    if (!out.next) return { items: found, next: null, looked };
    start = out.next;
    // The budget spent: a short page, continuing after the last delivery looked at.
    if (looked >= budget) return { items: found, next: { createdAt: start.createdAt, id: start.sk.slice(keys.deliveryPrefix.length) }, looked };
  }
}

/** Deliveries by id (those of this organization that exist), for a search by delivery or event id. */
export async function summariesById(deps: Deps, organizationId: string, deliveryIds: string[]): Promise<DeliverySummaryRecord[]> {
  const items = await deliveryStore(deps).get(deliveryIds.map((id) => keys.delivery(organizationId, id)), { consistent: true, projection: shown });
  return items.map(toSummary).sort((a, b) => b.createdAt.localeCompare(a.createdAt) || b.id.localeCompare(a.id));
}
