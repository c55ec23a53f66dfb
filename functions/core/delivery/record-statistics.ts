/**
 * Adds a batch's outcomes and new leads to the statistics (docs/settings.md "Statistics"): the
 * delivery statistics function once per batch of the deliveries table's stream, the fan-out once
 * per batch of the clients' stream, one write per (endpoint, hour) or (organization, day) they
 * touch (docs/capacity.md "Statistics").
 *
 * Best effort, by design: a statistic is never worth failing or repeating a batch for (a repeated
 * batch would count twice), and an ADD is not retried here for the same reason (the SDK's own
 * retries of throttling stay). A write that fails is logged and counted (`StatisticsUnwritten`);
 * its counts are lost, the deliveries and leads are not.
 */
import { MetricUnit } from '@aws-lambda-powertools/metrics';
import type { Deps } from '../platform/deps.js';
import { logger, metrics } from '../platform/observability.js';
import { statsPort } from './stats-store.js';
import { dayOf, emptyCounters, hourOf, latencyBucket, LEAD_DAYS, STATS_WINDOWS, type DeliveryCount, type DeliveryCounters, type LeadSource } from './statistics.js';

/** One outcome's contribution at `at` (epoch ms): what it counts as, if anything, and an attempt's latency. */
export interface DeliverySample { organizationId: string; endpointId: string; at: number; count?: DeliveryCount; latencyMs?: number }
export interface NewLead { organizationId: string; source: LeadSource }

const HOUR_S = 3_600;
/** Kept one bucket beyond the longest window, so a window's oldest bucket is whole. */
const hoursKept = STATS_WINDOWS['7d'].hours + 24;

async function bestEffort(what: string, write: () => Promise<void>): Promise<void> {
  try {
    await write();
  } catch (error) {
    metrics.addMetric('StatisticsUnwritten', MetricUnit.Count, 1);
    logger.warn(`statistics: ${what} not counted`, { error: error as Error });
  }
}

/** Adds the batch's samples, one write per (endpoint, hour of the samples). */
export async function recordDeliveryOutcomes(deps: Deps, samples: DeliverySample[]): Promise<void> {
  const now = deps.now();
  const rows = new Map<string, { organizationId: string; endpointId: string; hour: string; counters: DeliveryCounters }>();
  for (const s of samples) {
    if (s.count === undefined && s.latencyMs === undefined) continue;
    const hour = hourOf(s.at);
    const key = `${s.organizationId}\u0000${s.endpointId}\u0000${hour}`;
    const row = rows.get(key) ?? { organizationId: s.organizationId, endpointId: s.endpointId, hour, counters: emptyCounters() };
    if (s.count) row.counters[s.count] += 1;
    if (s.latencyMs !== undefined) row.counters.latency[latencyBucket(s.latencyMs)] += 1;
    rows.set(key, row);
  }
  if (!rows.size) return;
  await bestEffort('delivery outcomes', () => statsPort.of(deps).addDeliveryCounts([...rows.values()], Math.floor(now / 1000) + hoursKept * HOUR_S));
}

/** Adds the batch's new leads, one write per (organization, day). */
export async function recordNewLeads(deps: Deps, leads: NewLead[]): Promise<void> {
  if (!leads.length) return;
  const now = deps.now();
  const day = dayOf(now);
  const rows = new Map<string, { organizationId: string; day: string; counts: Partial<Record<LeadSource, number>> }>();
  for (const lead of leads) {
    const row = rows.get(lead.organizationId) ?? { organizationId: lead.organizationId, day, counts: {} };
    row.counts[lead.source] = (row.counts[lead.source] ?? 0) + 1;
    rows.set(lead.organizationId, row);
  }
  await bestEffort('new leads', () => statsPort.of(deps).addLeadCounts([...rows.values()], Math.floor(now / 1000) + (LEAD_DAYS + 1) * 24 * HOUR_S));
}
