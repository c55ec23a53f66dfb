/**
 * The per-endpoint bound (functions/core/delivery/endpoint-concurrency.ts) holds a slot from the
 * isolation gate to the end of the POST. An attempt that breaks off in between (here: a payload
 * that cannot be serialized, so building the body throws after the gate) must give its slot back:
 * a leaked slot stays taken for the container's life, and after `maxInFlightPerEndpoint` of them
 * every delivery to that endpoint is parked there as "busy", for good. (An endpoint with no active
 * signing secret, which used to be this test's way in, is now refused before the gate: delivery.test.)
 */
import { describe, it, expect } from '@jest/globals';
import { newTenant, testStack } from '../support/stack.js';
import { addEndpoint, getEndpoint } from '../../../functions/core/delivery/endpoints.js';
import { attemptDelivery } from '../../../functions/core/delivery/deliver.js';
import { containerMemory } from '../../../functions/core/delivery/container-memory.js';
import { recordDelivery } from '../../../functions/core/delivery/queue.js';
import type { EventPayload } from '../../../functions/core/platform/model.js';

describe('an attempt that breaks off before its POST', () => {
  it.each(['main', 'slow'] as const)('gives its per-endpoint slot back (%s lane)', async (lane) => {
    const { deps } = await testStack();
    const tenant = await newTenant({ name: `Slot release ${lane}` });
    const { endpoint } = await addEndpoint(deps, tenant.organizationId, { url: 'http://127.0.0.1:9/never', events: 'all' });
    const stored = (await getEndpoint(deps, tenant.organizationId, endpoint.id))!;
    const event = { id: `evt_slot_${lane}_${Date.now()}`, type: 'client.updated', organization_id: tenant.organizationId, timestamp: new Date().toISOString(), data: { object: { id: 'cli_slot' } } } as unknown as EventPayload;
    const message = (await recordDelivery(deps, event, stored))!; // recorded, not queued: only this test attempts it
    // A value JSON cannot hold: serializing the body throws, after the gate took the slot.
    const unserializable = { ...message, payload: { ...message.payload, data: { object: { id: 'cli_slot', amount: 10n } } } } as unknown as typeof message;

    await expect(attemptDelivery(deps, unserializable, { lane })).rejects.toThrow(/BigInt/);
    expect(containerMemory(deps).slots.inFlightTo(endpoint.id)).toBe(0);
  });
});
