/**
 * The per-endpoint bound (functions/core/delivery/endpoint-concurrency.ts) holds a slot from the
 * isolation gate to the end of the POST. An attempt that breaks off in between (here: an endpoint
 * row with no active signing secret, written by hand or a rotation gone wrong) must give its slot
 * back: a leaked slot stays taken for the container's life, and after `maxInFlightPerEndpoint` of
 * them every delivery to that endpoint is parked there as "busy", for good.
 */
import { describe, it, expect } from '@jest/globals';
import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { newTenant, testStack } from '../support/stack.js';
import { addEndpoint, forgetEndpoints, getEndpoint } from '../../../functions/core/delivery/endpoints.js';
import { attemptDelivery } from '../../../functions/core/delivery/deliver.js';
import { inFlightTo } from '../../../functions/core/delivery/endpoint-concurrency.js';
import { recordDelivery } from '../../../functions/core/delivery/queue.js';
import { keys, type EventPayload } from '../../../functions/core/platform/model.js';

describe('an attempt that breaks off before its POST', () => {
  it.each(['main', 'slow'] as const)('gives its per-endpoint slot back (%s lane)', async (lane) => {
    const { deps } = await testStack();
    const tenant = await newTenant({ name: `Slot release ${lane}` });
    const { endpoint, secret } = await addEndpoint(deps, tenant.organizationId, { url: 'http://127.0.0.1:9/never', events: 'all' });
    // Every signing secret expired: signing refuses to sign.
    await deps.doc.send(new UpdateCommand({
      TableName: deps.tables.organizations, Key: keys.endpoint(tenant.organizationId, endpoint.id),
      UpdateExpression: 'SET secrets = :s', ExpressionAttributeValues: { ':s': [{ secret, createdAt: '2000-01-01T00:00:00.000Z', expiresAt: '2000-01-02T00:00:00.000Z' }] },
    }));
    forgetEndpoints(tenant.organizationId);
    const stored = (await getEndpoint(deps, tenant.organizationId, endpoint.id))!;
    const event = { id: `evt_slot_${lane}_${Date.now()}`, type: 'client.updated', organization_id: tenant.organizationId, timestamp: new Date().toISOString(), data: { object: { id: 'cli_slot' } } } as unknown as EventPayload;
    const message = (await recordDelivery(deps, event, stored))!; // recorded, not queued: only this test attempts it

    await expect(attemptDelivery(deps, message, 1, { lane })).rejects.toThrow(/no signing secret/);
    expect(inFlightTo(endpoint.id)).toBe(0);
  });
});
