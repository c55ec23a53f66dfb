/**
 * The statistics' store (docs/settings.md "Statistics", docs/data-model.md): counters in the
 * deliveries table, under their own partition per organization, `STATS#<org>`, so no read of
 * delivery records ever meets them (they carry none of the indexes' keys either):
 *   `ENDPOINT#<endpoint id>#<hour>`: delivered, failed, retrying and the latency buckets `l0`…`l13`;
 *   `LEADS#<day>`: new leads per source.
 * Each write is one UpdateItem that ADDs a whole batch's counts for one key (never one per
 * delivery or lead: docs/capacity.md "Statistics"); items expire by TTL after the longest window.
 * Tests substitute the in-memory twin (test/support/memory-stats-store.ts) through `statsPort`.
 */
import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import type { Deps } from '../platform/deps.js';
import { depsPort } from '../platform/deps-port.js';
import { queryAll } from '../platform/dynamo-store.js';
import { LATENCY_BUCKETS, LEAD_SOURCES, emptyCounters, type DeliveryCounters, type LeadCounts } from './statistics.js';

export interface DeliveryCountRow { organizationId: string; endpointId: string; hour: string; counters: DeliveryCounters }
export interface LeadCountRow { organizationId: string; day: string; counts: Partial<LeadCounts> }

export interface StatsStore {
  /** Adds each row's counters to its (endpoint, hour): one write per row. */
  addDeliveryCounts(rows: DeliveryCountRow[], expiresAt: number): Promise<void>;
  /** Adds each row's leads to its day: one write per row. */
  addLeadCounts(rows: LeadCountRow[], expiresAt: number): Promise<void>;
  /** The endpoint's counters for the hours in `between` (inclusive); hours with none are absent. */
  endpointHours(organizationId: string, endpointId: string, between: [string, string]): Promise<Map<string, DeliveryCounters>>;
  /** The organization's leads for the days in `between` (inclusive); days with none are absent. */
  leadDays(organizationId: string, between: [string, string]): Promise<Map<string, LeadCounts>>;
}

const statsPk = (organizationId: string) => `STATS#${organizationId}`;
const endpointSk = (endpointId: string, hour: string) => `ENDPOINT#${endpointId}#${hour}`;
const leadsSk = (day: string) => `LEADS#${day}`;
const bucketAttribute = (i: number) => `l${i}`;

/** One ADD of the non-zero counts (ADD creates the item and the numbers), and the TTL set once. */
function addition(counts: Record<string, number>, expiresAt: number) {
  const nonZero = Object.entries(counts).filter(([, n]) => n !== 0);
  const values: Record<string, number> = { ':exp': expiresAt };
  const names: Record<string, string> = {};
  const adds = nonZero.map(([attribute, n], i) => {
    names[`#a${i}`] = attribute;
    values[`:a${i}`] = n;
    return `#a${i} :a${i}`;
  });
  return {
    UpdateExpression: `${adds.length ? `ADD ${adds.join(', ')} ` : ''}SET expiresAt = if_not_exists(expiresAt, :exp)`,
    ...(adds.length ? { ExpressionAttributeNames: names } : {}),
    ExpressionAttributeValues: values,
  };
}

const flatCounters = (c: DeliveryCounters): Record<string, number> => ({
  delivered: c.delivered, failed: c.failed, retrying: c.retrying,
  ...Object.fromEntries(c.latency.map((n, i) => [bucketAttribute(i), n])),
});

const countersOf = (item: Record<string, unknown>): DeliveryCounters => {
  const c = emptyCounters();
  c.delivered = Number(item.delivered ?? 0);
  c.failed = Number(item.failed ?? 0);
  c.retrying = Number(item.retrying ?? 0);
  for (let i = 0; i < LATENCY_BUCKETS; i++) c.latency[i] = Number(item[bucketAttribute(i)] ?? 0);
  return c;
};

export function dynamoStatsStore(deps: Pick<Deps, 'doc' | 'tables' | 'now'>): StatsStore {
  const TableName = deps.tables.deliveries;
  // Items DynamoDB has not yet deleted past their TTL are left out of every read.
  const live = (item: Record<string, unknown>) => Number(item.expiresAt ?? Infinity) > deps.now() / 1000;
  return {
    async addDeliveryCounts(rows, expiresAt) {
      await Promise.all(rows.map((row) => deps.doc.send(new UpdateCommand({
        TableName, Key: { pk: statsPk(row.organizationId), sk: endpointSk(row.endpointId, row.hour) }, ...addition(flatCounters(row.counters), expiresAt),
      }))));
    },
    async addLeadCounts(rows, expiresAt) {
      await Promise.all(rows.map((row) => deps.doc.send(new UpdateCommand({
        TableName, Key: { pk: statsPk(row.organizationId), sk: leadsSk(row.day) }, ...addition(row.counts as Record<string, number>, expiresAt),
      }))));
    },
    async endpointHours(organizationId, endpointId, [from, to]) {
      const items = await queryAll(deps, {
        TableName, KeyConditionExpression: 'pk = :pk AND sk BETWEEN :lo AND :hi',
        ExpressionAttributeValues: { ':pk': statsPk(organizationId), ':lo': endpointSk(endpointId, from), ':hi': endpointSk(endpointId, to) },
      });
      const prefix = endpointSk(endpointId, '');
      return new Map(items.filter(live).map((item) => [String(item.sk).slice(prefix.length), countersOf(item)]));
    },
    async leadDays(organizationId, [from, to]) {
      const items = await queryAll(deps, {
        TableName, KeyConditionExpression: 'pk = :pk AND sk BETWEEN :lo AND :hi',
        ExpressionAttributeValues: { ':pk': statsPk(organizationId), ':lo': leadsSk(from), ':hi': leadsSk(to) },
      });
      return new Map(items.filter(live).map((item) => [
        String(item.sk).slice(leadsSk('').length),
        Object.fromEntries(LEAD_SOURCES.map((s) => [s, Number(item[s] ?? 0)])) as LeadCounts,
      ]));
    },
  };
}

/** The statistics store of these deps (the deliveries table unless a test put its twin there). */
export const statsPort = depsPort<StatsStore>('statsStore', dynamoStatsStore);
