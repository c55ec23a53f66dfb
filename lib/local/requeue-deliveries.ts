/**
 * `crm deliveries requeue-pending` after a restore (docs/operations.md): the restored table's
 * pending deliveries have no message on the queue, so they are queued again through the delivery queue's one producer, with the
 * rest of their wait (their attempts are counted from their records, since their last redelivery) (a retry due later stays delayed). Those parked in
 * the due index are the sweeper's, which finds them in DynamoDB as on AWS. The queues keep their
 * messages across restarts (on AWS, and locally: lib/local/sqs-journal.ts), so this full-table scan
 * runs only after a restore, from the CLI, and once when a local stack from before the journal
 * starts (stack.ts, sqs-journal.ts journalMissingOverData).
 */
import type { Deps } from '../../functions/core/platform/deps.js';
import { sendDeliveryMessages } from '../../functions/core/delivery/queue.js';
import { toDeliveryRecord, withPayloads } from '../../functions/core/delivery/store.js';
import { deliveryStore } from '../../functions/core/delivery/delivery-port.js';
import type { DeliveryMessage } from '../../functions/core/platform/model.js';

/** Queues every pending delivery that is not parked again; returns how many. */
export async function requeuePendingDeliveries(deps: Deps): Promise<number> {
  const items = await deliveryStore(deps).requeueable();
  const records = (await withPayloads(deps, items.map(toDeliveryRecord))).filter((r) => r.payload);
  const dueAt = new Map(records.map((r) => [r.id, r.nextAttemptAt ? Date.parse(r.nextAttemptAt) : 0]));
  const messages: DeliveryMessage[] = records.map((r) => ({
    deliveryId: r.id, organizationId: r.organizationId, endpointId: r.endpointId, payload: r.payload,
  }));
  const now = deps.now();
  await sendDeliveryMessages(deps, messages, { delaySeconds: (m) => (dueAt.get(m.deliveryId)! - now) / 1000 });
  return messages.length;
}
