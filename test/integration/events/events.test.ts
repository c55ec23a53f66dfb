/**
 * The event catalog on the local stack: every event is produced by the matching CLI action or the
 * lead endpoint, and arrives signed with the documented payload; no-op updates, TTL expiries and
 * re-read stream records produce nothing; subscriptions by alias work; an endpoint hears of every
 * change written after it was added (with the production endpoint cache TTL); a change's tenant is
 * its partition key.
 */
import { describe, it, expect } from '@jest/globals';
import { PutCommand } from '@aws-sdk/lib-dynamodb';
import { marshall } from '@aws-sdk/util-dynamodb';
import type { DynamoDBRecord } from 'aws-lambda';
import { eventually, newTenant, postLead, runCli, testStack } from '../support/stack.js';
import { receiverForFile } from '../support/receiver.js';
import { addEndpoint, updateEndpoint } from '../../../functions/core/delivery/endpoints.js';
import { catalog, schemas } from '../../../functions/core/events/catalog.js';
import { fanOutStreamBatch as fanOut } from '../../../functions/event-fanout/stream-batch.js';
import { listDeliveries } from '../../../functions/core/delivery/redeliver.js';
import { keys } from '../../../functions/core/platform/model.js';
import { createWorkOrder, setWorkOrderStatus } from '../../../functions/core/crm/entities.js';
import { streamRecord } from '../../unit/events/given-stream.js';
import { fannedOut, insertOf } from './stream-position.js';
import { deliveriesSettled } from './settled.js';

const receiver = receiverForFile();

async function subscribed(path: string, events: string) {
  const { deps } = await testStack();
  const tenant = await newTenant({ name: `Events ${path}` });
  const { endpoint, secret } = await addEndpoint(deps, tenant.organizationId, { url: 'http://127.0.0.1:9/x', events });
  await updateEndpoint(deps, tenant.organizationId, endpoint.id, { url: receiver.script(path, secret) });
  return tenant;
}

const cli = async (...args: string[]) => {
  const result = await runCli(args);
  if (result.code !== 0) throw new Error(`crm ${args.join(' ')} failed: ${result.stderr}`);
  return result.json<{ id: string }>();
};

const typesOn = (path: string) => receiver.on(path).map((r) => r.event?.type);
const waitFor = (path: string, count: number, what: string) =>
  eventually(async () => (receiver.on(path).length >= count ? receiver.on(path) : undefined), { what });

