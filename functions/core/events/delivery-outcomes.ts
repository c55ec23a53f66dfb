/**
 * What a change of a delivery record says about its outcomes, for the statistics (docs/settings.md
 * "Statistics"): read from the deliveries table's stream, so no write is added to a delivery. Each
 * transition of a record is one write (delivery/delivery-record.ts), so one change holds at most
 * the attempt it appended and the status it moved to:
 *   - an attempt appended: its latency; if it failed and the delivery goes on, one `retrying`;
 *   - the status moved to `delivered`: one `delivered`; to `failed`: one `failed` (its last attempt
 *     failed, a 410 disabled the endpoint, or the queue gave up on it).
 * A redelivery that starts a new round counts nothing by itself; its attempts count as they come.
 * Event items, statistics counters and TTL deletions are no outcome, nor are the receiver check's
 * sends (`check: true`, events/receiver-check.ts): refusals asked for, not the endpoint's traffic.
 */
import type { DeliverySample } from '../delivery/record-statistics.js';
import type { Item, StreamChange } from './stream-changes.js';

interface Attempt { at?: string; attempt?: number; statusCode?: number; latencyMs?: number }

const attemptsOf = (item: Item | undefined): Attempt[] => (Array.isArray(item?.attempts) ? (item.attempts as Attempt[]) : []);
const keyOf = (a: Attempt) => `${a.at}#${a.attempt}`;
const succeeded = (a: Attempt) => a.statusCode !== undefined && a.statusCode >= 200 && a.statusCode < 300;
const timeOf = (iso: unknown, fallback: number) => (typeof iso === 'string' && !Number.isNaN(Date.parse(iso)) ? Date.parse(iso) : fallback);

export function outcomesOf(changes: StreamChange[], now: number): DeliverySample[] {
  return changes.flatMap(({ kind, newImage: after, oldImage: before }) => {
    if ((kind !== 'insert' && kind !== 'modify') || !after || !String(after.sk ?? '').startsWith('DELIVERY#')) return [];
    if (after.check === true) return [];
    const { organizationId, endpointId } = after;
    if (typeof organizationId !== 'string' || typeof endpointId !== 'string') return [];
    const seen = new Set(attemptsOf(before).map(keyOf));
    const appended = attemptsOf(after).filter((a) => !seen.has(keyOf(a)));
    const at = timeOf(after.updatedAt, now);
    const samples: DeliverySample[] = appended.map((a) => ({
      organizationId, endpointId, at: timeOf(a.at, at),
      ...(typeof a.latencyMs === 'number' ? { latencyMs: a.latencyMs } : {}),
      ...(!succeeded(a) && after.status !== 'failed' && after.status !== 'delivered' ? { count: 'retrying' as const } : {}),
    }));
    const moved = after.status !== before?.status;
    if (moved && (after.status === 'delivered' || after.status === 'failed')) samples.push({ organizationId, endpointId, at, count: after.status });
    return samples;
  });
}
