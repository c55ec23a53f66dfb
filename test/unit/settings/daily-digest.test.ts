/**
 * The daily digest (functions/core/settings/daily-digest.ts) on the twins: the day's leads by
 * source from the clients store, the day's deliveries per endpoint from the delivery store, the
 * failed ones as waiting in the dead-letter queue; produced in the digest hour only, keyed by
 * organization and day.
 */
import { describe, it, expect, jest } from '@jest/globals';
import { logger } from '../../../functions/core/platform/observability.js';
import { keys } from '../../../functions/core/platform/model.js';
import { newTimeOrderedId } from '../../../functions/core/platform/ids.js';
import { withEndpointStore } from '../../../functions/core/delivery/endpoint-store.js';
import { withDeliveryPorts } from '../../../functions/core/delivery/delivery-port.js';
import { noticeQueuePort } from '../../../functions/core/notify/produce.js';
import type { SQSRecord } from 'aws-lambda';
import { digestDay, digestOf, produceDigests, runDailyDigest } from '../../../functions/core/settings/daily-digest.js';
import { digestQueuePort, type DigestJob } from '../../../functions/core/settings/digest-queue.js';
import { composeNotice } from '../../../functions/core/notify/compose.js';
import { digestBatch } from '../../../functions/daily-digest/sqs-batch.js';
import { recipientStore } from '../../../functions/core/notify/recipient-store.js';
import { retryLostRaces } from '../../../functions/core/platform/optimistic.js';
import type { ClientItem } from '../../../functions/core/intake/clients-store.js';
import { MemoryEndpointStore } from '../../support/memory-endpoint-store.js';
import { MemoryNoticeQueue } from '../../support/memory-notice-queue.js';
import { memoryStores } from '../../support/stores/memory-deps.js';
import { MemoryDeliveryQueue, MemoryDeliveryStore } from '../../integration/delivery-core/support/memory-delivery.js';

const ORG = 'org_digest';
const DAY = '2030-01-14';
const inDay = (h: number) => Date.parse(`${DAY}T00:30:00.000Z`) + h * 3_600_000;

async function given() {
  const stores = memoryStores({ now: '2030-01-15T07:10:00.000Z' });
  const endpoints = new MemoryEndpointStore();
  const deliveries = new MemoryDeliveryStore(stores.clock.now);
  const queue = new MemoryNoticeQueue();
  let deps = withEndpointStore(stores.deps, endpoints);
  deps = withDeliveryPorts(deps, { store: deliveries, queue: new MemoryDeliveryQueue(stores.clock.now) });
  deps = noticeQueuePort.with(deps, queue);
  const endpoint = { id: 'ep_1', organizationId: ORG, url: 'https://hooks.example/a', events: ['*'], secrets: [], enabled: true, createdAt: '2030-01-01T00:00:00.000Z' };
  await retryLostRaces('given', () => endpoints.createEndpoint(endpoint, 10));
  const lead = async (at: number, fields: Record<string, unknown> = {}) => {
    const id = newTimeOrderedId('cli', at);
    await stores.clients.putOnce({ ...keys.client(ORG, id), entity: 'client', id, organization_id: ORG, source: 'api', status: 'lead', request_id: `req_${id}`, key_id: 'key_1', created_at: new Date(at).toISOString(), ...fields } as unknown as ClientItem);
  };
  const delivery = (n: number, at: number, status: string, endpointId = 'ep_1') => {
    const item = { ...keys.delivery(ORG, `dlv_${n}`), id: `dlv_${n}`, organizationId: ORG, endpointId, eventId: `evt_${n}`, eventType: 'client.created', status, attempts: [], createdAt: new Date(at).toISOString() };
    deliveries.items.set(`${item.pk}\u0000${item.sk}`, item);
  };
  return { ...stores, deps, queue, lead, delivery };
}

it('is produced in the digest hour only, for the day before', () => {
  expect(digestDay(Date.parse('2030-01-15T07:59:00.000Z'), 7)).toBe('2030-01-14');
  expect(digestDay(Date.parse('2030-01-15T08:00:00.000Z'), 7)).toBeUndefined();
});

describe('the digest of a day', () => {
  it('counts the day\'s leads by source and its deliveries per endpoint; failed ones wait in the dead-letter queue', async () => {
    const { deps, lead, delivery } = await given();
    await lead(inDay(1));
    await lead(inDay(9));
    await lead(inDay(10), { request_status: 303, request_channel: 'form' });
    await lead(inDay(11), { request_channel: 'page' });
    await lead(inDay(-2)); // the day before: not counted
    await lead(inDay(10), { source: 'crm', request_id: undefined }); // the CRM's own client: not a lead
    delivery(1, inDay(1), 'delivered');
    delivery(2, inDay(2), 'delivered');
    delivery(3, inDay(3), 'failed');
    delivery(4, inDay(4), 'pending');
    delivery(5, inDay(5), 'delivered', 'ep_gone');
    delivery(6, inDay(30), 'failed'); // the next day
    expect(await digestOf(deps, ORG, DAY)).toEqual({
      day: DAY, leadsBySource: { lead_endpoint: 2, no_script_form: 1, page_key: 1 }, deadLetters: 1,
      endpoints: expect.arrayContaining([
        { endpointId: 'ep_1', url: 'https://hooks.example', delivered: 2, failed: 1, pending: 1 },
        { endpointId: 'ep_gone', delivered: 1, failed: 0, pending: 0 },
      ]),
    });
  });

  it('is one notice per organization and day', async () => {
    const { deps, queue, lead } = await given();
    await lead(inDay(3));
    expect(await produceDigests(deps, [ORG, 'org_quiet'], DAY)).toBe(2);
    expect(queue.messages.map((m) => [m.kind, m.key])).toEqual([['daily_digest', `daily_digest|${ORG}|${DAY}`], ['daily_digest', `daily_digest|org_quiet|${DAY}`]]);
    expect(queue.messages[1].data).toEqual({ day: DAY, leadsBySource: {}, endpoints: [], deadLetters: 0 });
  });
});

