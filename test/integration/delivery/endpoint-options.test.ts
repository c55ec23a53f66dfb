/**
 * An endpoint's options on the local stack's delivery function (docs/webhooks.md "Custom headers",
 * "Rate limit"): its custom headers reach a real receiver (every request verified with
 * standardwebhooks) on every delivery; a rate-limited endpoint receives no faster than its limit,
 * each delivery delivered at its first attempt (a throttled one is deferred, not failed); the
 * limit is a counter in DynamoDB shared by every container, not one in memory.
 */
import { describe, it, expect, beforeAll, afterAll } from '@jest/globals';
import { eventually, itemsOf, newTenant, testStack } from '../support/stack.js';
import { Receiver } from '../support/receiver.js';
import { addEndpoint, getEndpoint } from '../../../functions/core/delivery/endpoints.js';
import { recordDelivery, sendDeliveryMessages } from '../../../functions/core/delivery/queue.js';
import { listDeliveries } from '../../../functions/core/delivery/redeliver.js';
import { takeRateSlot } from '../../../functions/core/delivery/delivery-throttle.js';
import { ContainerMemory, withContainerMemory } from '../../../functions/core/delivery/container-memory.js';
import type { DeliveryMessage, EventPayload, WebhookEndpoint } from '../../../functions/core/platform/model.js';
import { keys } from '../../../functions/core/platform/model.js';
import { attemptDelivery } from '../../../functions/core/delivery/deliver.js';
import { UpdateCommand } from '@aws-sdk/lib-dynamodb';

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

  it('the limit is shared by every container: one container takes the free lanes, a fresh one is then refused', async () => {
    const stack = (await testStack()).deps;
    const deps = withContainerMemory(stack, new ContainerMemory()); // one container
    const endpoint = { id: `ep_shared_${Date.now()}`, organizationId: `org_shared_${Date.now()}`, rateLimitPerSecond: 3 } as WebhookEndpoint;
    const before = Date.now();
    const taken = await Promise.all(Array.from({ length: 10 }, () => takeRateSlot(deps, endpoint)));
    expect(taken.filter((t) => t === undefined)).toHaveLength(3);
    // Each refused one waits for the first lane its refusal saw free, plus a random wait of up to 2 s (its first refusal).
    for (const t of taken.filter((x) => x !== undefined)) {
      expect(t!.untilMs).toBeGreaterThanOrEqual(before);
      expect(t!.untilMs).toBeLessThanOrEqual(Date.now() + 1000 + 2000);
      expect(t!.reason).toMatch(/rate limit \(3 a second\)/);
    }
    const another = withContainerMemory(stack, new ContainerMemory()); // another container: it knows nothing of the lanes
    const other = await takeRateSlot(another, endpoint);
    expect(other?.untilMs).toBeGreaterThanOrEqual(before + 1000);
    // A second later every lane is free again.
    await new Promise((r) => setTimeout(r, Math.max(0, other!.untilMs - Date.now()) + 50));
    expect(await takeRateSlot(another, endpoint)).toBeUndefined();
  });

  it('a half-open circuit’s probe refused by the rate limit gives its claim back: the next delivery probes at once', async () => {
    const deps = withContainerMemory((await testStack()).deps, new ContainerMemory()); // a fresh container: nothing cached, no lane hints
    const { organizationId } = await newTenant({ name: 'Throttled probe' });
    const { endpoint: added } = await addEndpoint(deps, organizationId, { url: `${receiver.url}/probe`, events: 'all', rateLimitPerSecond: 1 });
    const halfOpenSince = new Date(Date.now() - 1000).toISOString();
    await deps.doc.send(new UpdateCommand({
      TableName: deps.tables.endpoints, Key: keys.endpoint(organizationId, added.id),
      UpdateExpression: 'SET circuitUntil = :u, circuitOpens = :o, circuitFailures = :f', ExpressionAttributeValues: { ':u': halfOpenSince, ':o': 1, ':f': 5 },
    }));
    const endpoint = (await getEndpoint(deps, organizationId, added.id))!;
    expect(await takeRateSlot(deps, endpoint)).toBeUndefined(); // the endpoint's one lane is taken for a second
    const event = { id: `evt_probe_${Date.now()}`, type: 'client.updated', api_version: '2026-11-01', organization_id: organizationId, timestamp: new Date().toISOString(), data: { object: { id: 'cli_probe' } } } as unknown as EventPayload;
    const message = (await recordDelivery(deps, event, endpoint))!;

    const outcome = await attemptDelivery(deps, message, { lane: 'slow' });
    expect(outcome).toMatchObject({ kind: 'deferred', reason: expect.stringMatching(/rate limit \(1 a second\)/) });
    // The claim moved circuitUntil to the probe's deadline and set circuitProbing; both are undone.
    const [item] = (await itemsOf('endpoints', organizationId, keys.endpoint(organizationId, added.id).sk));
    expect(item.circuitProbing).toBeUndefined();
    expect(item.circuitUntil).toBe(halfOpenSince);
    expect(receiver.on('/probe')).toHaveLength(0);
  });
});
