/**
 * The due-index sweeper works in chunks, oldest due first (functions/core/delivery/sweep.ts): a
 * sweep that dies part-way has already re-queued and cleared its earlier chunks, so a failure late
 * in a large sweep (a bad read, or memory on a sweep of many large payloads) does not send the same
 * head again every period without progress. Nothing is lost either way: the rest goes out on the
 * next sweep, with its webhook-id.
 */
import { describe, it, expect } from '@jest/globals';
import { BatchGetCommand, QueryCommand } from '@aws-sdk/lib-dynamodb';
import { eventually, newTenant, testStack } from '../support/stack.js';
import { receiverForFile } from '../support/receiver.js';
import { addEndpoint, getEndpoint } from '../../../functions/core/delivery/endpoints.js';
import { deferDelivery, recordDelivery } from '../../../functions/core/delivery/queue.js';
import { dueKeys } from '../../../functions/core/delivery/store.js';
import { sweepDueDeliveries } from '../../../functions/core/delivery/sweep.js';
import { keys, type DeliveryMessage, type EventPayload } from '../../../functions/core/platform/model.js';
import type { Deps } from '../../../functions/core/platform/deps.js';

const receiver = receiverForFile();

async function dueEntry(deliveryId: string): Promise<Record<string, unknown> | undefined> {
  const { deps } = await testStack();
  const { Items = [] } = await deps.doc.send(new QueryCommand({
    TableName: deps.tables.deliveries, IndexName: 'due', KeyConditionExpression: 'duePk = :s', ExpressionAttributeValues: { ':s': dueKeys(deliveryId, 0).duePk },
  }));
  return Items.find((i) => String(i.sk).endsWith(deliveryId));
}

/**
 * Deps on a clock `aheadMs` later, whose due-index queries see only `ours` (other tests' parked
 * entries are left alone), and whose reads of `doomed`'s record fail as a dying sweep's would.
 */
function sweeperDeps(deps: Deps, aheadMs: number, ours: DeliveryMessage[], doomed?: DeliveryMessage): Deps {
  const ourKeys = new Set(ours.map((m) => keys.delivery(m.organizationId, m.deliveryId).sk));
  const doomedSk = doomed && keys.delivery(doomed.organizationId, doomed.deliveryId).sk;
  const send = async (command: unknown) => {
    if (command instanceof QueryCommand && command.input.IndexName === 'due') {
      const out = await deps.doc.send(command);
      return { ...out, Items: (out.Items ?? []).filter((i) => ourKeys.has(String(i.sk))) };
    }
    if (doomedSk && command instanceof BatchGetCommand && Object.values(command.input.RequestItems ?? {}).some((r) => r.Keys?.some((k) => k.sk === doomedSk))) {
      throw new Error('sweeper killed');
    }
    return deps.doc.send(command as never);
  };
  return { ...deps, now: () => deps.now() + aheadMs, doc: { send } as unknown as Deps['doc'] };
}

describe('the due-index sweeper', () => {
  it('keeps what its earlier chunks re-queued when it dies part-way; the next sweep sends the rest, same webhook-ids', async () => {
    const { deps } = await testStack();
    const tenant = await newTenant({ name: 'Sweep chunks' });
    const { endpoint, secret } = await addEndpoint(deps, tenant.organizationId, { url: `${receiver.url}/sweep-chunks`, events: 'all' });
    receiver.script('/sweep-chunks', secret, { status: 204 });
    const stored = (await getEndpoint(deps, tenant.organizationId, endpoint.id))!;
    const messages: DeliveryMessage[] = [];
    for (const n of [0, 1]) {
      const event = { id: `evt_chunk_${n}_${Date.now()}`, type: 'client.updated', organization_id: tenant.organizationId, timestamp: new Date().toISOString(), data: { object: { id: `cli_${n}` } } } as unknown as EventPayload;
      const message = (await recordDelivery(deps, event, stored))!;
      // Parked 10 minutes out, the second one a little later (the stack's own sweeper leaves both).
      expect(await deferDelivery(deps, message, deps.now() + 600_000 + n * 5_000, { reason: 'test: parked' })).toBe('parked');
      messages.push(message);
    }
    const [first, second] = messages;
    await eventually(async () => Boolean((await dueEntry(first.deliveryId)) && (await dueEntry(second.deliveryId))), { what: 'both in the due index' });

    // 11 minutes later a sweep (one entry per chunk) dies reading the second: the first is out and cleared.
    await expect(sweepDueDeliveries(sweeperDeps(deps, 660_000, messages, second), { chunkItems: 1 })).rejects.toThrow('sweeper killed');
    await eventually(async () => receiver.on('/sweep-chunks').length >= 1, { what: 'the first delivery' });
    await eventually(async () => !(await dueEntry(first.deliveryId)), { what: 'the first entry cleared' });
    expect(await dueEntry(second.deliveryId)).toBeDefined();
    expect(receiver.on('/sweep-chunks').map((r) => r.headers['webhook-id'])).toEqual([first.payload.id]);

    // The next sweep sends the second.
    expect((await sweepDueDeliveries(sweeperDeps(deps, 660_000, messages), { chunkItems: 1 })).requeued).toBe(1);
    await eventually(async () => receiver.on('/sweep-chunks').length >= 2, { what: 'the second delivery' });
    const received = receiver.on('/sweep-chunks');
    expect(received.every((r) => !r.verifyError)).toBe(true);
    expect(received.map((r) => r.headers['webhook-id']).sort()).toEqual([first.payload.id, second.payload.id].sort());
  });
});
