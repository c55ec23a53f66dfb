/**
 * Fault test: the whole local stack (SQS emulator, pollers, functions) is stopped in the middle of
 * delivering a burst of events and started again on the same data. Every event must end delivered,
 * none lost; duplicates, if any, carry the same webhook-id.
 */
import { describe, it, expect, afterAll } from '@jest/globals';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createOrganization } from '../../../functions/core/tenancy/organizations.js';
import { createApiKey } from '../../../functions/core/tenancy/api-keys.js';
import { addEndpoint, updateEndpoint } from '../../../functions/core/delivery/endpoints.js';
import { listDeliveries } from '../../../functions/core/delivery/redrive.js';
import { testSettings } from '../global-setup.js';
import { eventually } from '../support/stack.js';
import { RestartableStack } from '../support/restartable-stack.js';
import { Receiver } from '../support/receiver.js';
import { edgeKeyLimitPerMinute } from '../../../lib/topology.js';
import { BatchWriteCommand } from '@aws-sdk/lib-dynamodb';
import { keys } from '../../../functions/core/platform/model.js';
import { inBatches } from '../../../functions/core/platform/batches.js';

const dir = mkdtempSync(path.join(tmpdir(), 'crm-restart-'));
const receiver = new Receiver();
let receiverStarted = false;

const stack = new RestartableStack(dir, testSettings);
const start = () => stack.start();
const stop = (signal?: 'SIGTERM' | 'SIGKILL') => stack.stop(signal);

afterAll(async () => {
  await stop();
  await receiver.stop();
  rmSync(dir, { recursive: true, force: true });
});

