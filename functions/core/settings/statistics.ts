/**
 * The settings API's statistics (docs/settings.md "Statistics"): an endpoint's deliveries over the
 * last 24 hours (hourly) or 7 days (daily), and the organization's new leads per day by source
 * over 30 days. Read from the counters the delivery function and the fan-out add per batch
 * (delivery/stats-store.ts): one Query of at most 168 or 30 small items, never the delivery records.
 */
import { notFound } from '../platform/errors.js';
import { getEndpoint } from '../delivery/endpoints.js';
import { statsPort } from '../delivery/stats-store.js';
import { endpointStats, leadDays, leadStats, windowHours, type StatsWindow } from '../delivery/statistics.js';
import type { Operation } from './request-fields.js';
import type { QueryOf } from './request-schemas.js';

export const statisticsOperations: Record<string, Operation> = {
  'GET /api/settings/webhooks/{id}/stats': async (c) => {
    const { window } = c.query as QueryOf<'GET /api/settings/webhooks/{id}/stats'>;
    const endpoint = await getEndpoint(c.deps, c.organization.id, c.params.id);
    if (!endpoint) throw notFound(`No endpoint ${c.params.id}.`);
    const now = c.deps.now();
    const hours = windowHours(window as StatsWindow, now);
    const byHour = await statsPort.of(c.deps).endpointHours(c.organization.id, endpoint.id, [hours[0], hours[hours.length - 1]]);
    return { status: 200, body: endpointStats(window as StatsWindow, now, byHour) };
  },
  'GET /api/settings/leads/stats': async (c) => {
    const now = c.deps.now();
    const days = leadDays(now);
    const byDay = await statsPort.of(c.deps).leadDays(c.organization.id, [days[0], days[days.length - 1]]);
    return { status: 200, body: leadStats(now, byDay) };
  },
};
