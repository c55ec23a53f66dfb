/**
 * End to end on the local stack: a change in a table becomes a signed POST to a real receiver on
 * loopback, verified with `standardwebhooks`; failures are retried on the (compressed) schedule,
 * exhausted deliveries reach the dead-letter queue and `crm deliveries redrive` delivers them with
 * the same webhook-id. The schedule itself (a 500 retried after its wait, Retry-After, a 12 h wait
 * in the due index) runs on the in-memory delivery core: delivery-core/scheduling.test.ts.
 */
import { describe, it, expect, afterEach } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import { rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { CreateQueueCommand, DeleteMessageBatchCommand, DeleteQueueCommand, GetQueueAttributesCommand, ReceiveMessageCommand, type Message, type SQSClient } from '@aws-sdk/client-sqs';
import { eventually, newTenant, postLead, runCli, testStack, type Tenant } from '../support/stack.js';
import { Receiver, receiverForFile } from '../support/receiver.js';
import { addEndpoint, getEndpoint, rotateSecret, updateEndpoint } from '../../../functions/core/delivery/endpoints.js';
import { containerMemory } from '../../../functions/core/delivery/container-memory.js';
import { listDeliveries, redeliverDeadLetters, redeliverDelivery } from '../../../functions/core/delivery/redeliver.js';
import { attemptDelivery, deliverBatch, staysQueued } from '../../../functions/core/delivery/deliver.js';
import { MAX_MESSAGE_BYTES, deferDelivery, recordDelivery, sendDeliveryMessages } from '../../../functions/core/delivery/queue.js';
import { dueKeys } from '../../../functions/core/delivery/store.js';
import { sweepDueDeliveries } from '../../../functions/core/delivery/sweep.js';
import { keys, type DeliveryMessage, type EventPayload } from '../../../functions/core/platform/model.js';
import type { Deps } from '../../../functions/core/platform/deps.js';
import { BatchGetCommand, GetCommand, QueryCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';

const receiver = receiverForFile();

interface Attempt { attempt: number; statusCode?: number; error?: string; responseBody?: string; at: string }
type Delivery = { id: string; status: string; eventType: string; attempts: Attempt[]; reason?: string; nextAttemptAt?: string; payload: { id: string } };

async function tenantWithEndpoint(path: string, events = 'all', ...script: Parameters<Receiver['script']>[2][]) {
  const { deps } = await testStack();
  const tenant = await newTenant({ name: `Hooks ${path}` });
  const probe = await addEndpoint(deps, tenant.organizationId, { url: 'http://127.0.0.1:9/placeholder', events });
  const url = receiver.script(path, probe.secret, ...script);
  await updateEndpoint(deps, tenant.organizationId, probe.endpoint.id, { url });
  return { tenant, endpointId: probe.endpoint.id, secret: probe.secret };
}

async function deliveriesOf(tenant: Tenant): Promise<Delivery[]> {
  const { deps } = await testStack();
  return (await listDeliveries(deps, tenant.organizationId)) as unknown as Delivery[];
}

/** The delivery ids of the messages now in the dead-letter queue (peeked: visible again at once). */
async function deadLetterIds(deps?: Deps): Promise<Set<string>> {
  deps ??= (await testStack()).deps;
  const ids = new Set<string>();
  for (let empty = 0; empty < 2;) {
    const { Messages = [] } = await deps.sqs.send(new ReceiveMessageCommand({ QueueUrl: deps.queues.deliveryDlq, MaxNumberOfMessages: 10, VisibilityTimeout: 0 }));
    const before = ids.size;
    for (const m of Messages) ids.add((JSON.parse(m.Body!) as { deliveryId: string }).deliveryId);
    empty = ids.size === before ? empty + 1 : 0;
  }
  return ids;
}

/** The delivery's entry in the due index (keys-only), if parked. */
async function dueEntry(deliveryId: string): Promise<Record<string, unknown> | undefined> {
  const { deps } = await testStack();
  const { Items = [] } = await deps.doc.send(new QueryCommand({
    TableName: deps.tables.deliveries, IndexName: 'due', KeyConditionExpression: 'duePk = :s', ExpressionAttributeValues: { ':s': dueKeys(deliveryId, 0).duePk },
  }));
  return Items.find((i) => String(i.sk).endsWith(deliveryId));
}

/** `count` deliveries of the tenant's endpoint recorded and put straight into the dead-letter queue, as if exhausted. */
async function deadLettered(deps: Deps, tenant: Tenant, endpointId: string, count: number): Promise<string[]> {
  const endpoint = (await getEndpoint(deps, tenant.organizationId, endpointId))!;
  const messages = [];
  for (let i = 0; i < count; i++) {
    const event = { id: `evt_dl_${Date.now()}_${i}`, type: 'client.updated', organization_id: tenant.organizationId, timestamp: new Date().toISOString(), data: { object: { id: `cli_${i}` } } } as unknown as EventPayload;
    messages.push((await recordDelivery(deps, event, endpoint))!);
  }
  await sendDeliveryMessages({ ...deps, queues: { ...deps.queues, deliveryQueue: deps.queues.deliveryDlq } }, messages);
  return messages.map((m) => m.deliveryId);
}

/**
 * A dead-letter queue of the test's own, for tests that count or order what a pass meets: the
 * stack's is shared with the suites running beside this one, whose own passes hold its messages
 * for a while. Deps and a `crm` that use it; deleted after the test.
 */
const privateQueues: (() => Promise<void>)[] = [];
afterEach(async () => {
  await Promise.all(privateQueues.splice(0).map((drop) => drop()));
});
async function privateDeadLetters(): Promise<{ deps: Deps; cli: typeof runCli }> {
  const { deps, info, stackFile } = await testStack();
  const name = `test-dlq-${randomUUID()}`;
  const { QueueUrl } = await deps.sqs.send(new CreateQueueCommand({ QueueName: name }));
  const file = path.join(path.dirname(stackFile), `${name}.json`);
  writeFileSync(file, JSON.stringify({ ...info, queues: { ...info.queues, deliveryDlq: QueueUrl } }));
  privateQueues.push(async () => {
    await deps.sqs.send(new DeleteQueueCommand({ QueueUrl }));
    rmSync(file, { force: true });
  });
  return { deps: { ...deps, queues: { ...deps.queues, deliveryDlq: QueueUrl! } }, cli: (args, options) => runCli(args, { ...options, stackFile: file }) };
}

/**
 * The SQS client of a slow dead-letter pass: every receive happens `stepSeconds` later on a virtual
 * clock, and a message whose visibility has run out on that clock is handed out again first, as SQS
 * may (its order is arbitrary). Everything else reaches the local SQS.
 */
function slowPassSqs(real: SQSClient, stepSeconds: number): SQSClient {
  let now = 0;
  const held = new Map<string, { message: Message; until: number }>();
  const send = async (command: unknown) => {
    if (command instanceof ReceiveMessageCommand) {
      now += stepSeconds;
      const due = [...held.values()].filter((h) => h.until <= now).slice(0, command.input.MaxNumberOfMessages ?? 1).map((h) => h.message);
      const out = due.length > 0 ? { Messages: due } : await real.send(command);
      for (const m of out.Messages ?? []) held.set(m.MessageId!, { message: m, until: now + (command.input.VisibilityTimeout ?? 30) });
      return out;
    }
    if (command instanceof DeleteMessageBatchCommand) {
      const gone = new Set(command.input.Entries!.map((e) => e.ReceiptHandle));
      for (const [id, h] of held) if (gone.has(h.message.ReceiptHandle)) held.delete(id);
    }
    return real.send(command as never);
  };
  return { send } as unknown as SQSClient;
}

async function settled(tenant: Tenant, what: string, predicate: (d: Delivery[]) => boolean, timeoutMs = 20_000): Promise<Delivery[]> {
  return eventually(async () => {
    const list = await deliveriesOf(tenant);
    return predicate(list) ? list : undefined;
  }, { what, timeoutMs, intervalMs: 200 });
}

describe('webhook delivery', () => {
  it('turns a lead POST into a verified client.created delivery', async () => {
    const { tenant } = await tenantWithEndpoint('/lead');
    const res = await postLead(tenant.key, { name: 'Hedy Lamarr', email: 'hedy@example.com' });
    const client = (await res.json()) as { id: string };
    const [delivery] = await settled(tenant, 'the delivery', (d) => d[0]?.status === 'delivered');
    const [got] = receiver.on('/lead');
    expect(got.verifyError).toBeUndefined();
    expect(got.event).toMatchObject({ type: 'client.created', organization_id: tenant.organizationId, data: { object: { id: client.id, first_name: 'Hedy', email: 'hedy@example.com' } } });
    expect(got.headers['webhook-id']).toBe(got.event!.id);
    expect(got.headers['user-agent']).toMatch(/^crm-webhooks\//);
    expect(delivery.attempts).toEqual([expect.objectContaining({ attempt: 1, statusCode: 204 })]);
  });

  it('does not follow redirects: a 3xx is a failed attempt', async () => {
    const target = receiver.script('/redirect-target', 'whsec_unused');
    const { tenant } = await tenantWithEndpoint('/redirect', 'all', { status: 302, headers: { Location: target } }, { status: 204 });
    await postLead(tenant.key, { name: 'No Follow' });
    const [delivery] = await settled(tenant, 'delivery after a redirect', (d) => d[0]?.status === 'delivered');
    expect(delivery.attempts[0]).toMatchObject({ statusCode: 302, error: expect.stringContaining('not followed') });
    // The 302 did not count as delivered: it was retried, and only the 204 delivered it.
    expect(delivery.attempts.map((a) => [a.attempt, a.statusCode])).toEqual([[1, 302], [2, 204]]);
    expect(receiver.on('/redirect')).toHaveLength(2);
    expect(receiver.on('/redirect-target')).toHaveLength(0);
  });

  it('gives up on an attempt that hangs past the time-out and retries it', async () => {
    const { tenant } = await tenantWithEndpoint('/hang', 'all', 'hang', { status: 204 });
    await postLead(tenant.key, { name: 'Hang On' });
    const [delivery] = await settled(tenant, 'delivery after a time-out', (d) => d[0]?.status === 'delivered');
    expect(delivery.attempts[0]).toMatchObject({ attempt: 1, error: expect.stringContaining('ETIMEDOUT') });
    expect(delivery.attempts[0].statusCode).toBeUndefined();
  });

  it('disables the endpoint on 410 Gone and stops trying', async () => {
    const { deps } = await testStack();
    const { tenant, endpointId } = await tenantWithEndpoint('/gone', 'all', { status: 410 });
    await postLead(tenant.key, { name: 'Gone Away' });
    const [delivery] = await settled(tenant, 'the 410', (d) => d[0]?.status === 'failed');
    expect(delivery.attempts).toHaveLength(1);
    expect(await getEndpoint(deps, tenant.organizationId, endpointId)).toMatchObject({ enabled: false, disabledReason: expect.stringContaining('410') });
    // Later events are recorded as skipped, for replay.
    await postLead(tenant.key, { name: 'After Gone' });
    await settled(tenant, 'a skipped delivery', (d) => d.some((x) => x.status === 'skipped'));
    expect(receiver.on('/gone')).toHaveLength(1);
  });

  it('never sends organization A’s events to organization B’s endpoint', async () => {
    const a = await tenantWithEndpoint('/org-a');
    const b = await tenantWithEndpoint('/org-b');
    await postLead(a.tenant.key, { name: 'Only For A' });
    await settled(a.tenant, 'A’s delivery', (d) => d[0]?.status === 'delivered');
    expect(receiver.on('/org-a')).toHaveLength(1);
    expect(receiver.on('/org-b')).toHaveLength(0);
    expect(await deliveriesOf(b.tenant)).toEqual([]);
  });

  it('after five failures parks the delivery in the dead-letter queue; redrive --all --org moves only that organization’s, with the same webhook-id', async () => {
    const { deps } = await testStack();
    // Two organizations with a dead-letter message each: a filter that moved everything would show.
    const a = await tenantWithEndpoint('/down', 'all', { status: 503 });
    const b = await tenantWithEndpoint('/down-b', 'all', { status: 503 });
    await Promise.all([postLead(a.tenant.key, { name: 'Eventually Delivered' }), postLead(b.tenant.key, { name: 'Left In The Queue' })]);
    const [[failed], [failedB]] = await Promise.all([
      settled(a.tenant, 'five failed attempts', (d) => d[0]?.status === 'failed', 30_000),
      settled(b.tenant, 'five failed attempts of B', (d) => d[0]?.status === 'failed', 30_000),
    ]);
    expect(failed.attempts.map((x) => x.attempt)).toEqual([1, 2, 3, 4, 5]);
    expect(failed.reason).toMatch(/5 attempts/);
    await eventually(async () => {
      const ids = await deadLetterIds();
      return ids.has(failed.id) && ids.has(failedB.id);
    }, { what: 'both messages in the dead-letter queue', timeoutMs: 15_000 });

    receiver.script('/down', (await getEndpoint(deps, a.tenant.organizationId, a.endpointId))!.secrets[0].secret, { status: 200 });
    const redrive = await runCli(['deliveries', 'redeliver', '--all', '--org', a.tenant.organizationId]);
    expect(redrive.code).toBe(0);
    expect(redrive.json<{ moved: number }>().moved).toBe(1);
    const [delivered] = await settled(a.tenant, 'the redelivered delivery', (d) => d[0]?.status === 'delivered');
    expect(delivered.attempts.at(-1)).toMatchObject({ attempt: 1, statusCode: 200 }); // a fresh attempt count
    const requests = receiver.on('/down');
    expect(new Set(requests.map((r) => r.headers['webhook-id']))).toEqual(new Set([failed.payload.id]));
    expect(requests.at(-1)!.verifyError).toBeUndefined();

    // B's message stayed in the dead-letter queue, untouched and unsent.
    const left = await deadLetterIds();
    expect(left.has(failedB.id)).toBe(true);
    expect(left.has(failed.id)).toBe(false);
    expect((await deliveriesOf(b.tenant))[0]).toMatchObject({ status: 'failed' });
    expect(receiver.on('/down-b')).toHaveLength(5);

    // Redelivering B's failed deliveries (not the queue) removes their dead-letter copy too, so a
    // later --all cannot send them a second time and the dead-letter alarm clears.
    receiver.script('/down-b', b.secret, { status: 204 });
    const byOrg = await runCli(['deliveries', 'redeliver', '--org', b.tenant.organizationId]);
    expect(byOrg.json()).toEqual({ redriven: 1 });
    await settled(b.tenant, 'B’s redelivered delivery', (d) => d[0]?.status === 'delivered');
    expect((await deadLetterIds()).has(failedB.id)).toBe(false);
    expect(receiver.on('/down-b')).toHaveLength(6);
  }, 60_000);

  it('a sweep that dies before or after re-queuing loses nothing: delivered once due, one webhook-id, no attempt consumed by the wait', async () => {
    const { deps } = await testStack();
    const { tenant, endpointId } = await tenantWithEndpoint('/sweep-crash', 'all', { status: 204 });
    const endpoint = (await getEndpoint(deps, tenant.organizationId, endpointId))!;
    const event = { id: `evt_sweep_${Date.now()}`, type: 'client.updated', organization_id: tenant.organizationId, timestamp: new Date().toISOString(), data: { object: { id: 'cli_s' } } } as unknown as EventPayload;
    const message = (await recordDelivery(deps, event, endpoint))!;
    // Parked for 10 minutes without an attempt (as the circuit breaker does): the stack's own sweeper leaves it.
    expect(await deferDelivery(deps, message, Date.now() + 600_000, { reason: 'test: parked' })).toBe('parked');
    expect((await deliveriesOf(tenant))[0]).toMatchObject({ status: 'pending', deferredReason: 'test: parked', attempts: [] });
    const later = { ...deps, now: () => Date.now() + 600_000 };
    // 10 minutes later, a sweep dies sending: the entry stays, nothing was sent.
    const noQueue = { ...later, sqs: { send: () => Promise.reject(new Error('sweeper killed')) } } as unknown as Deps;
    await expect(sweepDueDeliveries(noQueue)).rejects.toThrow('sweeper killed');
    expect(await dueEntry(message.deliveryId)).toBeDefined();
    expect(receiver.on('/sweep-crash')).toHaveLength(0);
    // A sweep dies after sending, before clearing the entry: the delivery goes out, and its own record
    // update takes it out of the index; a later sweep finds nothing left to send again.
    const noClear = { ...later, doc: { send: (c: unknown) => (c instanceof UpdateCommand && /REMOVE duePk/.test(c.input.UpdateExpression ?? '') ? Promise.reject(new Error('sweeper killed')) : deps.doc.send(c as never)) } } as unknown as Deps;
    await expect(sweepDueDeliveries(noClear)).rejects.toThrow('sweeper killed');
    const [delivered] = await settled(tenant, 'the delivery', (d) => d[0]?.status === 'delivered');
    expect(delivered.attempts.map((x) => [x.attempt, x.statusCode])).toEqual([[1, 204]]); // the parked wait consumed no attempt
    expect(await dueEntry(message.deliveryId)).toBeUndefined();
    await sweepDueDeliveries(later);
    await new Promise((r) => setTimeout(r, 1000));
    expect(new Set(receiver.on('/sweep-crash').map((r) => r.headers['webhook-id']))).toEqual(new Set([event.id]));
  });

  it('never sends a delivery whose event was too large to keep, redelivered or not', async () => {
    const { deps } = await testStack();
    const { tenant, endpointId } = await tenantWithEndpoint('/too-big');
    const endpoint = (await getEndpoint(deps, tenant.organizationId, endpointId))!;
    const event = {
      id: `evt_big_${Date.now()}`, type: 'client.updated', organization_id: tenant.organizationId, timestamp: new Date().toISOString(),
      data: { object: { id: 'cli_big', notes: 'x'.repeat(MAX_MESSAGE_BYTES) } },
    } as unknown as EventPayload;
    // Recorded by the fan-out's own code: failed, with only the event's envelope kept.
    expect(await recordDelivery(deps, event, endpoint)).toBeUndefined();
    const [hollow] = await deliveriesOf(tenant);
    expect(hollow).toMatchObject({ status: 'failed', reason: expect.stringContaining('queue budget'), payloadOmitted: true });

    const one = await runCli(['deliveries', 'redeliver', '--delivery', hollow.id], { json: false });
    expect(one.code).not.toBe(0);
    expect(one.stderr).toMatch(/too large/);
    const byOrg = await runCli(['deliveries', 'redeliver', '--org', tenant.organizationId]);
    expect(byOrg.json()).toEqual({ redriven: 0, notRedriven: 1 });
    // Even a message that reaches the queue another way is refused by the delivery function.
    await sendDeliveryMessages(deps, [{ deliveryId: hollow.id, organizationId: tenant.organizationId, endpointId, payload: (hollow as unknown as { payload: EventPayload }).payload }]);
    await settled(tenant, 'the refusal recorded', (d) => /never sent/.test(d[0]?.reason ?? ''));
    expect((await deliveriesOf(tenant))[0]).toMatchObject({ status: 'failed', attempts: [] });
    expect(receiver.on('/too-big')).toHaveLength(0);
  });

  it('outside the local stack never sends to an http:// URL already in the table', async () => {
    const { deps } = await testStack();
    const { tenant, endpointId } = await tenantWithEndpoint('/cleartext');
    const endpoint = (await getEndpoint(deps, tenant.organizationId, endpointId))!;
    const event = { id: `evt_clear_${Date.now()}`, type: 'client.updated', organization_id: tenant.organizationId, timestamp: new Date().toISOString(), data: { object: { id: 'cli_x' } } } as unknown as EventPayload;
    const message = (await recordDelivery(deps, event, endpoint))!; // recorded, not queued: attempted by hand below
    // A deployed stage whose allow-list admits the receiver: only the scheme stands in the way.
    const deployed = { ...deps, config: { ...deps.config, local: false, ssrfAllowList: ['127.0.0.0/8'] } };
    const outcome = await attemptDelivery(deployed, message);
    expect(outcome).toMatchObject({ kind: 'failed', reason: expect.stringContaining('not https') });
    expect(receiver.on('/cleartext')).toHaveLength(0);
    expect((await deliveriesOf(tenant))[0]).toMatchObject({ status: 'failed', reason: expect.stringContaining('not https'), attempts: [] });
  });

  it('an endpoint left with no active signing secret fails the delivery with the reason (nothing sent), and it is redelivered once a secret is rotated in', async () => {
    const { deps } = await testStack();
    const { tenant, endpointId } = await tenantWithEndpoint('/no-secret');
    const endpoint = (await getEndpoint(deps, tenant.organizationId, endpointId))!;
    // An item edited by hand: every secret expired.
    const expired = endpoint.secrets.map((x) => ({ ...x, expiresAt: new Date(Date.now() - 60_000).toISOString() }));
    await deps.doc.send(new UpdateCommand({ TableName: deps.tables.endpoints, Key: keys.endpoint(tenant.organizationId, endpointId), UpdateExpression: 'SET secrets = :s', ExpressionAttributeValues: { ':s': expired } }));
    containerMemory(deps).endpoints.delete(tenant.organizationId); // written around the store: drop the cached copy
    const event = { id: `evt_nosecret_${Date.now()}`, type: 'client.updated', organization_id: tenant.organizationId, timestamp: new Date().toISOString(), data: { object: { id: 'cli_x' } } } as unknown as EventPayload;
    const message = (await recordDelivery(deps, event, endpoint))!;
    expect(await deliverBatch(deps, [{ messageId: 'm1', receiptHandle: 'r1', body: JSON.stringify(message), receiveCount: 1 }]))
      .toEqual([expect.objectContaining({ kind: 'failed', reason: expect.stringContaining('no active signing secret') })]);
    expect((await deliveriesOf(tenant))[0]).toMatchObject({ status: 'failed', reason: expect.stringContaining('rotate'), attempts: [] });
    expect(receiver.on('/no-secret')).toHaveLength(0);

    const { secret } = await rotateSecret(deps, tenant.organizationId, endpointId);
    receiver.script('/no-secret', secret!, { status: 204 });
    // The verb operators typed before `redeliver` (docs/architecture.md#glossary) still works: an alias.
    expect((await runCli(['deliveries', 'redrive', '--delivery', message.deliveryId])).code).toBe(0);
    await settled(tenant, 'the redelivered delivery', (d) => d[0]?.status === 'delivered');
    expect(receiver.on('/no-secret').map((r) => [r.headers['webhook-id'], r.verifyError])).toEqual([[event.id, undefined]]);
  });

  it('attempts are counted from the record: throttled receives and a crash before the gate use none of the 5; the 5th recorded one exhausts', async () => {
    const { deps } = await testStack();
    const { tenant, endpointId } = await tenantWithEndpoint('/counted', 'all', { status: 500 }, { status: 500 }, { status: 500 }, { status: 500 }, { status: 500 });
    const endpoint = (await getEndpoint(deps, tenant.organizationId, endpointId))!;
    const event = { id: `evt_counted_${Date.now()}`, type: 'client.updated', organization_id: tenant.organizationId, timestamp: new Date().toISOString(), data: { object: { id: 'cli_x' } } } as unknown as EventPayload;
    const message = (await recordDelivery(deps, event, endpoint))!; // recorded, not queued: attempted by hand below
    // Retries are not re-queued here (the stack's own pollers would attempt them too): each receive is played below.
    const unqueued = { ...deps, sqs: { send: async () => ({}) } } as unknown as Deps;
    let lane: 'main' | 'slow' = 'main';
    const receive = (d: Deps, receiveCount: number) => {
      containerMemory(deps).endpoints.delete(tenant.organizationId); // written around the store: drop the cached copy
      return deliverBatch(d, [{ messageId: `m${receiveCount}`, receiptHandle: `r${receiveCount}`, body: JSON.stringify(message), receiveCount, lane }]);
    };
    const attempts = async () => (await deliveriesOf(tenant))[0].attempts.map((a) => [a.attempt, a.statusCode]);
    let receives = 5;
    let deferrals = 0;
    /** The next receive that reaches an attempt: the endpoint's circuit opens after failures and parks receives meanwhile. */
    const receiveAnAttempt = async () => {
      for (;;) {
        const [outcome] = await receive(unqueued, ++receives);
        if (outcome.kind !== 'deferred') return outcome;
        lane = outcome.lane; // moved to the slow lane, or parked in its own
        deferrals++;
        await new Promise((r) => setTimeout(r, 250));
      }
    };
    // Lambda throttled the batch three times (each raised the receive count), then ran it: attempt 1.
    expect(await receive(unqueued, 4)).toEqual([expect.objectContaining({ kind: 'retry', attempt: 1 })]);
    // The function crashes before the isolation gate (the endpoint read breaks): no attempt recorded.
    const breaking = { ...unqueued, doc: { send: (command: { constructor: { name: string } }) => (command.constructor.name === 'QueryCommand' ? Promise.reject(new Error('socket hang up')) : deps.doc.send(command as never)) } } as unknown as Deps;
    expect(await receive(breaking, 5)).toEqual([{ messageId: 'm5', kind: 'error' }]);
    expect(await attempts()).toEqual([[1, 500]]);
    // The next receives (past the old maxReceiveCount of 5, some parked by the open circuit) make attempts 2 to 5; the 5th exhausts.
    expect(await receiveAnAttempt()).toMatchObject({ kind: 'retry', attempt: 2 });
    expect(await receiveAnAttempt()).toMatchObject({ kind: 'retry', attempt: 3 });
    expect(await receiveAnAttempt()).toMatchObject({ kind: 'retry', attempt: 4 });
    expect(await receiveAnAttempt()).toMatchObject({ kind: 'exhausted', attempt: 5 });
    expect(deferrals).toBeGreaterThan(0); // the circuit did park some receives, and they used no attempt
    expect(await attempts()).toEqual([[1, 500], [2, 500], [3, 500], [4, 500], [5, 500]]);
    expect((await deliveriesOf(tenant))[0]).toMatchObject({ status: 'failed', reason: 'no success after 5 attempts' });
    expect(receiver.on('/counted')).toHaveLength(5);
  });

  it('a message whose receives keep breaking off is recorded failed on the last one the queue allows (then dead-lettered), not left pending', async () => {
    const { deps } = await testStack();
    const { tenant, endpointId } = await tenantWithEndpoint('/breaks-off');
    const endpoint = (await getEndpoint(deps, tenant.organizationId, endpointId))!;
    const event = { id: `evt_breaks_${Date.now()}`, type: 'client.updated', organization_id: tenant.organizationId, timestamp: new Date().toISOString(), data: { object: { id: 'cli_x' } } } as unknown as EventPayload;
    const message = (await recordDelivery(deps, event, endpoint))!;
    // The endpoint read breaks every time (anything unexpected would do): each receive ends in an error.
    const breaking = { ...deps, doc: { send: (command: { constructor: { name: string } }) => (command.constructor.name === 'QueryCommand' ? Promise.reject(new Error('socket hang up')) : deps.doc.send(command as never)) } } as unknown as Deps;
    const receive = (receiveCount: number) => {
      containerMemory(deps).endpoints.delete(tenant.organizationId); // written around the store: drop the cached copy
      return deliverBatch(breaking, [{ messageId: `m${receiveCount}`, receiptHandle: `r${receiveCount}`, body: JSON.stringify(message), receiveCount }]);
    };
    expect(await receive(9)).toEqual([{ messageId: 'm9', kind: 'error' }]);
    expect((await deliveriesOf(tenant))[0]).toMatchObject({ status: 'pending' }); // received again: not yet
    expect(await receive(10)).toEqual([{ messageId: 'm10', kind: 'error' }]); // the queue's maxReceiveCount (10): moved next
    expect((await deliveriesOf(tenant))[0]).toMatchObject({ status: 'failed', reason: expect.stringContaining('dead-letter queue'), attempts: [] });
    expect((await runCli(['deliveries', 'list', '--org', tenant.organizationId, '--status', 'failed'])).json<{ id: string }[]>().map((d) => d.id)).toEqual([message.deliveryId]);
    expect(receiver.on('/breaks-off')).toHaveLength(0);
  });

  it('a batch reads its records in one call: a duplicate of a delivered message is not sent again, even when that read fails', async () => {
    const { deps } = await testStack();
    const { tenant, endpointId } = await tenantWithEndpoint('/batch-guard');
    const endpoint = (await getEndpoint(deps, tenant.organizationId, endpointId))!;
    const event = (n: number) => ({ id: `evt_guard_${n}_${Date.now()}`, type: 'client.updated', organization_id: tenant.organizationId, timestamp: new Date().toISOString(), data: { object: { id: `cli_${n}` } } }) as unknown as EventPayload;
    const [first, second] = [(await recordDelivery(deps, event(1), endpoint))!, (await recordDelivery(deps, event(2), endpoint))!]; // recorded, not queued
    const queued = (message: DeliveryMessage, n: number) => ({ messageId: `m${n}`, receiptHandle: `r${n}`, body: JSON.stringify(message), receiveCount: 1 });

    expect(await deliverBatch(deps, [queued(first, 1)])).toEqual([expect.objectContaining({ kind: 'delivered' })]);
    const outcomes = await deliverBatch(deps, [queued(first, 2), queued(second, 3)]);
    expect(outcomes).toEqual([expect.objectContaining({ kind: 'delivered', reason: 'already delivered' }), expect.objectContaining({ kind: 'delivered', result: expect.anything() })]);

    // The batch read broken (throttled, say): each attempt reads its own record, with the same guard.
    const broken = { ...deps, doc: { send: (command: unknown) => (command instanceof BatchGetCommand ? Promise.reject(new Error('throttled')) : deps.doc.send(command as never)) } } as unknown as Deps;
    expect(await deliverBatch(broken, [queued(first, 4), queued(second, 5)])).toEqual([
      expect.objectContaining({ kind: 'delivered', reason: 'already delivered' }), expect.objectContaining({ kind: 'delivered', reason: 'already delivered' }),
    ]);
    expect(receiver.on('/batch-guard').map((r) => r.event?.id)).toEqual([first.payload.id, second.payload.id]);
  });

  it('a batch’s delivered outcomes are written in parallel, one UpdateItem each, conditional on the version read', async () => {
    const { deps } = await testStack();
    const { tenant, endpointId } = await tenantWithEndpoint('/batched-writes');
    const endpoint = (await getEndpoint(deps, tenant.organizationId, endpointId))!;
    const event = (n: number) => ({ id: `evt_bw_${n}_${Date.now()}`, type: 'client.updated', organization_id: tenant.organizationId, timestamp: new Date().toISOString(), data: { object: { id: `cli_${n}` } } }) as unknown as EventPayload;
    const [one, parked, alone] = [(await recordDelivery(deps, event(1), endpoint))!, (await recordDelivery(deps, event(2), endpoint))!, (await recordDelivery(deps, event(3), endpoint))!];
    // One of them waits in the due index after a failed attempt (due in an hour: the sweeper leaves it); delivered, it leaves the index.
    await deps.doc.send(new UpdateCommand({
      TableName: deps.tables.deliveries, Key: keys.delivery(tenant.organizationId, parked.deliveryId),
      UpdateExpression: 'SET attempts = :a, duePk = :p, dueAt = :d, dueRound = :n, nextAttemptAt = :at, deferredReason = :r',
      ExpressionAttributeValues: { ':a': [{ attempt: 1, statusCode: 503, at: new Date().toISOString(), latencyMs: 1 }], ':p': 'due#1', ':d': Date.now() + 3_600_000, ':n': parked.round, ':at': new Date(Date.now() + 3_600_000).toISOString(), ':r': 'circuit open' },
    }));
    for (const record of [one, parked, alone]) {
      await deps.doc.send(new UpdateCommand({ TableName: deps.tables.deliveries, Key: keys.delivery(tenant.organizationId, record.deliveryId), UpdateExpression: 'SET reason = :r, queuedAt = :q', ExpressionAttributeValues: { ':r': 'kept as it was', ':q': '2026-01-01T00:00:00.000Z' } }));
    }
    const sent: string[] = [];
    const watched = { ...deps, doc: { send: (command: { constructor: { name: string } }) => (sent.push(command.constructor.name), deps.doc.send(command as never)) } } as unknown as Deps;
    const queued = (message: DeliveryMessage, n: number) => ({ messageId: `m${n}`, receiptHandle: `r${n}`, body: JSON.stringify(message), receiveCount: 1 });

    // The same message twice in the batch (at-least-once): both sent, one record with both attempts.
    const outcomes = await deliverBatch(watched, [queued(one, 1), queued(parked, 2), queued(one, 3)]);
    expect(outcomes.map((o) => o.kind)).toEqual(['delivered', 'delivered', 'delivered']);
    // One per attempt made (the duplicate's second at the version the first left), no batch put.
    expect(sent.filter((name) => name === 'UpdateCommand')).toHaveLength(3);
    expect(sent.filter((name) => name === 'BatchWriteCommand')).toHaveLength(0);
    // The same delivery through attemptDelivery alone: one UpdateItem.
    expect(await attemptDelivery(deps, alone)).toMatchObject({ kind: 'delivered' });

    const stored = async (id: string) => (await deps.doc.send(new GetCommand({ TableName: deps.tables.deliveries, Key: keys.delivery(tenant.organizationId, id), ConsistentRead: true }))).Item!;
    const [a, b, c] = [await stored(one.deliveryId), await stored(parked.deliveryId), await stored(alone.deliveryId)];
    // Apart from what differs per delivery and per moment, the three records are the same item:
    // the UpdateItem's changes, the attributes it keeps (reason, queuedAt), none of the parked ones.
    const same = ({ pk: _pk, sk: _sk, gsi1pk: _g, id: _id, eventId: _e, createdAt: _c, updatedAt: _u, deliveredAt: _d, expiresAt: _x, attempts: _a, version: _v, ...rest }: Record<string, unknown>) => rest;
    expect(same(a)).toEqual(same(c));
    expect(same(b)).toEqual(same(c));
    expect(same(c)).toMatchObject({ status: 'delivered', reason: 'kept as it was', queuedAt: '2026-01-01T00:00:00.000Z' });
    expect(Object.keys(b).filter((k) => ['duePk', 'dueAt', 'dueRound', 'nextAttemptAt', 'deferredReason'].includes(k))).toEqual([]);
    for (const record of [a, b, c]) expect(record).toMatchObject({ status: 'delivered', deliveredAt: (record.attempts as { at: string }[]).at(-1)!.at });
    // No id-index entry: a record is found by id through its organization (find-delivery.ts).
    for (const record of [a, b, c]) expect(record).not.toHaveProperty('gsi1pk');
    expect([a.version, b.version, c.version]).toEqual([2, 1, 1]);
    expect((a.attempts as { statusCode: number }[]).map((x) => x.statusCode)).toEqual([204, 204]);
    expect((b.attempts as { attempt: number; statusCode: number }[]).map((x) => [x.attempt, x.statusCode])).toEqual([[1, 503], [2, 204]]);
    expect(receiver.on('/batched-writes').map((r) => r.headers['webhook-id']).sort()).toEqual([one.payload.id, one.payload.id, parked.payload.id, alone.payload.id].sort());
  });

  it('a guarded delivered write that fails falls back to the unguarded one; if the outcome cannot be written at all, the message stays queued and is sent again', async () => {
    const { deps } = await testStack();
    const { tenant, endpointId } = await tenantWithEndpoint('/unwritten');
    const endpoint = (await getEndpoint(deps, tenant.organizationId, endpointId))!;
    const event = (n: number) => ({ id: `evt_uw_${n}_${Date.now()}`, type: 'client.updated', organization_id: tenant.organizationId, timestamp: new Date().toISOString(), data: { object: { id: `cli_${n}` } } }) as unknown as EventPayload;
    const [first, second] = [(await recordDelivery(deps, event(1), endpoint))!, (await recordDelivery(deps, event(2), endpoint))!];
    const queued = (message: DeliveryMessage, n: number) => ({ messageId: `m${n}`, receiptHandle: `r${n}`, body: JSON.stringify(message), receiveCount: n });
    /** The first `times` UpdateItems on the deliveries table fail (throttled); `lost`: they land, their answer is lost. */
    const failing = (times: number, lost = false) => ({ ...deps, doc: { send: async (command: UpdateCommand) => {
      const hit = command instanceof UpdateCommand && command.input.TableName === deps.tables.deliveries && times-- > 0;
      if (!hit) return deps.doc.send(command);
      if (lost) await deps.doc.send(command);
      throw new Error(lost ? 'socket hang up' : 'throttled');
    } } }) as unknown as Deps;

    expect(await deliverBatch(failing(1), [queued(first, 1)])).toEqual([expect.objectContaining({ kind: 'delivered' })]);
    expect((await deliveriesOf(tenant)).find((d) => d.id === first.deliveryId)).toMatchObject({ status: 'delivered', attempts: [expect.objectContaining({ statusCode: 204 })] });

    // Sent, but neither write works: reported as an error, so the queue hands the message out again.
    const outcomes = await deliverBatch(failing(2), [queued(second, 1)]);
    expect(outcomes).toEqual([{ messageId: 'm1', kind: 'error' }]);
    expect(outcomes.filter(staysQueued)).toHaveLength(1);
    expect((await deliveriesOf(tenant)).find((d) => d.id === second.deliveryId)).toMatchObject({ status: 'pending', attempts: [] });
    expect(await deliverBatch(deps, [queued(second, 2)])).toEqual([expect.objectContaining({ kind: 'delivered' })]);
    // Attempts are counted from the record: the first POST, whose outcome was never written, counts for nothing.
    expect((await deliveriesOf(tenant)).find((d) => d.id === second.deliveryId)).toMatchObject({ status: 'delivered', attempts: [expect.objectContaining({ attempt: 1, statusCode: 204 })] });
    expect(receiver.on('/unwritten').map((r) => r.headers['webhook-id'])).toEqual([first.payload.id, second.payload.id, second.payload.id]);

    // The guarded write lands but its answer is lost: the fallback finds it written and logs no attempt twice.
    const third = (await recordDelivery(deps, event(3), endpoint))!;
    expect(await deliverBatch(failing(1, true), [queued(third, 1)])).toEqual([expect.objectContaining({ kind: 'delivered' })]);
    expect((await deliveriesOf(tenant)).find((d) => d.id === third.deliveryId)).toMatchObject({ status: 'delivered', attempts: [expect.objectContaining({ attempt: 1, statusCode: 204 })] });
  });

  it('records a refused connection as a failed attempt and retries it', async () => {
    const { deps } = await testStack();
    const { tenant, endpointId } = await tenantWithEndpoint('/refused');
    const closed = await new Receiver().start();
    const deadUrl = closed.url + '/nobody-home';
    await closed.stop(); // nothing listens on that port any more
    await updateEndpoint(deps, tenant.organizationId, endpointId, { url: deadUrl });
    await postLead(tenant.key, { name: 'Nobody Home' });
    const [delivery] = await settled(tenant, 'two refused attempts', (d) => (d[0]?.attempts.length ?? 0) >= 2);
    expect(delivery.attempts.slice(0, 2)).toEqual([
      expect.objectContaining({ attempt: 1, error: expect.stringContaining('ECONNREFUSED') }),
      expect.objectContaining({ attempt: 2, error: expect.stringContaining('ECONNREFUSED') }),
    ]);
    await updateEndpoint(deps, tenant.organizationId, endpointId, { enabled: false }); // stop the retries
  });

  it('lists deliveries by status and redelivers one by id, or an organization’s failed ones', async () => {
    const { deps } = await testStack();
    const { tenant, endpointId, secret } = await tenantWithEndpoint('/redrive-some', 'all', { status: 410 });
    await postLead(tenant.key, { name: 'First' });
    const [gone] = await settled(tenant, 'the 410', (d) => d[0]?.status === 'failed');
    const listed = await runCli(['deliveries', 'list', '--org', tenant.organizationId, '--status', 'failed']);
    expect(listed.json<{ id: string }[]>().map((d) => d.id)).toEqual([gone.id]);
    expect((await runCli(['deliveries', 'list', '--org', tenant.organizationId, '--status', 'delivered'])).json()).toEqual([]);

    receiver.script('/redrive-some', secret, { status: 204 });
    await updateEndpoint(deps, tenant.organizationId, endpointId, { enabled: true }); // the 410 disabled it
    const one = await runCli(['deliveries', 'redeliver', '--delivery', gone.id]);
    expect(one.code).toBe(0);
    await settled(tenant, 'the redelivered delivery', (d) => d[0]?.status === 'delivered');
    expect(new Set(receiver.on('/redrive-some').map((r) => r.headers['webhook-id']))).toEqual(new Set([gone.payload.id]));
    expect(receiver.on('/redrive-some').at(-1)!.verifyError).toBeUndefined();

    const none = await runCli(['deliveries', 'redeliver', '--org', tenant.organizationId]);
    expect(none.json()).toEqual({ redriven: 0 });
    const bad = await runCli(['deliveries', 'redeliver'], { json: false });
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toMatch(/--delivery/);
  });

  it('a selective dead-letter pass slower than SQS visibility still reaches every message, and leaves the other organization’s', async () => {
    const dlq = await privateDeadLetters();
    const a = await tenantWithEndpoint('/sweep-a', 'all', { status: 204 });
    const b = await tenantWithEndpoint('/sweep-b', 'all', { status: 204 });
    const others = await deadLettered(dlq.deps, b.tenant, b.endpointId, 40); // first in the queue
    const ours = await deadLettered(dlq.deps, a.tenant, a.endpointId, 2);
    // 30 s pass between receives: a pass that hid skipped messages for a minute meets them again.
    const result = await redeliverDeadLetters({ ...dlq.deps, sqs: slowPassSqs(dlq.deps.sqs, 30) }, { organizationId: a.tenant.organizationId });
    expect(result).toMatchObject({ moved: 2, complete: true });
    await settled(a.tenant, 'both redelivered deliveries', (d) => d.filter((x) => x.status === 'delivered').length === 2);
    const left = await deadLetterIds(dlq.deps);
    expect(others.every((id) => left.has(id))).toBe(true); // released at the end of the pass
    expect(ours.some((id) => left.has(id))).toBe(false);
    expect(receiver.on('/sweep-b')).toHaveLength(0);
  }, 60_000);

  it('a capped dead-letter pass says how far it got, and running it again continues with the rest', async () => {
    const dlq = await privateDeadLetters();
    const a = await tenantWithEndpoint('/capped-a', 'all', { status: 204 });
    const b = await tenantWithEndpoint('/capped-b', 'all', { status: 204 });
    const others = await deadLettered(dlq.deps, b.tenant, b.endpointId, 12);
    const ours = await deadLettered(dlq.deps, a.tenant, a.endpointId, 2);
    const first = await dlq.cli(['deliveries', 'redeliver', '--all', '--org', a.tenant.organizationId, '--max', '10']);
    expect(first.json()).toMatchObject({ moved: 0, seen: 10, total: 14, complete: false });
    const human = await dlq.cli(['deliveries', 'redeliver', '--all', '--org', a.tenant.organizationId, '--max', '1'], { json: false });
    expect(human.stdout).toMatch(/Looked at 1 of ~14 dead-letter message\(s\).*running the same command again continues/s);
    // The dead-letter queue is fair too (its messages carry their organization): with b's ten held
    // by the first pass, the second may already take one of a's (b holds all the processing time).
    const rest = await dlq.cli(['deliveries', 'redeliver', '--all', '--org', a.tenant.organizationId]);
    expect(rest.json()).toMatchObject({ complete: true });
    expect(rest.json<{ moved: number }>().moved).toBeGreaterThanOrEqual(1);
    await settled(a.tenant, 'both redelivered deliveries', (d) => d.filter((x) => x.status === 'delivered').length === 2);
    expect(new Set(receiver.on('/capped-a').map((r) => r.headers['webhook-id']))).toEqual(new Set((await deliveriesOf(a.tenant)).map((d) => d.payload.id)));
    expect(receiver.on('/capped-b')).toHaveLength(0);
    // B's twelve are all still there: visible, or held by the capped passes until their hold ends.
    const { Attributes = {} } = await dlq.deps.sqs.send(new GetQueueAttributesCommand({ QueueUrl: dlq.deps.queues.deliveryDlq, AttributeNames: ['ApproximateNumberOfMessages', 'ApproximateNumberOfMessagesNotVisible'] }));
    expect(Number(Attributes.ApproximateNumberOfMessages) + Number(Attributes.ApproximateNumberOfMessagesNotVisible)).toBe(others.length);
    expect(ours).toHaveLength(2);
  }, 60_000);

  it('a dead letter re-delivered without its copy removed (as the settings page does) is removed, not sent again, by a later pass', async () => {
    const dlq = await privateDeadLetters();
    const a = await tenantWithEndpoint('/stale-copy', 'all', { status: 204 });
    const [id] = await deadLettered(dlq.deps, a.tenant, a.endpointId, 1);
    await redeliverDelivery(dlq.deps, id, { removeDeadLetterCopies: false });
    await settled(a.tenant, 'the re-delivery', (d) => d[0]?.status === 'delivered');
    expect(await redeliverDeadLetters(dlq.deps, { organizationId: a.tenant.organizationId })).toMatchObject({ moved: 1, alreadyDelivered: 1 });
    expect(await deadLetterIds(dlq.deps)).not.toContain(id);
    await new Promise((resolve) => setTimeout(resolve, 2_000)); // a wrongly re-queued copy would arrive by now
    expect(receiver.on('/stale-copy')).toHaveLength(1);
    expect((await deliveriesOf(a.tenant))[0].status).toBe('delivered');
  });

  it('crm webhooks test sends webhook.test and prints the outcome', async () => {
    const { tenant } = await tenantWithEndpoint('/test-event', 'invoice.paid');
    const result = await runCli(['webhooks', 'test', '--org', tenant.organizationId]);
    expect(result.code).toBe(0);
    expect(result.json<{ deliveries: { status: string; httpStatus: number }[] }>().deliveries).toEqual([expect.objectContaining({ status: 'delivered', httpStatus: 204 })]);
    expect(receiver.on('/test-event')[0].event).toMatchObject({ type: 'webhook.test' });
  });
});
