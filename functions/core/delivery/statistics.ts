/**
 * Delivery and lead statistics (docs/settings.md "Statistics"): counters added up per batch, never
 * one write per delivery (docs/capacity.md "Statistics"). This module is the arithmetic: which
 * hour or day a sample falls in, the latency histogram and its percentiles, and the windows the
 * settings API answers. The counters themselves live in stats-store.ts.
 *
 * Latency is kept as a histogram of fixed buckets (one counter per bucket, added like the rest),
 * so p50/p95 are the upper bound of the bucket that holds that rank: exact enough to see a
 * receiver slow down, and mergeable across batches, hours and days without keeping samples.
 */

/** Upper bounds (ms) of the latency buckets; the last bucket holds everything slower. */
export const LATENCY_BOUNDS_MS = [50, 100, 200, 300, 500, 750, 1_000, 1_500, 2_000, 3_000, 5_000, 10_000, 15_000] as const;
/** One counter per bucket: `l0` … `l13` (the last above every bound). */
export const LATENCY_BUCKETS = LATENCY_BOUNDS_MS.length + 1;

/** What one delivery outcome adds to its endpoint's hour. */
export type DeliveryCount = 'delivered' | 'failed' | 'retrying';

/** The counters of one (endpoint, hour) or one sum of them. */
export interface DeliveryCounters { delivered: number; failed: number; retrying: number; latency: number[] }

/** Where a lead came in (docs/leads.md): the lead endpoint with a secret key, a page's script with a publishable key, a no-script form. */
export const LEAD_SOURCES = ['lead_endpoint', 'page_key', 'no_script_form'] as const;
export type LeadSource = (typeof LEAD_SOURCES)[number];
/**
 * Where a created client's lead came in, from the request channel it records (intake/lead-client.ts
 * rowOf): the one reading of it, for the leads statistics and the lead notice alike. A client
 * written before channels were recorded came to the lead endpoint.
 */
export function leadSourceOf(item: { request_channel?: unknown }): LeadSource {
  return item.request_channel === 'page' ? 'page_key' : item.request_channel === 'form' ? 'no_script_form' : 'lead_endpoint';
}

/** 24 h: the current hour and the 23 before it; 7 d: today (UTC, so far) and the 6 days before it. */
export const STATS_WINDOWS = { '24h': { hours: 24, bucketHours: 1 }, '7d': { hours: 168, bucketHours: 24 } } as const;
export type StatsWindow = keyof typeof STATS_WINDOWS;
/** Days the leads chart shows. */
export const LEAD_DAYS = 30;

const HOUR_MS = 3_600_000;
const DAY_MS = 24 * HOUR_MS;

/** The hour a time falls in, as the counters' key: `2026-11-29T01`. */
export const hourOf = (ms: number): string => new Date(Math.floor(ms / HOUR_MS) * HOUR_MS).toISOString().slice(0, 13);
/** The UTC day a time falls in: `2026-11-29`. */
export const dayOf = (ms: number): string => new Date(Math.floor(ms / DAY_MS) * DAY_MS).toISOString().slice(0, 10);

/** The latency bucket of one attempt. */
export function latencyBucket(latencyMs: number): number {
  const i = LATENCY_BOUNDS_MS.findIndex((bound) => latencyMs <= bound);
  return i === -1 ? LATENCY_BOUNDS_MS.length : i;
}

export const emptyCounters = (): DeliveryCounters => ({ delivered: 0, failed: 0, retrying: 0, latency: new Array<number>(LATENCY_BUCKETS).fill(0) });

export function addCounters(into: DeliveryCounters, more: DeliveryCounters): DeliveryCounters {
  into.delivered += more.delivered;
  into.failed += more.failed;
  into.retrying += more.retrying;
  more.latency.forEach((n, i) => { into.latency[i] = (into.latency[i] ?? 0) + n; });
  return into;
}

/**
 * The latency at a rank (0.5, 0.95) as the upper bound of the bucket holding it; null with no
 * attempt. Past the last bound it answers that bound: "slower than 15 s" is what the chart can say.
 */
