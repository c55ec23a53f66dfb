/**
 * Fault test: the whole local stack (stream pollers, SQS emulator, queue pollers, functions) is
 * killed in the middle of an import and started again on the same data. Every event must end
 * delivered, none lost; duplicates, if any, carry the same webhook-id. The kill falls after the
 * fan-out handed the import to the bulk queue and before the bulk fan-out recorded all of it: the
 * messages must survive the kill, as on SQS (lib/local/sqs-journal.ts). The delivery core's own
 * restarts (a burst cut off mid-round, a parked retry outliving a restart) run on the in-memory
 * port: delivery-core/restart.test.ts.
 */
import { describe, it, expect, afterAll } from '@jest/globals';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createOrganization } from '../../../functions/core/tenancy/organizations.js';
import { addEndpoint, updateEndpoint } from '../../../functions/core/delivery/endpoints.js';
import { listDeliveries } from '../../../functions/core/delivery/redeliver.js';
import { testSettings } from '../global-setup.js';
import { eventually } from '../support/stack.js';
import { RestartableStack } from '../support/restartable-stack.js';
import { Receiver } from '../support/receiver.js';
import { BatchWriteCommand } from '@aws-sdk/lib-dynamodb';
import { keys } from '../../../functions/core/platform/model.js';
import { inBatches } from '../../../functions/core/platform/batches.js';

const dir = mkdtempSync(path.join(tmpdir(), 'crm-restart-'));
const receiver = new Receiver();
let receiverStarted = false;

const stack = new RestartableStack(dir, testSettings);
const start = () => stack.start();
const stop = (signal?: 'SIGTERM' | 'SIGKILL') => stack.stop(signal);

/** The bulk queue's messages sent and not deleted, as the local SQS's journal holds them. */
function handedOffNotDone(queueUrl: string): number {
  const file = path.join(dir, 'sqs-journal.jsonl');
  if (!existsSync(file)) return 0;
  const queue = queueUrl.split('/').at(-1);
  const live = new Map<string, string>();
  for (const text of readFileSync(file, 'utf8').split('\n')) {
    try {
      const line = JSON.parse(text) as { put?: string; message?: { messageId: string }; deleted?: string };
      if (line.put) live.set(line.message!.messageId, line.put);
      else if (line.deleted) live.delete(line.deleted);
    } catch { /* the line being written */ }
  }
  return [...live.values()].filter((q) => q === queue).length;
}

afterAll(async () => {
  await stop();
  await receiver.stop();
  rmSync(dir, { recursive: true, force: true });
});

describe('a restart in the middle of delivering', () => {
  it('an import killed mid-way (SIGKILL: no batch under way finishes or writes its checkpoint) loses nothing: every imported client’s client.created ends delivered, the bulk queue’s waiting messages included', async () => {
    await stop();
    if (!receiverStarted) await receiver.start();
    receiverStarted = true;
    let { deps, info } = await start();
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
    // Killed once deliveries arrive while part of the import still waits in the bulk queue.
    await eventually(async () => receiver.on('/import').length >= 1 && handedOffNotDone(info.queues.bulkQueue) > 0,
      { what: 'the first deliveries, with bulk messages still waiting', intervalMs: 20 });
    await stop('SIGKILL');
    expect(handedOffNotDone(info.queues.bulkQueue)).toBeGreaterThan(0);
    expect(receiver.on('/import').length).toBeLessThan(total);

    ({ deps, info } = await start());
    const delivered = await eventually(async () => {
      const list = await listDeliveries(deps, org.id, { limit: 1000 });
      // With its payload: a share killed between its sends and its event items is redone when its bulk message comes back.
      return list.length === total && list.every((d) => d.status === 'delivered' && d.payload) ? list : undefined;
    }, { what: 'every imported client’s delivery', timeoutMs: 90_000, intervalMs: 500 });
    // One delivery per client, each received and verified; a repeat (killed before its outcome was written) has the same webhook-id.
    expect(new Set(delivered.map((d) => String(d.payload.data.object.id)))).toEqual(new Set(ids));
    const requests = receiver.on('/import');
    expect(requests.every((r) => !r.verifyError)).toBe(true);
    expect(new Set(requests.map((r) => r.headers['webhook-id']))).toEqual(new Set(delivered.map((d) => (d.payload as { id: string }).id)));
    expect(new Set(requests.map((r) => r.event!.data.object.id))).toEqual(new Set(ids));
  }, 180_000);
});
