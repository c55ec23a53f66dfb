/**
 * "Nothing more arrives", as a condition rather than a sleep: every delivery the pipeline recorded
 * for the organization has left `pending`, the receiver got each one that was delivered, and each
 * event it got has its delivered record (one endpoint per path). A
 * duplicate would be a second record, or a second request at the receiver.
 */
import { eventually, testStack } from '../support/stack.js';
import type { Receiver } from '../support/receiver.js';
import { listDeliveries } from '../../../functions/core/delivery/redeliver.js';

export async function deliveriesSettled(receiver: Receiver, organizationId: string, path: string): Promise<void> {
  const { deps } = await testStack();
  await eventually(async () => {
    const deliveries = await listDeliveries(deps, organizationId, { limit: 1_000 });
    // A delivery's record is written by its outcome (docs/data-model.md): each event the receiver got has its record too.
    const received = new Set(receiver.on(path).map((r) => r.headers['webhook-id']));
    const delivered = deliveries.filter((d) => d.status === 'delivered');
    return deliveries.every((d) => d.status !== 'pending') && receiver.on(path).length >= delivered.length && delivered.length >= received.size;
  }, { what: `the deliveries of ${organizationId} to settle` });
}
