/**
 * A delivery queue batch's records: read whole, together, at its start, and its delivered outcomes
 * written at its end, in parallel, each conditional on the version read (docs/data-model.md
 * "The delivery record: states and transitions"): through the delivery store (delivery-port.ts),
 * falling back to the unguarded `delivered` transition when the record changed since.
 */
import { MetricUnit } from '@aws-lambda-powertools/metrics';
import type { Deps } from '../platform/deps.js';
import { keys, type DeliveryAttempt, type DeliveryMessage, type DeliveryRecord } from '../platform/model.js';
import { logger, metrics } from '../platform/observability.js';
import { deliveryStore, transition } from './delivery-port.js';
import { versionOf } from './delivery-state.js';

/** A delivery record as stored (deliveryRecord's attributes and the keys). */
export type StoredRecord = Record<string, unknown> & Pick<DeliveryRecord, 'status' | 'payloadOmitted' | 'reason' | 'attempts' | 'createdAt' | 'redrivenAt' | 'deliveredAt'>;

/**
 * The records of a batch's deliveries, whole, read in one strongly consistent BatchGetItem (10
 * GetItems before): a delivered one (a duplicate message) is not sent again, and a delivered
 * outcome is written conditional on the version read (DeliveredWrites).
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
 * The delivered outcomes of one queue batch, written together after its attempts: one `delivered`
 * UpdateItem per delivery, all in parallel (1 write unit each, as a batch put's; keys-only
 * indexes whose keys do not change are not written), each conditional on the version the batch
 * read. A record changed since (another copy's attempt, a redelivery, a park) refuses it: the
 * outcome is then appended by the unguarded `delivered` transition, so nothing that happened
 * meanwhile is overwritten and the success is never lost.
 */
export class DeliveredWrites {
  private readonly pending = new Map<string, { message: DeliveryMessage; version: number; made: DeliveryAttempt[] }>();

  add(message: DeliveryMessage, read: StoredRecord, attempt: DeliveryAttempt): void {
    const key = `${String(read.pk)}|${String(read.sk)}`;
    // The same delivery twice in one batch (a duplicate message): both attempts, one after the other.
    const earlier = this.pending.get(key);
    this.pending.set(key, { message, version: versionOf(read), made: [...(earlier?.made ?? []), attempt] });
  }

  /**
   * Writes them. A guarded write refused, or failed (its answer may be lost after DynamoDB applied
   * it), falls back to the `delivered` transition, skipped where that very write landed
   * (deliveredAt is the attempt's time), so no attempt is logged twice. Returns the deliveries
   * whose outcome could not be written at all (their messages stay on the queue: see deliverBatch).
   */
  async flush(deps: Deps): Promise<Set<string>> {
    const all = [...this.pending.values()];
    this.pending.clear();
    const failed = new Set<string>();
    await Promise.all(all.map(async ({ message, version, made }) => {
      let expected: number | undefined = version;
      try {
        for (const attempt of made) {
          if (expected !== undefined && await guardedWrite(deps, message, attempt, expected)) {
            expected += 1;
            continue;
          }
          expected = undefined;
          metrics.addMetric('DeliveredWriteFallbacks', MetricUnit.Count, 1);
          if (!(await transition(deps, message, { to: 'delivered', attempt, unlessDeliveredAt: attempt.at }))) break;
        }
      } catch (error) {
        logger.error('recording a delivered outcome failed', { organizationId: message.organizationId, endpointId: message.endpointId, deliveryId: message.deliveryId, error: error as Error });
        metrics.addMetric('DeliveryOutcomesUnwritten', MetricUnit.Count, 1);
        failed.add(message.deliveryId);
      }
    }));
    return failed;
  }
}

/** The `delivered` transition at the version read; false when refused, or when it failed (the fallback follows). */
async function guardedWrite(deps: Deps, message: DeliveryMessage, attempt: DeliveryAttempt, version: number): Promise<boolean> {
  try {
    return await transition(deps, message, { to: 'delivered', attempt, ifVersion: version });
  } catch (error) {
    logger.warn('writing a batch’s delivered record failed; writing it unguarded', { organizationId: message.organizationId, endpointId: message.endpointId, deliveryId: message.deliveryId, error: error as Error });
    return false;
  }
}
