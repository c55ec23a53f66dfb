/**
 * The statistics store (functions/core/delivery/stats-store.ts) in memory, on the clock it is
 * given: counters by organization and key, each with its TTL (past it, gone to reads), added as
 * DynamoDB's ADD adds them. Faults: a throttle on any operation.
 * test/integration/stores/stats-store.contract.test.ts holds it to the DynamoDB store.
 */
import { LATENCY_BUCKETS, LEAD_SOURCES, emptyCounters, type DeliveryCounters, type LeadCounts } from '../../functions/core/delivery/statistics.js';
import type { DeliveryCountRow, LeadCountRow, StatsStore } from '../../functions/core/delivery/stats-store.js';
import { Faults, throttled } from './faults.js';

type Op = 'addDeliveryCounts' | 'addLeadCounts' | 'endpointHours' | 'leadDays';
interface Stored { counts: Record<string, number>; expiresAt: number }

export class MemoryStatsStore implements StatsStore {
  /** Items by `organization\u0000key`. */
  readonly items = new Map<string, Stored>();
  readonly faults = new Faults<Op>();
  /** Writes made (one per row, as DynamoDB's UpdateItems). */
  writes = 0;

  constructor(private readonly now: () => number) {}

  private enter(op: Op): void {
    if (this.faults.take(op) === 'throttle') throw throttled();
  }

  private add(key: string, counts: Record<string, number>, expiresAt: number): void {
    this.writes++;
    const item = this.items.get(key) ?? { counts: {}, expiresAt };
    for (const [name, n] of Object.entries(counts)) if (n) item.counts[name] = (item.counts[name] ?? 0) + n;
    this.items.set(key, item);
  }

  private between(prefix: string, [from, to]: [string, string]): [string, Record<string, number>][] {
    return [...this.items].filter(([key, item]) => key.startsWith(prefix) && key >= prefix + from && key <= prefix + to && item.expiresAt * 1000 > this.now())
      .map(([key, item]) => [key.slice(prefix.length), item.counts]);
  }

  async addDeliveryCounts(rows: DeliveryCountRow[], expiresAt: number): Promise<void> {
    this.enter('addDeliveryCounts');
    for (const { organizationId, endpointId, hour, counters: c } of rows) {
      this.add(`${organizationId}\u0000ENDPOINT#${endpointId}#${hour}`, { delivered: c.delivered, failed: c.failed, retrying: c.retrying, ...Object.fromEntries(c.latency.map((n, i) => [`l${i}`, n])) }, expiresAt);
    }
  }

  async addLeadCounts(rows: LeadCountRow[], expiresAt: number): Promise<void> {
    this.enter('addLeadCounts');
    for (const { organizationId, day, counts } of rows) this.add(`${organizationId}\u0000LEADS#${day}`, counts as Record<string, number>, expiresAt);
  }

  async endpointHours(organizationId: string, endpointId: string, between: [string, string]): Promise<Map<string, DeliveryCounters>> {
    this.enter('endpointHours');
    return new Map(this.between(`${organizationId}\u0000ENDPOINT#${endpointId}#`, between).map(([hour, counts]) => {
      const c = emptyCounters();
      c.delivered = counts.delivered ?? 0;
      c.failed = counts.failed ?? 0;
      c.retrying = counts.retrying ?? 0;
      for (let i = 0; i < LATENCY_BUCKETS; i++) c.latency[i] = counts[`l${i}`] ?? 0;
      return [hour, c];
    }));
  }

  async leadDays(organizationId: string, between: [string, string]): Promise<Map<string, LeadCounts>> {
    this.enter('leadDays');
    return new Map(this.between(`${organizationId}\u0000LEADS#`, between)
      .map(([day, counts]) => [day, Object.fromEntries(LEAD_SOURCES.map((s) => [s, counts[s] ?? 0])) as LeadCounts]));
  }
}