describe('a restart in the middle of delivering', () => {
  it('loses nothing: every event ends delivered, duplicates share their webhook-id', async () => {
    await receiver.start();
    receiverStarted = true;
    let { info, deps } = await start();
    const org = await createOrganization(deps, { name: 'Restart Co', rateLimitPerMinute: edgeKeyLimitPerMinute });
    const { key } = await createApiKey(deps, org.id, 'burst');
    const { endpoint, secret } = await addEndpoint(deps, org.id, { url: 'http://127.0.0.1:9/x', events: 'client.created' });
    await updateEndpoint(deps, org.id, endpoint.id, { url: receiver.script('/restart', secret, { status: 200, delayMs: 500 }) });

    const total = 100; // more than one round of the delivery poller's concurrency (40), each answer taking 500 ms
    await Promise.all(Array.from({ length: total }, (_, i) => fetch(`${info.apiUrl}/api/webhook/leads`, {
      method: 'POST', headers: { 'X-API-Key': key, 'Content-Type': 'application/json' }, body: JSON.stringify({ name: `Burst ${i}` }),
    })));
    await eventually(async () => receiver.on('/restart').length >= 3, { what: 'the first deliveries' });
    await stop(); // mid-run: messages in the SQS emulator are gone, some stream records not yet fanned out
    const before = receiver.on('/restart').length;
    expect(before).toBeLessThan(total);

    ({ info, deps } = await start());
    const delivered = await eventually(async () => {
      const list = await listDeliveries(deps, org.id, { limit: 1000 });
      return list.length === total && list.every((d) => d.status === 'delivered') ? list : undefined;
    }, { what: 'every delivery', timeoutMs: 60_000, intervalMs: 500 });

    const requests = receiver.on('/restart');
    expect(requests.every((r) => !r.verifyError)).toBe(true);
    const ids = new Set(requests.map((r) => r.headers['webhook-id']));
    expect(ids.size).toBe(total);
    expect(new Set(delivered.map((d) => (d.payload as { id: string }).id))).toEqual(ids);
    // A duplicate is the same event again, never a different id for the same client.
    const clientsPerId = new Map<string, Set<unknown>>();
    for (const r of requests) (clientsPerId.get(String(r.headers['webhook-id'])) ?? clientsPerId.set(String(r.headers['webhook-id']), new Set()).get(String(r.headers['webhook-id']))!).add(r.event!.data.object.id);
    expect([...clientsPerId.values()].every((s) => s.size === 1)).toBe(true);
  }, 150_000);

  it('an import killed mid-way (SIGKILL: no batch finished, no checkpoint written) loses nothing: every imported client’s client.created ends delivered', async () => {
    await stop();
    if (!receiverStarted) await receiver.start();
    receiverStarted = true;
    let { deps } = await start();
    const org = await createOrganization(deps, { name: 'Import Co' });
    const { endpoint, secret } = await addEndpoint(deps, org.id, { url: 'http://127.0.0.1:9/x', events: 'client.created' });
    await updateEndpoint(deps, org.id, endpoint.id, { url: receiver.script('/import', secret, { status: 204, delayMs: 20 }) });
    // The CRM writes its import straight into the clients table, BatchWriteItem of 25, as its application does.
    const total = 600;
    const at = new Date().toISOString();
    const ids = Array.from({ length: total }, (_, i) => `cli_import${String(i).padStart(5, '0')}`);
    for (const batch of inBatches(ids, 25)) {
      await deps.doc.send(new BatchWriteCommand({ RequestItems: { [deps.tables.clients]: batch.map((id) => ({
        PutRequest: { Item: { ...keys.client(org.id, id), entity: 'client', id, organization_id: org.id, status: 'lead', first_name: 'Imported', sms_consent: false, created_at: at, updated_at: at } },
      })) } }));
    }
    await eventually(async () => receiver.on('/import').length >= 20, { what: 'the first deliveries of the import' });
    await stop('SIGKILL');
    expect(receiver.on('/import').length).toBeLessThan(total);

    ({ deps } = await start());
    const delivered = await eventually(async () => {
      const list = await listDeliveries(deps, org.id, { limit: 1000 });
      return list.length === total && list.every((d) => d.status === 'delivered') ? list : undefined;
    }, { what: 'every imported client’s delivery', timeoutMs: 90_000, intervalMs: 500 });
    // One delivery per client, each received and verified; a repeat (killed before its outcome was written) has the same webhook-id.
    expect(new Set(delivered.map((d) => String(d.payload.data.object.id)))).toEqual(new Set(ids));
    const requests = receiver.on('/import');
    expect(requests.every((r) => !r.verifyError)).toBe(true);
    expect(new Set(requests.map((r) => r.headers['webhook-id']))).toEqual(new Set(delivered.map((d) => (d.payload as { id: string }).id)));
    expect(new Set(requests.map((r) => r.event!.data.object.id))).toEqual(new Set(ids));
  }, 180_000);

  it('a retry parked in the due index (out of the queue) outlives a restart and goes out when due, with its webhook-id and attempt number', async () => {
    await stop();
    if (!receiverStarted) await receiver.start();
    receiverStarted = true;
    let { info, deps } = await start();
    const org = await createOrganization(deps, { name: 'Parked Co' });
    const { key } = await createApiKey(deps, org.id, 'parked');
    const { endpoint, secret } = await addEndpoint(deps, org.id, { url: 'http://127.0.0.1:9/x', events: 'client.created' });
    // Retry-After 6 s: longer than the test stack's queue delay (2 s), so the retry leaves the queue.
    await updateEndpoint(deps, org.id, endpoint.id, { url: receiver.script('/parked', secret, { status: 503, headers: { 'Retry-After': '6' } }, { status: 204 }) });
    await fetch(`${info.apiUrl}/api/webhook/leads`, { method: 'POST', headers: { 'X-API-Key': key, 'Content-Type': 'application/json' }, body: JSON.stringify({ name: 'Parked Lead' }) });
    const [parked] = await eventually(async () => {
      const list = await listDeliveries(deps, org.id);
      return list[0]?.attempts.length === 1 && list[0].status === 'pending' ? list : undefined;
    }, { what: 'the first, failed attempt', timeoutMs: 30_000 });
    await stop(); // the queue's messages are gone with the emulator; the parked retry is in DynamoDB only
    await new Promise((r) => setTimeout(r, Math.max(0, Date.parse(parked.nextAttemptAt!) - Date.now())));

    ({ info, deps } = await start());
    const [delivered] = await eventually(async () => {
      const list = await listDeliveries(deps, org.id);
      return list[0]?.status === 'delivered' ? list : undefined;
    }, { what: 'the parked retry, delivered after the restart', timeoutMs: 30_000, intervalMs: 300 });
    expect(delivered.attempts.map((a) => [a.attempt, a.statusCode])).toEqual([[1, 503], [2, 204]]);
    const requests = receiver.on('/parked');
    expect(requests).toHaveLength(2);
    expect(new Set(requests.map((r) => r.headers['webhook-id']))).toEqual(new Set([parked.payload.id]));
    expect(requests.every((r) => !r.verifyError)).toBe(true);
  }, 120_000);
});
