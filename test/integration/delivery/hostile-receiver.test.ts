/**
 * A receiver that answers every attempt with a 15 KB redirect Location and a 5 KB body, re-delivered
 * 50 times, against DynamoDB Local: the delivery record stays bounded (delivery/attempt-log.ts) and
 * every new outcome is still written; before the bound the item reached DynamoDB's 400 KB limit
 * after ~21 attempts and no outcome could be recorded any more.
 */
import { describe, it, expect } from '@jest/globals';
import { GetCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { newTenant, testStack } from '../support/stack.js';
import { settingsClient } from '../settings/support.js';
import { receiverForFile } from '../support/receiver.js';
import { addEndpoint, getEndpoint, updateEndpoint } from '../../../functions/core/delivery/endpoints.js';
import { attemptDelivery } from '../../../functions/core/delivery/deliver.js';
import { freshMessage, recordDelivery } from '../../../functions/core/delivery/queue.js';
import { MAX_ERROR_CHARS, MAX_KEPT_ATTEMPTS } from '../../../functions/core/delivery/attempt-log.js';
import { keys, type DeliveryAttempt, type EventPayload } from '../../../functions/core/platform/model.js';

const receiver = receiverForFile();

describe('a hostile receiver', () => {
  it('15 KB Location and 5 KB body, re-delivered 50 times: every outcome is recorded, the record keeps the last 20 attempts and counts the rest', async () => {
    const { deps } = await testStack();
    const tenant = await newTenant({ name: 'Hostile receiver' });
    const { endpoint, secret } = await addEndpoint(deps, tenant.organizationId, { url: 'http://127.0.0.1:9/placeholder', events: 'all' });
    const location = `https://elsewhere.example/${'x'.repeat(15_000)}`;
    const url = receiver.script('/hostile', secret, { status: 302, headers: { Location: location }, body: 'y'.repeat(5_000) });
    await updateEndpoint(deps, tenant.organizationId, endpoint.id, { url });
    const event = { id: `evt_hostile_${Date.now()}`, type: 'client.updated', organization_id: tenant.organizationId, timestamp: new Date().toISOString(), data: { object: { id: 'cli_x' } } } as unknown as EventPayload;
    const message = (await recordDelivery(deps, event, (await getEndpoint(deps, tenant.organizationId, endpoint.id))!))!;
    const read = async () => (await deps.doc.send(new GetCommand({ TableName: deps.tables.deliveries, Key: keys.delivery(tenant.organizationId, message.deliveryId), ConsistentRead: true }))).Item!;

    for (let i = 1; i <= 50; i++) {
      // Re-enabling closes the circuit the failures opened, and the slow lane is where a failing
      // endpoint is attempted: each re-delivery is a real attempt.
      await updateEndpoint(deps, tenant.organizationId, endpoint.id, { enabled: true });
      // Each one a re-delivery: a new round of attempts (queue.ts freshMessage).
      const outcome = await attemptDelivery(deps, freshMessage(message, Date.now()), { lane: 'slow' });
      expect(outcome.kind).toBe('retry');
      const record = await read();
      // This attempt's outcome is on the record: the newest entry is the one just made.
      expect((record.attempts as DeliveryAttempt[]).at(-1)).toMatchObject({ statusCode: 302, error: expect.stringContaining('EREDIRECT') });
      expect((record.attempts as DeliveryAttempt[]).length + Number(record.olderAttempts ?? 0)).toBe(i);
    }
    const record = await read();
    const attempts = record.attempts as DeliveryAttempt[];
    expect(attempts).toHaveLength(MAX_KEPT_ATTEMPTS);
    expect(record.olderAttempts).toBe(50 - MAX_KEPT_ATTEMPTS);
    for (const a of attempts) expect(a.error!.length).toBeLessThanOrEqual(MAX_ERROR_CHARS);
    expect(JSON.stringify(record).length).toBeLessThan(150_000);
    expect(receiver.on('/hostile')).toHaveLength(50);
    expect(receiver.on('/hostile').every((r) => r.verifyError === undefined)).toBe(true);

    // And the receiver, fixed, gets the success recorded.
    receiver.script('/hostile', secret, { status: 204 });
    await updateEndpoint(deps, tenant.organizationId, endpoint.id, { enabled: true });
    expect((await attemptDelivery(deps, freshMessage(message, Date.now()), { lane: 'slow' })).kind).toBe('delivered');
    const delivered = await read();
    expect(delivered).toMatchObject({ status: 'delivered', olderAttempts: 51 - MAX_KEPT_ATTEMPTS });
    expect((delivered.attempts as DeliveryAttempt[]).at(-1)).toMatchObject({ statusCode: 204 });
  });

  it('through the settings API: a test event to it comes back with its attempt recorded, the error text bounded', async () => {
    const tenant = await newTenant({ name: 'Hostile receiver, settings' });
    const admin = await settingsClient(tenant.organizationId);
    const added = await admin.post('/api/settings/webhooks', { url: 'http://127.0.0.1:9/placeholder', events: ['client.created'] });
    const { endpoint: { id }, secret } = added.json<{ endpoint: { id: string }; secret: string }>();
    const url = receiver.script('/hostile-settings', secret, { status: 302, headers: { Location: `https://elsewhere.example/${'z'.repeat(15_000)}` }, body: 'y'.repeat(5_000) });
    expect((await admin.patch(`/api/settings/webhooks/${id}`, { url })).status).toBe(200);
    const tested = await admin.post(`/api/settings/webhooks/${id}/test`);
    expect(tested.status).toBe(200);
    const { delivery } = tested.json<{ delivery: { attemptCount: number; attempts: { statusCode: number; error: string; responseExcerpt: string }[] } }>();
    expect(delivery.attemptCount).toBe(1);
    expect(delivery.attempts[0].statusCode).toBe(302);
    expect(delivery.attempts[0].error).toMatch(/^EREDIRECT: redirect \(302\) to https:\/\/elsewhere\.example\/z+…/);
    expect(delivery.attempts[0].error.length).toBeLessThanOrEqual(MAX_ERROR_CHARS);
    expect(receiver.on('/hostile-settings').every((r) => r.verifyError === undefined)).toBe(true);
  });

  it('a record already over the bound (written before it) is brought back under it by its next attempt', async () => {
    const { deps } = await testStack();
    const tenant = await newTenant({ name: 'Long history' });
    const { endpoint, secret } = await addEndpoint(deps, tenant.organizationId, { url: 'http://127.0.0.1:9/placeholder', events: 'all' });
    const url = receiver.script('/long-history', secret, { status: 500 });
    await updateEndpoint(deps, tenant.organizationId, endpoint.id, { url });
    const event = { id: `evt_long_${Date.now()}`, type: 'client.updated', organization_id: tenant.organizationId, timestamp: new Date().toISOString(), data: { object: { id: 'cli_x' } } } as unknown as EventPayload;
    const message = (await recordDelivery(deps, event, (await getEndpoint(deps, tenant.organizationId, endpoint.id))!))!;
    const key = keys.delivery(tenant.organizationId, message.deliveryId);
    const old = Array.from({ length: 30 }, (_, i): DeliveryAttempt => ({ at: new Date(i * 1000).toISOString(), attempt: i + 1, latencyMs: 1, statusCode: 500 }));
    await deps.doc.send(new UpdateCommand({ TableName: deps.tables.deliveries, Key: key, UpdateExpression: 'SET attempts = :a', ExpressionAttributeValues: { ':a': old } }));

    expect((await attemptDelivery(deps, message, { lane: 'slow' })).kind).toBe('retry');
    const { Item } = await deps.doc.send(new GetCommand({ TableName: deps.tables.deliveries, Key: key, ConsistentRead: true }));
    const attempts = Item!.attempts as DeliveryAttempt[];
    expect(attempts).toHaveLength(MAX_KEPT_ATTEMPTS);
    expect(attempts[0].at).toBe(old[11].at); // the oldest 11 dropped, in order
    expect(attempts.at(-1)).toMatchObject({ attempt: 1, statusCode: 500 });
    expect(Item!.olderAttempts).toBe(11);
  });

  it('stored headers that break the header rules (written by an import or by hand) are never sent; the valid ones are', async () => {
    const { deps } = await testStack();
    const tenant = await newTenant({ name: 'Hand-edited headers' });
    const { endpoint, secret } = await addEndpoint(deps, tenant.organizationId, { url: 'http://127.0.0.1:9/placeholder', events: 'all' });
    const url = receiver.script('/hand-edited', secret, { status: 204 });
    await updateEndpoint(deps, tenant.organizationId, endpoint.id, { url });
    const written = { host: 'evil.example', 'x-long': 'a'.repeat(5_000), 'x-crlf': 'a\r\nInjected: yes', 'Webhook-Id': 'forged', 'x-ok': 'fine' };
    await deps.doc.send(new UpdateCommand({ TableName: deps.tables.endpoints, Key: keys.endpoint(tenant.organizationId, endpoint.id), UpdateExpression: 'SET headers = :h', ExpressionAttributeValues: { ':h': written } }));
    const event = { id: `evt_hand_${Date.now()}`, type: 'client.updated', organization_id: tenant.organizationId, timestamp: new Date().toISOString(), data: { object: { id: 'cli_x' } } } as unknown as EventPayload;
    const message = (await recordDelivery(deps, event, (await getEndpoint(deps, tenant.organizationId, endpoint.id))!))!;

    expect((await attemptDelivery(deps, message, { lane: 'slow' })).kind).toBe('delivered');
    const [got] = receiver.on('/hand-edited');
    expect(got.headers.host).toBe(new URL(url).host);
    expect(got.headers['x-ok']).toBe('fine');
    expect(got.headers['x-long']).toBeUndefined();
    expect(got.headers['x-crlf']).toBeUndefined();
    expect(got.headers.injected).toBeUndefined();
    expect(got.headers['webhook-id']).toBe(event.id);
    expect(got.verifyError).toBeUndefined();
  });
});
