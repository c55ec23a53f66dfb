/**
 * Local stack start (DESIGN §12): the SQS emulator keeps no messages across restarts, so deliveries
 * left pending by the last run are queued again through the delivery queue's one producer. On AWS
 * the queue keeps them; this full-table scan exists only here.
 */
import type { Deps } from '../../functions/core/platform/deps.js';
import { scanAll } from '../../functions/core/platform/query.js';
import { sendDeliveryMessages } from '../../functions/core/delivery/queue.js';
import { toDeliveryRecord, toMessage } from '../../functions/core/delivery/redrive.js';

/** Queues every pending delivery again; returns how many. */
export async function resumePendingDeliveries(deps: Deps): Promise<number> {
  const items = await scanAll(deps, {
    TableName: deps.tables.deliveries,
    FilterExpression: '#s = :p AND #e = :delivery',
    ExpressionAttributeNames: { '#s': 'status', '#e': 'entity' },
    ExpressionAttributeValues: { ':p': 'pending', ':delivery': 'delivery' },
  });
  const pending = items.map((item) => toMessage(toDeliveryRecord(item)));
  await sendDeliveryMessages(deps, pending);
  return pending.length;
}