describe('events from CRM records', () => {
  it('produces every catalog event from the CLI and the lead endpoint, each with its documented payload', async () => {
    const tenant = await subscribed('/all', 'all');
    const org = tenant.organizationId;
    await postLead(tenant.key, { name: 'Lead Person' });
    const client = await cli('clients', 'create', '--org', org, '--name', 'Carla Client', '--email', 'carla@example.com');
    await cli('clients', 'update', '--org', org, '--client', client.id, '--status', 'active'); // same status: nothing
    await cli('clients', 'update', '--org', org, '--client', client.id, '--phone', '+1 212 555 0199');
    const wo = await cli('work-orders', 'create', '--org', org, '--title', 'Fix the boiler', '--client', client.id);
    await cli('work-orders', 'set-status', '--org', org, '--work-order', wo.id, '--status', 'in_progress');
    await cli('work-orders', 'set-status', '--org', org, '--work-order', wo.id, '--status', 'completed');
    const invoice = await cli('invoices', 'create', '--org', org, '--amount', '185.50', '--work-order', wo.id);
    await cli('invoices', 'send', '--org', org, '--invoice', invoice.id);
    await cli('invoices', 'pay', '--org', org, '--invoice', invoice.id, '--amount', '185.50');
    await cli('bookings', 'create', '--org', org, '--starts-at', '2026-12-01T09:00:00Z', '--service', 'Annual check');
    await cli('work-orders', 'delete', '--org', org, '--work-order', wo.id);
    await cli('clients', 'delete', '--org', org, '--client', client.id);

    const expected = ['client.created', 'client.created', 'client.updated', 'work_order.created', 'work_order.status_changed', 'work_order.status_changed', 'work_order.completed',
      'invoice.created', 'invoice.sent', 'invoice.paid', 'booking.received', 'work_order.deleted', 'client.deleted'];
    const received = await waitFor('/all', expected.length, 'every event');
    await deliveriesSettled(receiver, org, '/all'); // nothing more may arrive
    expect(typesOn('/all').sort()).toEqual([...expected].sort());
    for (const r of received) {
      expect(r.verifyError).toBeUndefined();
      const entity = catalog.find((c) => c.type === r.event!.type)!.entity;
      expect(schemas[entity].strict().safeParse(r.event!.data.object).error).toBeUndefined();
      expect(r.event!.organization_id).toBe(org);
    }
    const byType = (t: string) => received.filter((r) => r.event!.type === t).map((r) => r.event!);
    expect(byType('client.updated')[0].data.previous).toEqual({ phone: null });
    expect(byType('work_order.status_changed').map((e) => [e.data.previous!.status, e.data.object.status]).sort()).toEqual([['in_progress', 'completed'], ['scheduled', 'in_progress']]);
    expect(byType('work_order.completed')[0].data.previous).toEqual({ status: 'in_progress' });
    expect(byType('invoice.paid')[0].data.object.payments).toEqual([expect.objectContaining({ amount_cents: 18550 })]);
  }, 240_000); // thirteen CLI processes, each seconds on a loaded machine

  it('delivers only the subscribed events, named by alias', async () => {
    const { deps } = await testStack();
    const tenant = await subscribed('/alias', 'work_order_completed');
    const org = tenant.organizationId;
    // What the CLI's work-order commands call (the test above runs them as processes).
    const wo = await createWorkOrder(deps, org, { title: 'Paint fence' });
    await setWorkOrderStatus(deps, org, String(wo.id), 'completed');
    await postLead(tenant.key, { name: 'Not Subscribed' });
    await waitFor('/alias', 1, 'the completed event');
    await deliveriesSettled(receiver, org, '/alias');
    expect(typesOn('/alias')).toEqual(['work_order.completed']);
  });

  it('creates nothing twice when the same stream records are processed again', async () => {
    const { deps } = await testStack();
    const tenant = await subscribed('/replay', 'client.created');
    const at = new Date().toISOString();
    const item = { ...keys.client(tenant.organizationId, 'cli_replay'), entity: 'client', id: 'cli_replay', organization_id: tenant.organizationId, status: 'lead', first_name: 'Re', sms_consent: false, created_at: at, updated_at: at };
    const record: DynamoDBRecord = {
      eventID: 'replay-1', eventName: 'INSERT', eventSource: 'aws:dynamodb', eventSourceARN: 'arn:aws:dynamodb:ddblocal:000000000000:table/replay/stream/x',
      dynamodb: { SequenceNumber: '900000000000000000001', NewImage: marshall(item) as never, ApproximateCreationDateTime: Math.floor(Date.now() / 1000) },
    };
    expect(await fanOut(deps, [record])).toEqual({ batchItemFailures: [] });
    expect(await fanOut(deps, [record])).toEqual({ batchItemFailures: [] });
    await waitFor('/replay', 1, 'the delivery');
    await deliveriesSettled(receiver, tenant.organizationId, '/replay');
    expect(receiver.on('/replay')).toHaveLength(1);
    expect(await listDeliveries(deps, tenant.organizationId)).toHaveLength(1);
  });

  it('emits nothing when a client expires by TTL, in the record shape of AWS and of DynamoDB Local', async () => {
    // The exact records a TTL deletion produces (given-stream.ts), through the real fan-out and
    // tables: deterministic, where waiting for DynamoDB Local's TTL sweep was not.
    const { deps } = await testStack();
    const tenant = await subscribed('/ttl', 'all');
    const at = new Date().toISOString();
    const item = { ...keys.client(tenant.organizationId, 'cli_expiring'), entity: 'client', id: 'cli_expiring', organization_id: tenant.organizationId, status: 'lead', first_name: 'Temp', sms_consent: false, created_at: at, updated_at: at, expiresAt: Math.floor(Date.now() / 1000) - 60 };
    const arn = `arn:aws:dynamodb:ddblocal:000000000000:table/ttl-${tenant.organizationId}/stream/x`;
    const expiries = (['aws', 'local'] as const).map((shape) => streamRecord(shape, 'TTL', { old: item }, { arn }));
    expect(await fanOut(deps, expiries)).toEqual({ batchItemFailures: [] });
    expect(await listDeliveries(deps, tenant.organizationId)).toEqual([]);
    // The same item deleted by a user is an event: the pipeline above was live.
    expect(await fanOut(deps, [streamRecord('local', 'REMOVE', { old: item }, { arn })])).toEqual({ batchItemFailures: [] });
    await waitFor('/ttl', 1, 'client.deleted');
    await eventually(async () => (await listDeliveries(deps, tenant.organizationId)).length === 1, { what: 'its record, written by its outcome' });
    expect((await listDeliveries(deps, tenant.organizationId)).map((d) => d.eventType)).toEqual(['client.deleted']);
    expect(typesOn('/ttl')).toEqual(['client.deleted']);
  });
});

