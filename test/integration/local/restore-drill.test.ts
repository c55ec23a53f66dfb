/**
 * The restore drill (docs/operations.md "Restore"), as far as it runs offline: a stack with an
 * organization, its keys, an endpoint, a delivery still pending and one parked in the due index is
 * exported table by table (`crm tables export`, files 0600), stopped for good, and an empty stack
 * gets the export (`crm tables import`: endpoints first, only missing items, streamed items marked
 * restored). Everything is found intact there; the pending delivery is queued again by
 * `crm deliveries requeue-pending` (no restart), the parked one by the sweeper when due, each sent
 * with its webhook-id and signed so that the receiver verifies it; the imported client makes no
 * new event, and a second import changes nothing.
 */
import { describe, it, expect, afterAll } from '@jest/globals';
import { mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createOrganization, getOrganization, setDuplicatePolicy } from '../../../functions/core/tenancy/organizations.js';
import { createApiKey, listApiKeys } from '../../../functions/core/tenancy/api-keys.js';
import { addEndpoint, getEndpoint, updateEndpoint } from '../../../functions/core/delivery/endpoints.js';
import { findEventDeliveries } from '../../../functions/core/delivery/find-delivery.js';
import { listDeliveries } from '../../../functions/core/delivery/redeliver.js';
import { deferDelivery, recordDelivery } from '../../../functions/core/delivery/queue.js';
import { sweepDueDeliveries } from '../../../functions/core/delivery/sweep.js';
import type { EventPayload } from '../../../functions/core/platform/model.js';
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
}, 150_000);

const lead = (apiUrl: string, key: string, name: string) => fetch(`${apiUrl}/api/webhook/leads`, {
  method: 'POST', headers: { 'X-API-Key': key, 'Content-Type': 'application/json' }, body: JSON.stringify({ name }),
});

