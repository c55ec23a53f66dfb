/**
 * The restore drill (docs/operations.md "Restore"), as far as it runs offline: a stack with an
 * organization, its keys, an endpoint and a delivery still pending is exported table by table
 * (`crm tables export`), stopped for good, and an empty stack gets the export (`crm tables import`,
 * endpoints last). Everything is found intact there: the organization, the keys (a lead is accepted
 * with the old key), the endpoint and its signing secret, and the pending delivery, which the new
 * stack sends once, with its webhook-id, signed so that the receiver verifies it.
 */
import { describe, it, expect, afterAll } from '@jest/globals';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createOrganization, getOrganization } from '../../../functions/core/tenancy/organizations.js';
import { createApiKey, listApiKeys } from '../../../functions/core/tenancy/api-keys.js';
import { addEndpoint, getEndpoint, updateEndpoint } from '../../../functions/core/delivery/endpoints.js';
import { listDeliveries } from '../../../functions/core/delivery/redrive.js';
import { testSettings } from '../global-setup.js';
import { eventually, runCli } from '../support/stack.js';
import { RestartableStack } from '../support/restartable-stack.js';
import { Receiver } from '../support/receiver.js';

const work = mkdtempSync(path.join(tmpdir(), 'crm-restore-'));
const receiver = new Receiver();
// The first stack's attempt hangs until the receiver is changed: its delivery is pending when exported.
const settings = { ...testSettings, deliveryTimeoutMs: 20_000 };
const before = new RestartableStack(path.join(work, 'before'), settings);
const after = new RestartableStack(path.join(work, 'after'), settings);
const exportDir = path.join(work, 'export');

let beforeStopped = false;
afterAll(async () => {
  // A killed child reports signalCode, not exitCode: stopping it twice would wait for a second exit.
  if (!beforeStopped) await before.stop('SIGKILL');
  await after.stop();
  await receiver.stop();
  rmSync(work, { recursive: true, force: true });
}, 60_000);

const lead = (apiUrl: string, key: string, name: string) => fetch(`${apiUrl}/api/webhook/leads`, {
  method: 'POST', headers: { 'X-API-Key': key, 'Content-Type': 'application/json' }, body: JSON.stringify({ name }),
});

describe('the restore drill', () => {
  it('exports every table, imports it into an empty stack, and finds every organization, key, endpoint and pending delivery intact', async () => {
    await receiver.start();
    const old = await before.start();
    const org = await createOrganization(old.deps, { name: 'Restored Co' });
    const { key } = await createApiKey(old.deps, org.id, 'website');
    const { endpoint, secret } = await addEndpoint(old.deps, org.id, { url: 'http://127.0.0.1:9/x', events: 'client.created' });
    await updateEndpoint(old.deps, org.id, endpoint.id, { url: receiver.script('/restored', secret, 'hang') });
    expect((await lead(old.info.apiUrl, key, 'Pending Patricia')).status).toBe(201);
    await eventually(async () => receiver.on('/restored').length === 1, { what: 'the first attempt (held by the receiver)' });
    const [pending] = await listDeliveries(old.deps, org.id);
    expect(pending).toMatchObject({ status: 'pending', endpointId: endpoint.id });
    const oldKeys = await listApiKeys(old.deps, org.id);
    const oldEndpoint = await getEndpoint(old.deps, org.id, endpoint.id);

    const exported = await runCli(['tables', 'export', '--dir', exportDir], { stackFile: before.stackFile });
    expect(exported.code).toBe(0);
    expect(exported.json<{ counts: Record<string, number> }>().counts).toMatchObject({ organizations: expect.any(Number), endpoints: 2, clients: 1 });
    await before.stop('SIGKILL'); // the old stack is gone for good
    beforeStopped = true;
    receiver.script('/restored', secret, { status: 204 });

    // An empty stack; everything but the endpoints first, so the fan-out that sees the imported
    // clients finds no subscriber and sends nothing again; then the endpoints.
    let fresh = await after.start();
    expect(await getOrganization(fresh.deps, org.id)).toBeUndefined();
    expect((await runCli(['tables', 'import', '--dir', exportDir, '--except', 'endpoints'], { stackFile: after.stackFile })).code).toBe(0);
    await new Promise((resolve) => setTimeout(resolve, 3000)); // the fan-out reads the imported clients (and finds no endpoint)
    const endpoints = await runCli(['tables', 'import', '--dir', exportDir, '--only', 'endpoints'], { stackFile: after.stackFile });
    expect(endpoints.json()).toEqual({ counts: { endpoints: 2 } });

    expect(await getOrganization(fresh.deps, org.id)).toMatchObject({ id: org.id, name: 'Restored Co' });
    expect(await listApiKeys(fresh.deps, org.id)).toEqual(oldKeys);
    // The old stack kept working until it was stopped (its held attempt may have timed out): what
    // cannot change is compared, the secrets first.
    const { circuit: _circuit, ...kept } = oldEndpoint!;
    expect(await getEndpoint(fresh.deps, org.id, endpoint.id)).toMatchObject(kept);
    const restored = await listDeliveries(fresh.deps, org.id);
    expect(restored).toEqual([expect.objectContaining({ id: pending.id, status: 'pending', endpointId: endpoint.id, payload: pending.payload })]);
    // The key still authenticates: its hash item came back with it.
    expect((await lead(fresh.info.apiUrl, key, 'After The Restore')).status).toBe(201);

    // A start of the restored stack queues the pending delivery again (the old queue is gone): it is
    // sent with its webhook-id (at least once, as always), signed with the restored secret, and no
    // new event (another webhook-id) is made for the imported client.
    await after.stop();
    fresh = await after.start();
    const delivered = await eventually(async () => {
      const list = await listDeliveries(fresh.deps, org.id);
      const restored = list.find((d) => d.id === pending.id);
      return restored?.status === 'delivered' && list.length === 2 && list.every((d) => d.status === 'delivered') ? restored : undefined;
    }, { what: 'the restored delivery and the new lead\'s', timeoutMs: 30_000, intervalMs: 250 });
    const requests = receiver.on('/restored').slice(1); // after the one the old stack held
    expect(requests.every((r) => r.verifyError === undefined)).toBe(true);
    const idsOf = (firstName: string) => new Set(requests.filter((r) => r.event!.data.object.first_name === firstName).map((r) => r.headers['webhook-id']));
    expect(idsOf('Pending')).toEqual(new Set([(delivered.payload as { id: string }).id]));
    expect(idsOf('After').size).toBe(1);
    expect(new Set(requests.map((r) => r.event!.data.object.first_name))).toEqual(new Set(['Pending', 'After']));
  }, 150_000);
});
