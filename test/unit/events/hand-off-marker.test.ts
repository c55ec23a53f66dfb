/**
 * The hand-off decision across containers (functions/core/events/fanout.ts BULK_STAYS_MS,
 * docs/capacity.md "Fan-out lanes"): two fan-out containers that share no memory (each its own
 * ContainerMemory) but the endpoints table (its in-memory twin) and the deliveries (the delivery
 * core's in-memory port), on a clock the test controls. What one container decided of an importing
 * organization, the other decides alike, because the decision is the marker item read with the
 * endpoints. The bulk queue is a recorder of SendMessageBatch calls.
 */
import { describe, it, expect, jest, afterEach } from '@jest/globals';
import type { SQSRecord } from 'aws-lambda';
import type { SendMessageBatchCommand } from '@aws-sdk/client-sqs';
import type { Deps } from '../../../functions/core/platform/deps.js';
import { parseConfig } from '../../../functions/core/platform/config.js';
import { keys } from '../../../functions/core/platform/model.js';
import { ContainerMemory, withContainerMemory } from '../../../functions/core/delivery/container-memory.js';
import { withEndpointStore } from '../../../functions/core/delivery/endpoint-store.js';
import { withDeliveryPorts } from '../../../functions/core/delivery/delivery-port.js';
import { bulkMessages, readBulkShare } from '../../../functions/core/events/bulk-share.js';
import { fanOutBulkBatch } from '../../../functions/bulk-fanout/sqs-batch.js';
import { logger } from '../../../functions/core/platform/observability.js';
import { BULK_STAYS_MS, HANDED_OFF_SHARE, LARGE_SHARE } from '../../../functions/core/events/fanout.js';
import { fanOutStreamBatch } from '../../../functions/event-fanout/stream-batch.js';
import { MemoryEndpointStore } from '../../support/memory-endpoint-store.js';
import { MemoryDeliveryQueue, MemoryDeliveryStore } from '../../integration/delivery-core/support/memory-delivery.js';
import { streamRecord } from './given-stream.js';

const T0 = Date.parse('2030-01-15T12:00:00.000Z');
const IMPORTER = 'org_importer';

/** The world two containers share: the endpoints table, the deliveries, the bulk queue, the clock. */
async function world() {
  let t = T0;
  const now = () => t;
  const endpoints = new MemoryEndpointStore();
  const endpoint = { id: 'ep_imp', organizationId: IMPORTER, url: 'https://receiver.example.com/h', events: ['client.created'], secrets: [], enabled: true, createdAt: new Date(T0).toISOString() };
  await endpoints.createEndpoint(endpoint, 10).catch(() => undefined); // the count made
  await endpoints.createEndpoint(endpoint, 10);
  const ports = { store: new MemoryDeliveryStore(now), queue: new MemoryDeliveryQueue(now) };
  const handedOff: string[] = [];
  const sqs = {
    async send(command: SendMessageBatchCommand) {
      const entries = command.input.Entries ?? [];
      handedOff.push(...entries.flatMap((e) => readBulkShare(e.MessageBody!).events.map((x) => String((x.event.data.object as { id: string }).id))));
      return { Successful: entries.map((e) => ({ Id: e.Id })), Failed: [] };
    },
  };
  const base = { config: parseConfig({ local: true }), now, sqs, tables: { endpoints: 'endpoints', deliveries: 'deliveries' }, queues: { bulkQueue: 'memory://bulk' } } as unknown as Deps;
  /** A fan-out container: the shared world, a memory of its own. */
  const container = () => withContainerMemory(withDeliveryPorts(withEndpointStore(base, endpoints), ports), new ContainerMemory());
  let n = 0;
  const batch = (count: number) => Array.from({ length: count }, () => {
    const id = `cli_${String(++n).padStart(4, '0')}`;
    const at = new Date(t).toISOString();
    return streamRecord('aws', 'INSERT', { new: { ...keys.client(IMPORTER, id), entity: 'client', id, organization_id: IMPORTER, status: 'lead', first_name: 'Imported', created_at: at, updated_at: at } });
  });
  /** Client ids of the batch's records. */
  const idsOf = (records: ReturnType<typeof batch>) => records.map((r) => String(r.dynamodb!.NewImage!.id.S));
  /** Client ids whose deliveries the lane recorded and queued. */
  const inLane = () => ports.queue.messages('deliveryQueue').map((m) => String((m.payload.data.object as { id: string }).id));
  return { endpoints, ports, container, batch, idsOf, handedOff, inLane, advance: (ms: number) => { t += ms; } };
}