describe('the restore drill', () => {
  it('exports every table, imports it into an empty stack, and finds every organization, key, endpoint, pending and parked delivery intact; each is delivered once', async () => {
    await receiver.start();
    // The empty stack the export goes to starts alongside (it stays empty until the import): one start's wait, not two.
    const [old, fresh] = await Promise.all([before.start(), after.start()]);
    const org = await createOrganization(old.deps, { name: 'Restored Co' });
    const { key } = await createApiKey(old.deps, org.id, 'website');
    const { endpoint, secret } = await addEndpoint(old.deps, org.id, { url: 'http://127.0.0.1:9/x', events: 'client.created' });
    await updateEndpoint(old.deps, org.id, endpoint.id, { url: receiver.script('/restored', secret, 'hang') });
    expect((await lead(old.info.apiUrl, key, 'Pending Patricia')).status).toBe(201);
    await eventually(async () => receiver.on('/restored').length === 1, { what: 'the first attempt (held by the receiver)' });
    // Its record is written by its outcome (docs/data-model.md): until then its event item holds it.
    const eventId = receiver.on('/restored')[0].headers['webhook-id'] as string;
    const [pending] = await eventually(async () => {
      const found = await findEventDeliveries(old.deps, eventId, org.id);
      return found.length === 1 ? found : undefined;
    }, { what: 'the event item of the held delivery' });
    expect(pending).toMatchObject({ status: 'pending', endpointId: endpoint.id });
    // A retry parked in the due index, due 10 minutes from now (neither stack's own sweeper takes it).
    const parkedEvent = { id: `evt_parked_${Date.now()}`, type: 'client.created', organization_id: org.id, timestamp: new Date().toISOString(), data: { object: { id: 'cli_parked', first_name: 'Parked' } } } as unknown as EventPayload;
    const parkedMessage = (await recordDelivery(old.deps, parkedEvent, (await getEndpoint(old.deps, org.id, endpoint.id))!))!;
    expect(await deferDelivery(old.deps, parkedMessage, Date.now() + 600_000, { reason: 'drill: parked retry' })).toBe('parked');
    const oldKeys = await listApiKeys(old.deps, org.id);
    const oldEndpoint = await getEndpoint(old.deps, org.id, endpoint.id);

    const exported = await runCli(['tables', 'export', '--dir', exportDir], { stackFile: before.stackFile });
    expect(exported.code).toBe(0);
    expect(exported.json<{ counts: Record<string, number> }>().counts).toMatchObject({ organizations: expect.any(Number), endpoints: 2, clients: 1 });
    for (const file of readdirSync(exportDir)) expect({ file, mode: statSync(path.join(exportDir, file)).mode & 0o777 }).toEqual({ file, mode: 0o600 });
    await before.stop('SIGKILL'); // the old stack is gone for good
    beforeStopped = true;
    receiver.script('/restored', secret, { status: 204 });

    // The empty stack, one import: endpoints first, the imported client marked restored (no event).
    expect(await getOrganization(fresh.deps, org.id)).toBeUndefined();
    const imported = await runCli(['tables', 'import', '--dir', exportDir], { stackFile: after.stackFile });
    expect(imported.code).toBe(0);
    expect(imported.json()).toMatchObject({ counts: { endpoints: 2, clients: 1 }, alreadyPresent: {} });

    expect(await getOrganization(fresh.deps, org.id)).toMatchObject({ id: org.id, name: 'Restored Co' });
    expect(await listApiKeys(fresh.deps, org.id)).toEqual(oldKeys);
    // The old stack kept working until it was stopped (its held attempt may have timed out): what
    // cannot change is compared, the secrets first.
    const { circuit: _circuit, ...kept } = oldEndpoint!;
    expect(await getEndpoint(fresh.deps, org.id, endpoint.id)).toMatchObject(kept);
    const restored = [...await listDeliveries(fresh.deps, org.id), ...await findEventDeliveries(fresh.deps, eventId, org.id)];
    expect(restored).toEqual(expect.arrayContaining([
      expect.objectContaining({ id: pending.id, status: 'pending', endpointId: endpoint.id, payload: pending.payload }),
      expect.objectContaining({ id: parkedMessage.deliveryId, status: 'pending', endpointId: endpoint.id }),
    ]));
    // The key still authenticates: its hash item came back with it.
    expect((await lead(fresh.info.apiUrl, key, 'After The Restore')).status).toBe(201);

    // Into a live stack, an import never rolls back: a change made since stays, nothing is written again.
    const changed = (await getOrganization(fresh.deps, org.id))!.duplicatePolicy === 'merge' ? 'flag' : 'merge';
    await setDuplicatePolicy(fresh.deps, org.id, changed);
    const again = await runCli(['tables', 'import', '--dir', exportDir], { stackFile: after.stackFile });
    expect(again.json<{ counts: object }>().counts).toEqual({});
    expect(await getOrganization(fresh.deps, org.id)).toMatchObject({ name: 'Restored Co', duplicatePolicy: changed });

    // The old queue is gone: the pending delivery is queued again by the CLI (as on AWS, no restart);
    // the parked one by a sweep once it falls due (a sweeper whose clock is 11 minutes ahead).
    const requeued = await runCli(['deliveries', 'requeue-pending'], { stackFile: after.stackFile });
    expect(requeued.json<{ queued: number }>().queued).toBeGreaterThanOrEqual(1);
    await sweepDueDeliveries({ ...fresh.deps, now: () => Date.now() + 660_000 });
    const delivered = await eventually(async () => {
      const list = await listDeliveries(fresh.deps, org.id);
      return list.length === 3 && list.every((d) => d.status === 'delivered') ? list : undefined;
    }, { what: 'the restored pending and parked deliveries and the new lead\'s', intervalMs: 250 });
    const requests = receiver.on('/restored').slice(1); // after the one the old stack held
    expect(requests.every((r) => r.verifyError === undefined)).toBe(true);
    const idsOf = (firstName: string) => new Set(requests.filter((r) => r.event!.data.object.first_name === firstName).map((r) => r.headers['webhook-id']));
    const payloadId = (id: string) => (delivered.find((d) => d.id === id)!.payload as { id: string }).id;
    expect(idsOf('Pending')).toEqual(new Set([payloadId(pending.id)]));
    expect(idsOf('Parked')).toEqual(new Set([payloadId(parkedMessage.deliveryId)]));
    expect(idsOf('After').size).toBe(1);
    expect(new Set(requests.map((r) => r.event!.data.object.first_name))).toEqual(new Set(['Pending', 'Parked', 'After']));
  }, 150_000);
});
