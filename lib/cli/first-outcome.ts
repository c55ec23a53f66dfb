/**
 * `crm webhooks test` waits here for what happened to the test event: polling is the CLI's way of
 * watching the asynchronous pipeline, not something the domain does.
 */
import type { Deps } from '../../functions/core/platform/deps.js';
import { findDelivery } from '../../functions/core/delivery/redrive.js';

type Delivery = Awaited<ReturnType<typeof findDelivery>>;

const POLL_MS = 250;

/** Polls a delivery until its first attempt is recorded (or it was skipped/failed without one). */
export async function waitForFirstOutcome(deps: Deps, deliveryId: string, timeoutMs = 30_000): Promise<Delivery> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const item = await findDelivery(deps, deliveryId);
    if (item && (item.attempts?.length || item.status !== 'pending')) return item;
    await new Promise((r) => setTimeout(r, POLL_MS));
  }
  return findDelivery(deps, deliveryId);
}
