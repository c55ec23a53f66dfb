/**
 * The daily digest (functions/core/settings/daily-digest.ts) on the twins: the day's leads by
 * source from the clients store, the day's deliveries per endpoint from the delivery store, the
 * failed ones as waiting in the dead-letter queue; produced in the digest hour only, keyed by
 * organization and day.
 */
import { describe, it, expect } from '@jest/globals';
import { keys } from '../../../functions/core/platform/model.js';
import { newTimeOrderedId } from '../../../functions/core/platform/ids.js';
import { withEndpointStore } from '../../../functions/core/delivery/endpoint-store.js';
import { withDeliveryPorts } from '../../../functions/core/delivery/delivery-port.js';
import { noticeQueuePort } from '../../../functions/core/notify/produce.js';
import { digestDay, digestOf, produceDigests, runDailyDigest } from '../../../functions/core/settings/daily-digest.js';
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
    await lead(inDay(10), { request_status: 303 });
    await lead(inDay(-2)); // the day before: not counted
    await lead(inDay(10), { source: 'crm', request_id: undefined }); // the CRM's own client: not a lead
    delivery(1, inDay(1), 'delivered');
    delivery(2, inDay(2), 'delivered');
    delivery(3, inDay(3), 'failed');
    delivery(4, inDay(4), 'pending');
    delivery(5, inDay(5), 'delivered', 'ep_gone');
    delivery(6, inDay(30), 'failed'); // the next day
    expect(await digestOf(deps, ORG, DAY)).toEqual({
      day: DAY, leadsBySource: { api: 2, form: 1 }, deadLetters: 1,
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

it('a scheduled run in the digest hour digests each organization of the recipients\' digest index; in another hour it does nothing', async () => {
  const { deps, queue, clock } = await given();
  const store = recipientStore(deps);
  await store.changeRecipients(ORG, { add: [{ email: 'boss@shop.example', notices: ['daily_digest'], status: 'confirmed', addedAt: 1 }], update: [], remove: [] });
  await store.changeRecipients('org_leads_only', { add: [{ email: 'ops@shop.example', notices: ['lead.created'], status: 'confirmed', addedAt: 1 }], update: [], remove: [] });
  expect(await runDailyDigest(deps)).toEqual({ day: DAY, produced: 1 });
  expect(queue.messages.map((m) => m.key)).toEqual([`daily_digest|${ORG}|${DAY}`]);
  clock.set('2030-01-15T08:10:00.000Z');
  expect(await runDailyDigest(deps)).toEqual({ produced: 0 });
  expect(queue.messages).toHaveLength(1);
});
