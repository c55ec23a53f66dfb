/**
 * A delivery queue batch's records: read whole, together, at its start, and its delivered outcomes
 * written together at its end (the costliest call of the delivery leg otherwise: docs/benchmarks.md).
 * The writes go through the delivery store (delivery-port.ts): `deliveredInBatch`, falling back
 * to the `delivered` transition one by one.
 */
import { MetricUnit } from '@aws-lambda-powertools/metrics';
import type { Deps } from '../platform/deps.js';
import { keys, type DeliveryAttempt, type DeliveryMessage, type DeliveryRecord } from '../platform/model.js';
import { logger, metrics } from '../platform/observability.js';
import { deliveryStore, transition } from './delivery-port.js';
import { applyChange, changeOf } from './delivery-state.js';

/** A delivery record as stored (deliveryRecord's attributes and the keys). */
export type StoredRecord = Record<string, unknown> & Pick<DeliveryRecord, 'status' | 'payloadOmitted' | 'reason' | 'attempts' | 'createdAt' | 'redrivenAt' | 'deliveredAt'>;

/**
 * The records of a batch's deliveries, whole, read in one strongly consistent BatchGetItem (10
 * GetItems before): a delivered one (a duplicate message) is not sent again, and a delivered
 * outcome is written back as the whole record, in one BatchWriteItem for the batch (DeliveredWrites).
 * (A projection would cost the same read units: they count the item's size.)
 */
export async function readBatchRecords(deps: Deps, messages: DeliveryMessage[]): Promise<Map<string, StoredRecord | undefined>> {
  const items = await deliveryStore(deps).get(messages.map((m) => keys.delivery(m.organizationId, m.deliveryId)), { consistent: true });
  const byKey = new Map(items.map((i) => [`${i.pk as string}|${i.sk as string}`, i as StoredRecord]));
  return new Map(messages.map((m) => {
    const key = keys.delivery(m.organizationId, m.deliveryId);
    return [m.deliveryId, byKey.get(`${key.pk}|${key.sk}`)];
  }));
}

/**
 * The record after a successful attempt: the `delivered` transition (delivery-state.ts) applied to
 * the record read at the start of the batch, as the DynamoDB update writes it (contract test).
 */
export function deliveredRecord(record: StoredRecord, attempt: DeliveryAttempt, now: string): StoredRecord {
  const ref = { organizationId: String(record.organizationId), deliveryId: String(record.id) };
  return applyChange(record, changeOf(ref, { to: 'delivered', attempt }, Date.parse(now))) as StoredRecord;
}

/**
 * The delivered outcomes of one queue batch, written together after its attempts: one
 * BatchWriteItem of whole records (1 write unit each, as the UpdateItem was; keys-only indexes
 * whose keys do not change are not written) instead of an UpdateItem per delivery. Unconditional
 * (a batch put cannot be conditional), so a change made to a record between the batch's read and
 * this write is overwritten: a duplicate attempted at the same moment, or a re-delivery asked for
 * meanwhile (docs/decisions.md says what each loses).
 */
export class DeliveredWrites {
  private readonly pending = new Map<string, { message: DeliveryMessage; record: StoredRecord; made: DeliveryAttempt[] }>();

  add(message: DeliveryMessage, read: StoredRecord, attempt: DeliveryAttempt, now: string): void {
    const key = `${String(read.pk)}|${String(read.sk)}`;
    // The same delivery twice in one batch (a duplicate message): one item, both attempts in it.
    const earlier = this.pending.get(key);
    this.pending.set(key, { message, record: deliveredRecord(earlier?.record ?? read, attempt, now), made: [...(earlier?.made ?? []), attempt] });
  }

  /**
   * Writes them; if the batch write fails, one `delivered` transition per attempt made, each
   * skipped where the batch write landed after all (a partial write, or an answer lost after
   * DynamoDB applied it), so no attempt is logged twice. Returns the deliveries whose outcome could
   * not be written at all (their messages stay on the queue: see deliverBatch).
   */
  async flush(deps: Deps): Promise<Set<string>> {
    const all = [...this.pending.values()];
    this.pending.clear();
    if (all.length === 0) return new Set();
    try {
      await deliveryStore(deps).deliveredInBatch(all.map((w) => w.record));
      return new Set();
    } catch (error) {
      logger.warn('writing the batch’s delivered records failed; writing them one by one', { error: error as Error });
      metrics.addMetric('DeliveredWriteFallbacks', MetricUnit.Count, 1);
    }
    const failed = new Set<string>();
    await Promise.all(all.map(async ({ message, record, made }) => {
      try {
        for (const attempt of made) {
          if (!(await transition(deps, message, { to: 'delivered', attempt, unlessDeliveredAt: record.deliveredAt }))) break;
        }
      } catch (error) {
        logger.error('recording a delivered outcome failed', { deliveryId: message.deliveryId, error: error as Error });
        metrics.addMetric('DeliveryOutcomesUnwritten', MetricUnit.Count, 1);
        failed.add(message.deliveryId);
      }
    }));
    return failed;
  }
}