/** The digest queue in memory: what the schedule's run queued, each body as SQS would carry it. */
function memoryDigestQueue() {
  const bodies: string[] = [];
  return { bodies, queue: { enqueue: async (jobs: DigestJob[]) => void bodies.push(...jobs.map((j) => JSON.stringify(j))) } };
}
const asRecords = (bodies: string[]) => bodies.map((body, n) => ({ messageId: `m${n}`, body }) as SQSRecord);

it('a scheduled run in the digest hour queues one job per organization of the recipients\' digest index, making no digest itself; in another hour it does nothing', async () => {
  const { deps: base, queue, clock } = await given();
  const jobs = memoryDigestQueue();
  const deps = digestQueuePort.with(base, jobs.queue);
  const store = recipientStore(deps);
  await store.changeRecipients(ORG, { add: [{ email: 'boss@shop.example', notices: ['daily_digest'], status: 'confirmed', addedAt: 1 }], update: [], remove: [] });
  await store.changeRecipients('org_leads_only', { add: [{ email: 'ops@shop.example', notices: ['lead.created'], status: 'confirmed', addedAt: 1 }], update: [], remove: [] });
  expect(await runDailyDigest(deps)).toEqual({ day: DAY, queued: 1 });
  expect(jobs.bodies.map((b) => JSON.parse(b))).toEqual([{ organizationId: ORG, day: DAY }]);
  expect(queue.messages).toEqual([]);
  expect(await digestBatch(deps, asRecords(jobs.bodies))).toEqual({ batchItemFailures: [] });
  expect(queue.messages.map((m) => m.key)).toEqual([`daily_digest|${ORG}|${DAY}`]);
  clock.set('2030-01-15T08:10:00.000Z');
  expect(await runDailyDigest(deps)).toEqual({ queued: 0 });
  expect(jobs.bodies).toHaveLength(1);
});

it('a large account: the schedule\'s run reads no organization\'s data, and each organization\'s digest is its own message (a bad one fails alone)', async () => {
  const { deps: base, queue, lead } = await given();
  const jobs = memoryDigestQueue();
  const deps = digestQueuePort.with(base, jobs.queue);
  const store = recipientStore(deps);
  const organizations = Array.from({ length: 250 }, (_, i) => `org_${String(i).padStart(3, '0')}`);
  for (const org of organizations) await store.changeRecipients(org, { add: [{ email: 'boss@shop.example', notices: ['daily_digest'], status: 'confirmed', addedAt: 1 }], update: [], remove: [] });
  await lead(inDay(3));
  expect(await runDailyDigest(deps)).toEqual({ day: DAY, queued: 250 });
  expect(queue.messages).toEqual([]);
  expect(new Set(jobs.bodies).size).toBe(250);
  // Each message an invocation of its own (batchSize 1 in lib/topology.ts): one organization's reads.
  jest.spyOn(logger, 'error').mockImplementation(() => undefined);
  const outcomes = await Promise.all(asRecords([...jobs.bodies, 'not a job']).map((r) => digestBatch(deps, [r])));
  expect(outcomes.flatMap((o) => o.batchItemFailures)).toEqual([{ itemIdentifier: 'm250' }]);
  expect(new Set(queue.messages.map((m) => m.organizationId)).size).toBe(250);
});

it('a job received after its day (redriven days later) sends the digest of its own day, its subject and heading naming that day', async () => {
  const { deps, queue, lead, clock } = await given();
  await lead(inDay(3));
  clock.set('2030-01-18T11:00:00.000Z');
  expect(await digestBatch(deps, asRecords([JSON.stringify({ organizationId: ORG, day: DAY })]))).toEqual({ batchItemFailures: [] });
  expect(queue.messages.map((m) => [m.key, (m.data as { day?: string }).day])).toEqual([[`daily_digest|${ORG}|${DAY}`, DAY]]);
  const mail = composeNotice(queue.messages[0], { email: 'boss@shop.example' }, { unsubscribe: 'https://crm.example/u', settings: 'https://crm.example/settings' });
  expect(mail.subject).toBe(`Daily digest ${DAY}: 1 lead`);
  expect(mail.text).toContain(DAY);
});
