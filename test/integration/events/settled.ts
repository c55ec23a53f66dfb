/**
 * "Nothing more arrives", as a condition rather than a sleep: every delivery the pipeline recorded
 * for the organization has left `pending`, and the receiver got each one that was delivered. A
 * duplicate would be a second record, or a second request at the receiver.
 */
import { eventually, testStack } from '../support/stack.js';
import type { Receiver } from '../support/receiver.js';
import { listDeliveries } from '../../../functions/core/delivery/redeliver.js';

export async function deliveriesSettled(receiver: Receiver, organizationId: string, path: string): Promise<void> {
  const { deps } = await testStack();
  await eventually(async () => {
    const deliveries = await listDeliveries(deps, organizationId, { limit: 1_000 });
    return deliveries.every((d) => d.status !== 'pending') && receiver.on(path).length >= deliveries.filter((d) => d.status === 'delivered').length;
  }, { what: `the deliveries of ${organizationId} to settle` });
}
