/**
 * Delivery at SQS's limits (docs/webhooks.md, docs/architecture.md#fair-delivery): a message may carry an event up to the queue budget
 * (MAX_MESSAGE_BYTES), and SendMessageBatch refuses a whole batch whose messages together exceed
 * SQS's batch payload limit (BatchRequestTooLong), whatever their count. Large events fanned out
 * to several endpoints must still all be queued and delivered, once each, with their webhook-id.
 */
import { describe, it, expect } from '@jest/globals';
import { eventually, newTenant, testStack } from '../support/stack.js';
import { receiverForFile } from '../support/receiver.js';
import { addEndpoint, currentEndpoints } from '../../../functions/core/delivery/endpoints.js';
import { MAX_MESSAGE_BYTES } from '../../../functions/core/delivery/queue.js';
import { fanOutEvent } from '../../../functions/core/events/fanout.js';
import type { EventPayload } from '../../../functions/core/platform/model.js';

const receiver = receiverForFile();

describe('large events', () => {
  it('an event near the per-message budget, fanned out to 5 endpoints, is queued in batches SQS accepts and delivered to each', async () => {
    const { deps } = await testStack();
    const tenant = await newTenant({ name: 'Large events' });
    for (let i = 0; i < 5; i++) {
      const { secret } = await addEndpoint(deps, tenant.organizationId, { url: `${receiver.url}/large-${i}`, events: 'all' });
      receiver.script(`/large-${i}`, secret, { status: 204 });
    }
    const endpoints = await currentEndpoints(deps, tenant.organizationId);
    expect(endpoints).toHaveLength(5);
    // Each message ~220 KB: under the per-message budget, five of them over any batch payload limit (256 KiB, 1 MiB).
    const event = {
      id: `evt_large_${Date.now()}`, type: 'client.updated', organization_id: tenant.organizationId, timestamp: new Date().toISOString(),
      data: { object: { id: 'cli_large', notes: 'n'.repeat(220_000) } },
    } as unknown as EventPayload;
    expect(Buffer.byteLength(JSON.stringify(event))).toBeLessThan(MAX_MESSAGE_BYTES - 1024);

    const queued = await fanOutEvent(deps, event, endpoints);
    expect(queued).toHaveLength(5);
    const received = await eventually(async () => {
      const all = Array.from({ length: 5 }, (_, i) => receiver.on(`/large-${i}`));
      return all.every((r) => r.length >= 1) ? all.flat() : undefined;
    }, { what: 'the large event at every endpoint', timeoutMs: 20_000 });
    expect(received.every((r) => !r.verifyError)).toBe(true);
    expect(new Set(received.map((r) => r.headers['webhook-id']))).toEqual(new Set([event.id]));
  });
});
