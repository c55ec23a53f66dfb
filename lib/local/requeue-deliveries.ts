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
import { deliveryIdFor, sendDeliveryMessages } from '../../functions/core/delivery/queue.js';
import { toDeliveryRecord, withPayloads } from '../../functions/core/delivery/store.js';
import { deliveryStore } from '../../functions/core/delivery/delivery-port.js';
import { keys, type DeliveryMessage, type EventPayload } from '../../functions/core/platform/model.js';

/** Queues every pending delivery that is not parked again; returns how many. */
export async function requeuePendingDeliveries(deps: Deps): Promise<number> {
  const items = await deliveryStore(deps).requeueable();
  const records = (await withPayloads(deps, items.filter((i) => i.entity === 'delivery').map(toDeliveryRecord))).filter((r) => r.payload);
  const dueAt = new Map(records.map((r) => [r.id, r.nextAttemptAt ? Date.parse(r.nextAttemptAt) : 0]));
  const now = deps.now();
  const messages: DeliveryMessage[] = [
    ...records.map((r) => ({ deliveryId: r.id, organizationId: r.organizationId, endpointId: r.endpointId, payload: r.payload })),
    ...await unrecorded(deps, items.filter((i) => i.entity === 'event'), now),
  ];
  await sendDeliveryMessages(deps, messages, { delaySeconds: (m) => ((dueAt.get(m.deliveryId) ?? now) - now) / 1000 });
  return messages.length;
}

/**
 * The deliveries of these event items that have no record: pending and never attempted (the
 * fan-out puts no pending record, queue.ts), queued afresh from the event's payload.
 */
async function unrecorded(deps: Deps, events: Record<string, unknown>[], now: number): Promise<DeliveryMessage[]> {
  const planned = events.flatMap((e) => {
    const payload = e.payload as EventPayload;
    return Array.isArray(e.endpointIds) ? (e.endpointIds as string[]).map((endpointId) => ({ deliveryId: deliveryIdFor(payload.id, endpointId), organizationId: payload.organization_id, endpointId, payload, round: now })) : [];
  });
  const stored = new Set((await deliveryStore(deps).get(planned.map((m) => keys.delivery(m.organizationId, m.deliveryId)), { projection: ['pk', 'sk'] })).map((i) => `${i.pk as string}|${i.sk as string}`));
  return planned.filter((m) => {
    const key = keys.delivery(m.organizationId, m.deliveryId);
    return !stored.has(`${key.pk}|${key.sk}`);
  });
}
