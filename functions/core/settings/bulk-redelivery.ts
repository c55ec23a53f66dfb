/**
 * "Re-deliver all failed" and "Recover" (docs/settings.md "Deliveries"): one reader for the count
 * (dry run) and the queuing. It pages through the `byCreated` index with the time range as the key
 * condition (delivery-summaries.ts), newest first, and stops once it holds a call's worth of failed
 * deliveries or has looked at BULK_READ_BUDGET index keys: it never reads the organization's whole
 * partition, and when it stopped early its counts are lower bounds (`more: true`). Deliveries to a
 * disabled endpoint are left out and counted (they would only be skipped again). The receiver
 * check's sends are left out: their failures were asked for (DeliveryRecord.check).
 */
import type { Deps } from '../platform/deps.js';
import { hollowPayloadReason } from '../delivery/deliver.js';
import { redeliverRecords } from '../delivery/redeliver.js';
import { pageDeliverySummaries, READ_BUDGET, type DeliverySummaryRecord, type SummaryCursor } from './delivery-summaries.js';
import { isRetrying } from './views.js';

/** Failed deliveries one call re-queues (newest first); `more` says when there may be others. */
export const REDELIVER_ALL_MAX = 500;
/** Index keys one bulk call looks at, at most. */
export const BULK_READ_BUDGET = 10_000;

export interface BulkFilter { endpointId?: string; since?: string; until?: string }

export interface BulkScan {
  /** Failed, re-deliverable, to an enabled endpoint: at most `cap`. */
  redeliverable: DeliverySummaryRecord[];
  retrying: number;
  hollow: number;
  endpointDisabled: number;
  /** The scan stopped before the range's end (the cap or the read budget): the counts are lower bounds. */
  more: boolean;
}

/** What a bulk call would queue (the dry run's answer) and what it queues. */
export async function scanFailed(
  deps: Deps, organizationId: string, filter: BulkFilter, disabled: ReadonlySet<string>,
  options: { cap?: number; budget?: number } = {},
): Promise<BulkScan> {
  const cap = options.cap ?? REDELIVER_ALL_MAX;
  let budget = options.budget ?? BULK_READ_BUDGET;
  const scan: BulkScan = { redeliverable: [], retrying: 0, hollow: 0, endpointDisabled: 0, more: false };
  const keep = (d: DeliverySummaryRecord) => !d.check && (!filter.endpointId || d.endpointId === filter.endpointId) && (d.status === 'failed' || isRetrying(d));
  let after: SummaryCursor | undefined;
  for (;;) {
    // Each page looks at most at the budget left; its `next` is where the following one starts.
    const page = await pageDeliverySummaries(deps, organizationId, { since: filter.since, until: filter.until, after, limit: cap + 1, keep, budget: Math.min(budget, READ_BUDGET) });
    budget -= page.looked;
    for (const d of page.items) {
      if (isRetrying(d)) scan.retrying += 1;
      else if (hollowPayloadReason(d)) scan.hollow += 1;
      else if (disabled.has(d.endpointId)) scan.endpointDisabled += 1;
      else if (scan.redeliverable.length < cap) scan.redeliverable.push(d);
      else return { ...scan, more: true };
    }
    if (!page.next) return scan;
    if (budget <= 0) return { ...scan, more: true };
    after = page.next;
  }
}

/** Queues the scanned deliveries (bounded: REDELIVER_ALL_MAX); their dead-letter copies stay (redeliver.ts RedeliverOptions). */
export async function queueScanned(deps: Deps, scan: BulkScan): Promise<number> {
  return redeliverRecords(deps, scan.redeliverable);
}
