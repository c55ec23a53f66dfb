/**
 * Local stack start (DESIGN §12): the SQS emulator keeps no messages across restarts, so deliveries
 * left pending by the last run are queued again through the delivery queue's one producer, with the
 * rest of their wait (their attempts are counted from their records, since their last re-drive) (a retry due later stays delayed). Those parked in
 * the due index are the sweeper's, which finds them in DynamoDB as on AWS. On AWS the queue keeps
 * its messages; this full-table scan exists only here.
 */
import type { Deps } from '../../functions/core/platform/deps.js';
import { scanAll } from '../../functions/core/platform/query.js';
import { sendDeliveryMessages } from '../../functions/core/delivery/queue.js';
import { toDeliveryRecord } from '../../functions/core/delivery/redrive.js';
import { withPayloads } from '../../functions/core/delivery/store.js';
import type { DeliveryMessage } from '../../functions/core/platform/model.js';

/** Queues every pending delivery that is not parked again; returns how many. */
export async function resumePendingDeliveries(deps: Deps): Promise<number> {
  const items = await scanAll(deps, {
    TableName: deps.tables.deliveries,
    FilterExpression: '#s = :p AND #e = :delivery AND attribute_not_exists(dueAt)',
    ExpressionAttributeNames: { '#s': 'status', '#e': 'entity' },
    ExpressionAttributeValues: { ':p': 'pending', ':delivery': 'delivery' },
  });
  const records = (await withPayloads(deps, items.map(toDeliveryRecord))).filter((r) => r.payload);
  const dueAt = new Map(records.map((r) => [r.id, r.nextAttemptAt ? Date.parse(r.nextAttemptAt) : 0]));
  const messages: DeliveryMessage[] = records.map((r) => ({
    deliveryId: r.id, organizationId: r.organizationId, endpointId: r.endpointId, payload: r.payload,
  }));
  const now = deps.now();
  await sendDeliveryMessages(deps, messages, { delaySeconds: (m) => (dueAt.get(m.deliveryId)! - now) / 1000 });
  return messages.length;
}