export function percentile(latency: number[], rank: number): number | null {
  const total = latency.reduce((a, b) => a + b, 0);
  if (total === 0) return null;
  const wanted = Math.ceil(rank * total);
  let seen = 0;
  for (let i = 0; i < latency.length; i++) {
    seen += latency[i];
    if (seen >= wanted) return LATENCY_BOUNDS_MS[Math.min(i, LATENCY_BOUNDS_MS.length - 1)];
  }
  return LATENCY_BOUNDS_MS[LATENCY_BOUNDS_MS.length - 1];
}

/** Delivered out of those that ended (delivered or failed), 0..1, rounded to 4 places; null when none ended. */
export function successRate(c: Pick<DeliveryCounters, 'delivered' | 'failed'>): number | null {
  const ended = c.delivered + c.failed;
  return ended === 0 ? null : Math.round((c.delivered / ended) * 10_000) / 10_000;
}

/** The hours a window reads (oldest first), ending with the current one; a daily window starts at a day's start. */
export function windowHours(window: StatsWindow, now: number): string[] {
  const { hours, bucketHours } = STATS_WINDOWS[window];
  const current = Math.floor(now / HOUR_MS) * HOUR_MS;
  const start = bucketHours === 1 ? current - (hours - 1) * HOUR_MS : Math.floor(now / DAY_MS) * DAY_MS - (hours / 24 - 1) * DAY_MS;
  return Array.from({ length: (current - start) / HOUR_MS + 1 }, (_, i) => hourOf(start + i * HOUR_MS));
}

export interface EndpointStats {
  window: StatsWindow;
  totals: { delivered: number; failed: number; retrying: number; success_rate: number | null };
  buckets: { start: string; delivered: number; failed: number; retrying: number; p50_ms: number | null; p95_ms: number | null }[];
}

/**
 * A window's answer from the hours' counters (hours with no item count zero): 24 hourly buckets,
 * or 7 daily ones (UTC days, today's so far).
 */
export function endpointStats(window: StatsWindow, now: number, byHour: Map<string, DeliveryCounters>): EndpointStats {
  const { bucketHours } = STATS_WINDOWS[window];
  const groups = new Map<string, DeliveryCounters>();
  for (const hour of windowHours(window, now)) {
    const start = bucketHours === 1 ? `${hour}:00:00.000Z` : `${hour.slice(0, 10)}T00:00:00.000Z`;
    const group = groups.get(start) ?? emptyCounters();
    const counted = byHour.get(hour);
    if (counted) addCounters(group, counted);
    groups.set(start, group);
  }
  const all = [...groups.values()].reduce((sum, c) => addCounters(sum, c), emptyCounters());
  return {
    window,
    totals: { delivered: all.delivered, failed: all.failed, retrying: all.retrying, success_rate: successRate(all) },
    buckets: [...groups].map(([start, c]) => ({
      start, delivered: c.delivered, failed: c.failed, retrying: c.retrying, p50_ms: percentile(c.latency, 0.5), p95_ms: percentile(c.latency, 0.95),
    })),
  };
}

/** The days of the leads window (oldest first), ending today (UTC). */
export function leadDays(now: number, days = LEAD_DAYS): string[] {
  const today = Math.floor(now / DAY_MS) * DAY_MS;
  return Array.from({ length: days }, (_, i) => dayOf(today - (days - 1 - i) * DAY_MS));
}

export type LeadCounts = Record<LeadSource, number>;
export const emptyLeadCounts = (): LeadCounts => ({ lead_endpoint: 0, page_key: 0, no_script_form: 0 });

export interface LeadStats {
  window: '30d';
  totals: { leads: number };
  buckets: { start: string; by_source: LeadCounts }[];
}

export function leadStats(now: number, byDay: Map<string, LeadCounts>): LeadStats {
  const buckets = leadDays(now).map((day) => ({ start: `${day}T00:00:00.000Z`, by_source: { ...emptyLeadCounts(), ...byDay.get(day) } }));
  const leads = buckets.reduce((sum, b) => sum + LEAD_SOURCES.reduce((s, source) => s + b.by_source[source], 0), 0);
  return { window: '30d', totals: { leads }, buckets };
}
