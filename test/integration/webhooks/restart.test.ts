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

const dir = mkdtempSync(path.join(tmpdir(), 'crm-restart-'));
const receiver = new Receiver();
let receiverStarted = false;

const stack = new RestartableStack(dir, testSettings);
const start = () => stack.start();
const stop = () => stack.stop();

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
