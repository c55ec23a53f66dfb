/**
 * The settings API's statistics (docs/settings.md "Statistics"): an endpoint's deliveries over the
 * last 24 hours (hourly) or 7 days (daily), and the organization's new leads per day by source
 * over 30 days. Read from the counters the delivery function and the fan-out add per batch
 * (delivery/stats-store.ts): one Query of at most 168 or 30 small items, never the delivery records.
 */
import { notFound } from '../platform/errors.js';
import { getEndpoint } from '../delivery/endpoints.js';
import { statsPort } from '../delivery/stats-store.js';
import type { Deps } from '../platform/deps.js';
import { endpointStats, leadDays, leadStats, windowHours, type EndpointStats, type LeadStats, type StatsWindow } from '../delivery/statistics.js';
import type { Operation } from './request-fields.js';
import type { QueryOf } from './request-schemas.js';

/** An endpoint's statistics over a window (404 for an endpoint the organization does not have). */
export async function endpointStatistics(deps: Deps, organizationId: string, endpointId: string, window: StatsWindow): Promise<EndpointStats> {
  const endpoint = await getEndpoint(deps, organizationId, endpointId);
  if (!endpoint) throw notFound(`No endpoint ${endpointId}.`);
  const now = deps.now();
  const hours = windowHours(window, now);
  return endpointStats(window, now, await statsPort.of(deps).endpointHours(organizationId, endpoint.id, [hours[0], hours[hours.length - 1]]));
}

/** The organization's new leads per day and source, over 30 days. */
export async function leadStatistics(deps: Deps, organizationId: string): Promise<LeadStats> {
  const now = deps.now();
  const days = leadDays(now);
  return leadStats(now, await statsPort.of(deps).leadDays(organizationId, [days[0], days[days.length - 1]]));
}

export const statisticsOperations: Record<string, Operation> = {
  'GET /api/settings/webhooks/{id}/stats': async (c) => {
    const { window } = c.query as QueryOf<'GET /api/settings/webhooks/{id}/stats'>;
    return { status: 200, body: await endpointStatistics(c.deps, c.organization.id, c.params.id, window as StatsWindow) };
  },
  'GET /api/settings/leads/stats': async (c) => ({ status: 200, body: await leadStatistics(c.deps, c.organization.id) }),
};