describe('endpoints added while events flow', () => {
  it('a new endpoint receives the next lead, though the fan-out just saw the organization without one', async () => {
    const { deps } = await testStack();
    const tenant = await newTenant({ name: 'Late Endpoint' });
    const first = (await (await postLead(tenant.key, { name: 'Before Endpoint' })).json()) as { id: string };
    await fannedOut(await insertOf(first.id)); // the fan-out has read the organization's (empty) endpoint list
    const { endpoint, secret } = await addEndpoint(deps, tenant.organizationId, { url: 'http://127.0.0.1:9/x', events: 'client.created' });
    await updateEndpoint(deps, tenant.organizationId, endpoint.id, { url: receiver.script('/late', secret) });
    const second = (await (await postLead(tenant.key, { name: 'After Endpoint' })).json()) as { id: string };
    const [got] = await waitFor('/late', 1, 'the second lead’s client.created');
    expect(got.verifyError).toBeUndefined();
    expect(got.event).toMatchObject({ type: 'client.created', organization_id: tenant.organizationId, data: { object: { id: second.id } } });
    await fannedOut(await insertOf(second.id));
    expect((await listDeliveries(deps, tenant.organizationId)).map((d) => d.eventId)).toEqual([got.event!.id]); // not the lead before it
  });

  it('a second endpoint receives the next lead, though deliveries just read the organization’s endpoints', async () => {
    const { deps } = await testStack();
    const tenant = await subscribed('/first', 'client.created');
    await postLead(tenant.key, { name: 'One Endpoint' });
    await waitFor('/first', 1, 'the first endpoint’s delivery');
    const { endpoint, secret } = await addEndpoint(deps, tenant.organizationId, { url: 'http://127.0.0.1:9/x', events: 'client.created' });
    await updateEndpoint(deps, tenant.organizationId, endpoint.id, { url: receiver.script('/second', secret) });
    const next = (await (await postLead(tenant.key, { name: 'Two Endpoints' })).json()) as { id: string };
    const [got] = await waitFor('/second', 1, 'the second endpoint’s delivery');
    expect(got.verifyError).toBeUndefined();
    expect(got.event).toMatchObject({ type: 'client.created', data: { object: { id: next.id } } });
    await waitFor('/first', 2, 'the first endpoint’s second delivery');
  });
});

describe('the tenant of a change is its partition key', () => {
  it('an item whose organization_id names another organization reaches nobody', async () => {
    const { deps } = await testStack();
    const a = await subscribed('/tenant-a', 'all');
    const b = await subscribed('/tenant-b', 'all');
    const at = new Date().toISOString();
    const id = `cli_mismatch_${a.organizationId}`;
    await deps.doc.send(new PutCommand({
      TableName: deps.tables.clients,
      Item: { ...keys.client(a.organizationId, id), entity: 'client', id, organization_id: b.organizationId, status: 'lead', first_name: 'Misfiled', sms_consent: false, created_at: at, updated_at: at },
    }));
    await fannedOut(await insertOf(id));
    expect(await listDeliveries(deps, b.organizationId)).toEqual([]);
    expect(await listDeliveries(deps, a.organizationId)).toEqual([]); // dropped, not re-labelled
    expect(receiver.on('/tenant-a')).toEqual([]);
    expect(receiver.on('/tenant-b')).toEqual([]);
  });
});
