/**
 * An endpoint's options on the local stack's delivery function (docs/webhooks.md "Custom headers",
 * "Rate limit"): its custom headers reach a real receiver (every request verified with
 * standardwebhooks) on every delivery; a rate-limited endpoint receives no faster than its limit,
 * each delivery delivered at its first attempt (a throttled one is deferred, not failed).
 */
import { describe, it, expect, beforeAll, afterAll } from '@jest/globals';
import { eventually, newTenant, testStack } from '../support/stack.js';
import { Receiver } from '../support/receiver.js';
import { addEndpoint, getEndpoint } from '../../../functions/core/delivery/endpoints.js';
import { recordDelivery, sendDeliveryMessages } from '../../../functions/core/delivery/queue.js';
import { listDeliveries } from '../../../functions/core/delivery/redeliver.js';
import type { DeliveryMessage, EventPayload, WebhookEndpoint } from '../../../functions/core/platform/model.js';

let receiver: Receiver;
beforeAll(async () => {
  receiver = await new Receiver().start();
});
afterAll(async () => {
  await receiver.stop();
});

/** `count` client.updated events for the endpoint, recorded and queued at once (as one stream batch's fan-out does). */
async function queueEvents(endpoint: WebhookEndpoint, count: number, tag: string): Promise<void> {
  const { deps } = await testStack();
  const messages: DeliveryMessage[] = [];
  for (let i = 0; i < count; i++) {
    const event = { id: `evt_${tag}_${Date.now()}_${i}`, type: 'client.updated', api_version: '2026-11-01', organization_id: endpoint.organizationId, timestamp: new Date().toISOString(), data: { object: { id: `cli_${i}` } } } as unknown as EventPayload;
    messages.push((await recordDelivery(deps, event, endpoint))!);
  }
  await sendDeliveryMessages(deps, messages);
}

describe('endpoint options in delivery', () => {
  it('a rate-limited endpoint (2 a second) receives no faster than its limit, with its custom header, each delivery at its first attempt', async () => {
    const { deps } = await testStack();
    const { organizationId } = await newTenant({ name: 'Throttled receiver' });
    const { endpoint: added, secret } = await addEndpoint(deps, organizationId, {
      url: `${receiver.url}/throttled`, events: 'all', headers: { 'X-Receiver-Key': 'rk_test_9d8c7b6a5f4e3d2c' }, rateLimitPerSecond: 2,
    });
    receiver.script('/throttled', secret, { status: 204 });
    const endpoint = (await getEndpoint(deps, organizationId, added.id))!;
    const N = 8;
    await queueEvents(endpoint, N, 'throttled');

    const deliveries = await eventually(async () => {
      const list = await listDeliveries(deps, organizationId);
      return list.length === N && list.every((d) => d.status === 'delivered') && list;
    }, { timeoutMs: 40_000, what: `${N} deliveries delivered` });
    // Throttled deliveries were deferred, never attempted: each was delivered at its first attempt.
    expect(deliveries.map((d) => d.attempts.length)).toEqual(Array(N).fill(1));
    expect(deliveries.map((d) => d.attempts[0].attempt)).toEqual(Array(N).fill(1));

    const received = receiver.on('/throttled');
    expect(received).toHaveLength(N);
    for (const r of received) {
      expect(r.verifyError).toBeUndefined();
      expect(r.headers['x-receiver-key']).toBe('rk_test_9d8c7b6a5f4e3d2c');
    }
    // At most 2 in any second: any 3 arrivals span a second, less the spread of the time from
    // admission to arrival on this loaded machine (unthrottled, all 8 arrive within ~100 ms).
    const at = received.map((r) => r.at).sort((x, y) => x - y);
    const spans = at.slice(2).map((t, i) => t - at[i]);
    expect(Math.min(...spans)).toBeGreaterThanOrEqual(1000 - 300);
    expect(at[N - 1] - at[0]).toBeGreaterThanOrEqual((N / 2 - 1) * 1000 - 300);
  }, 60_000);
  // The limit shared by every container and a half-open probe refused by the limit are domain behaviour on the
  // endpoints store: test/unit/delivery/delivery-throttle.test.ts and circuits.test.ts, on its twin.
});
