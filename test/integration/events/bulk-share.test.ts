/**
 * The fan-out's bulk path on the local stack (functions/core/events/bulk-share.ts, docs/capacity.md
 * "Fan-out lanes"): one stream batch holds an import and, in its middle, a lane-mate's new client.
 * The lane records and queues the lane-mate's delivery and hands the import to the bulk queue; the
 * lane-mate's webhook arrives while not one of the import's deliveries is recorded yet (its bulk
 * messages wait in a queue of the test's own, which no poller reads). The bulk fan-out then records
 * and queues the import, every client once; a bulk message received again creates and sends nothing.
 */
import { describe, it, expect, beforeAll, afterAll } from '@jest/globals';
import { CreateQueueCommand, ReceiveMessageCommand } from '@aws-sdk/client-sqs';
import type { SQSRecord } from 'aws-lambda';
import { eventually, newTenant, testStack } from '../support/stack.js';
import { Receiver } from '../support/receiver.js';
import { addEndpoint, updateEndpoint } from '../../../functions/core/delivery/endpoints.js';
import { fanOutStreamBatch as fanOut } from '../../../functions/event-fanout/stream-batch.js';
import { fanOutBulkBatch } from '../../../functions/bulk-fanout/sqs-batch.js';
import { readBulkShare } from '../../../functions/core/events/bulk-share.js';
import { HANDED_OFF_SHARE, LARGE_SHARE } from '../../../functions/core/events/fanout.js';
import { listDeliveries } from '../../../functions/core/delivery/redeliver.js';
import { keys } from '../../../functions/core/platform/model.js';
import { streamArns, streamRecord } from '../../unit/events/given-stream.js';
import { deliveriesSettled } from './settled.js';
import { ContainerMemory, withContainerMemory } from '../../../functions/core/delivery/container-memory.js';

let receiver: Receiver;
beforeAll(async () => {
  receiver = await new Receiver().start();
});
afterAll(async () => {
  await receiver.stop();
});

async function subscribed(path: string) {
  const { deps } = await testStack();
  const tenant = await newTenant({ name: `Bulk ${path}` });
  const { endpoint, secret } = await addEndpoint(deps, tenant.organizationId, { url: 'http://127.0.0.1:9/x', events: 'client.created' });
  await updateEndpoint(deps, tenant.organizationId, endpoint.id, { url: receiver.script(path, secret) });
  return tenant.organizationId;
}

const client = (org: string, id: string) => {
  const at = new Date().toISOString();
  return { ...keys.client(org, id), entity: 'client', id, organization_id: org, status: 'lead', first_name: 'Bulk', sms_consent: false, created_at: at, updated_at: at };
};