describe('the hand-off decision, in two containers that share no memory', () => {
  it('a fresh container hands off the importer’s next stretch as the first did, keeps its lead in the lane, and both return to the lane once BULK_STAYS_MS have passed', async () => {
    const w = await world();
    const [first, second] = [w.container(), w.container()];

    const large = w.batch(LARGE_SHARE + 5);
    expect(await fanOutStreamBatch(first, large)).toEqual({ batchItemFailures: [] });
    expect(w.handedOff).toEqual(w.idsOf(large));
    // The marker beside the importer's endpoints, with its TTL (epoch seconds).
    expect(w.endpoints.items.get(`${keys.handOff(IMPORTER).pk}\u0000${keys.handOff(IMPORTER).sk}`)).toEqual({
      ...keys.handOff(IMPORTER), handOffUntil: T0 + BULK_STAYS_MS, expiresAt: (T0 + BULK_STAYS_MS) / 1000,
    });

    // The lane's next batch runs in the other container, which never saw the large share.
    w.advance(BULK_STAYS_MS - 1);
    const stretch = w.batch(HANDED_OFF_SHARE);
    expect(await fanOutStreamBatch(second, stretch)).toEqual({ batchItemFailures: [] });
    expect(w.handedOff).toEqual(w.idsOf([...large, ...stretch]));
    expect(w.inLane()).toEqual([]);
    // Fewer events (a lead) stay in the lane, not queued behind the import.
    const lead = w.batch(HANDED_OFF_SHARE - 1);
    await fanOutStreamBatch(second, lead);
    expect(w.inLane()).toEqual(w.idsOf(lead));

    // The window ends for both containers alike: the next stretch is recorded in the lane.
    w.advance(1);
    const after = w.batch(HANDED_OFF_SHARE);
    await fanOutStreamBatch(first, after);
    expect(w.inLane()).toEqual(w.idsOf([...lead, ...after]));
    expect(w.handedOff).toEqual(w.idsOf([...large, ...stretch]));
  });

  it('renews the marker at each large share, never shortens it, and reads it once per organization with the endpoints', async () => {
    const w = await world();
    const [first, second] = [w.container(), w.container()];
    await fanOutStreamBatch(first, w.batch(LARGE_SHARE));
    w.advance(4_000);
    await fanOutStreamBatch(second, w.batch(LARGE_SHARE));
    const marker = () => (w.endpoints.items.get(`${keys.handOff(IMPORTER).pk}\u0000${keys.handOff(IMPORTER).sk}`) as { handOffUntil: number }).handOffUntil;
    expect(marker()).toBe(T0 + 4_000 + BULK_STAYS_MS);
    await w.endpoints.markHandOff(IMPORTER, T0 + 1); // a late writer of an older window
    expect(marker()).toBe(T0 + 4_000 + BULK_STAYS_MS);
    // Per batch: one read of the organization (endpoints and marker together) and one marker write; no other endpoints call.
    expect(w.endpoints.calls.filter((c) => c !== 'createEndpoint')).toEqual(['fanOutRead', 'markHandOff', 'fanOutRead', 'markHandOff', 'markHandOff']);
  });

  it('a marker that cannot be written leaves the batch done (its share handed off), logged with the organization, not retried', async () => {
    const w = await world();
    const warn = jest.spyOn(logger, 'warn').mockImplementation(() => undefined);
    w.endpoints.inject('markHandOff', 'throttle');
    const large = w.batch(LARGE_SHARE);
    expect(await fanOutStreamBatch(w.container(), large)).toEqual({ batchItemFailures: [] });
    expect(w.handedOff).toEqual(w.idsOf(large));
    expect(warn).toHaveBeenCalledWith('hand-off marker not written', expect.objectContaining({ organizationId: IMPORTER }));
  });
});

describe('the fan-out’s and the bulk fan-out’s failure lines name the organization and its endpoints (docs/operations.md "Logs Insights queries")', () => {
  afterEach(() => { jest.restoreAllMocks(); });

  it('a batch whose deliveries cannot be recorded: one line per organization, with its endpoints', async () => {
    const w = await world();
    const error = jest.spyOn(logger, 'error').mockImplementation(() => undefined);
    w.ports.store.recorded = async () => { throw new Error('ProvisionedThroughputExceededException'); };
    const [first] = w.batch(1);
    expect(await fanOutStreamBatch(w.container(), [first])).toEqual({ batchItemFailures: [{ itemIdentifier: first.dynamodb!.SequenceNumber }] });
    expect(error).toHaveBeenCalledWith('recording or queuing deliveries or notices failed', expect.objectContaining({ organizationId: IMPORTER, endpointIds: 'ep_imp' }));
  });

  it('a bulk message that cannot be recorded, and one that is no bulk message', async () => {
    const w = await world();
    const error = jest.spyOn(logger, 'error').mockImplementation(() => undefined);
    w.ports.store.recorded = async () => { throw new Error('ProvisionedThroughputExceededException'); };
    const event = { id: 'evt_1', type: 'client.created', organization_id: IMPORTER, data: { object: { id: 'cli_1' } } } as never;
    const [share] = bulkMessages([{ event, endpoint: { id: 'ep_imp', enabled: true } }]);
    const message = (body: string) => ({ messageId: 'm-1', receiptHandle: 'r', body, attributes: {} }) as SQSRecord;
    expect(await fanOutBulkBatch(w.container(), [message(JSON.stringify(share))])).toEqual({ batchItemFailures: [{ itemIdentifier: 'm-1' }] });
    expect(error).toHaveBeenCalledWith('bulk share not recorded', expect.objectContaining({ messageId: 'm-1', organizationId: IMPORTER, endpointIds: 'ep_imp' }));
    await fanOutBulkBatch(w.container(), [message('{"not":"a share"}')]);
    expect(error).toHaveBeenLastCalledWith('bulk share not recorded', expect.objectContaining({ messageId: 'm-1' }));
  });
});