describe('the bulk path', () => {
  it('hands an import to the bulk queue: the lane-mate’s webhook arrives before any of the import is recorded; the bulk fan-out then delivers every client once, and a repeated bulk message adds nothing', async () => {
    const { deps } = await testStack();
    // A bulk queue nobody polls: what the lane handed off stays there until the test runs the bulk fan-out.
    const { QueueUrl } = await deps.sqs.send(new CreateQueueCommand({ QueueName: `crm-test-bulk-${Date.now()}` }));
    const laneDeps = { ...deps, queues: { ...deps.queues, bulkQueue: QueueUrl! } };
    const importer = await subscribed('/bulk-import');
    const mate = await subscribed('/bulk-mate');
    const total = 2 * LARGE_SHARE + 10;
    const ids = Array.from({ length: total }, (_, i) => `cli_bulk${String(i).padStart(3, '0')}`);
    const arn = `${streamArns.local}-bulk-${Date.now()}`;
    const records = ids.map((id) => streamRecord('local', 'INSERT', { new: client(importer, id) }, { arn }));
    records.splice(total / 2, 0, streamRecord('local', 'INSERT', { new: client(mate, 'cli_mate') }, { arn }));

    expect(await fanOut(laneDeps, records)).toEqual({ batchItemFailures: [] });
    const mateReceived = await eventually(async () => receiver.on('/bulk-mate')[0], { what: 'the lane-mate’s webhook' });
    expect(mateReceived.event!.data.object.id).toBe('cli_mate');
    expect(await listDeliveries(deps, importer)).toEqual([]);

    const { Messages = [] } = await deps.sqs.send(new ReceiveMessageCommand({ QueueUrl, MaxNumberOfMessages: 10, WaitTimeSeconds: 1 }));
    const shares = Messages.map((m) => readBulkShare(m.Body!));
    expect(shares.every((s) => s.organizationId === importer)).toBe(true);
    expect(shares.flatMap((s) => s.events.map((e) => e.event.data.object.id))).toEqual(ids); // in stream order
    const asRecords = Messages.map((m) => ({ messageId: m.MessageId!, receiptHandle: m.ReceiptHandle!, body: m.Body!, attributes: {} }) as SQSRecord);

    expect(await fanOutBulkBatch(deps, asRecords)).toEqual({ batchItemFailures: [] });
    await eventually(async () => receiver.on('/bulk-import').length >= total || undefined, { what: 'the import’s webhooks' });
    // Received again (SQS delivers at least once): found recorded and queued, nothing sent twice.
    expect(await fanOutBulkBatch(deps, asRecords)).toEqual({ batchItemFailures: [] });
    await deliveriesSettled(receiver, importer, '/bulk-import');
    const requests = receiver.on('/bulk-import');
    expect(requests.every((r) => !r.verifyError)).toBe(true);
    expect(requests.map((r) => r.event!.data.object.id).sort()).toEqual(ids);
    expect((await listDeliveries(deps, importer, { limit: 1000 })).map((d) => d.status)).toEqual(ids.map(() => 'delivered'));
  });

  it('goes on handing off the importer’s next stretch of the import (a batch of its own under a large share), in a container that never saw the large share, while its single lead stays in the lane', async () => {
    const { deps } = await testStack();
    const { QueueUrl } = await deps.sqs.send(new CreateQueueCommand({ QueueName: `crm-test-bulk-next-${Date.now()}` }));
    const laneDeps = { ...deps, queues: { ...deps.queues, bulkQueue: QueueUrl! } };
    const importer = await subscribed('/bulk-next');
    const arn = `${streamArns.local}-bulk-next-${Date.now()}`;
    const batch = (prefix: string, n: number) => Array.from({ length: n }, (_, i) => streamRecord('local', 'INSERT', { new: client(importer, `cli_${prefix}${String(i).padStart(3, '0')}`) }, { arn }));
    const handedOff = async () => {
      const { Messages = [] } = await deps.sqs.send(new ReceiveMessageCommand({ QueueUrl, MaxNumberOfMessages: 10, WaitTimeSeconds: 1 }));
      return Messages.flatMap((m) => readBulkShare(m.Body!).events.map((e) => e.event.data.object.id)).sort();
    };

    expect(await fanOut(laneDeps, batch('big', LARGE_SHARE))).toEqual({ batchItemFailures: [] });
    expect(await handedOff()).toHaveLength(LARGE_SHARE);
    // The next batch holds only HANDED_OFF_SHARE of its records, and runs in another container (a
    // memory of its own): handed off too, by the marker in the endpoints table; none recorded in the lane.
    const stretch = batch('tail', HANDED_OFF_SHARE);
    expect(await fanOut(withContainerMemory(laneDeps, new ContainerMemory()), stretch)).toEqual({ batchItemFailures: [] });
    expect(await handedOff()).toEqual(stretch.map((r) => String(r.dynamodb!.NewImage!.id.S)).sort());
    expect(await listDeliveries(deps, importer)).toEqual([]);
    // One lead of the importer's meanwhile is recorded and sent by the lane, not queued behind its import.
    expect(await fanOut(laneDeps, batch('lead', 1))).toEqual({ batchItemFailures: [] });
    const lead = await eventually(async () => receiver.on('/bulk-next')[0], { what: 'the importer’s lead' });
    expect(lead.event!.data.object.id).toBe('cli_lead000');
    expect(await handedOff()).toEqual([]);
  });

  it('refuses a bulk message that is not one (reported failed, so it is received again and then dead-lettered)', async () => {
    const { deps } = await testStack();
    const bad = { messageId: 'm-bad', receiptHandle: 'r', body: JSON.stringify({ deliveryId: 'dlv_x' }), attributes: {} } as SQSRecord;
    expect(await fanOutBulkBatch(deps, [bad])).toEqual({ batchItemFailures: [{ itemIdentifier: 'm-bad' }] });
  });
});
