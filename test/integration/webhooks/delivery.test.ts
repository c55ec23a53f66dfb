/**
 * End to end on the local stack: a change in a table becomes a signed POST to a real receiver on
 * loopback, verified with `standardwebhooks`; failures are retried on the (compressed) schedule,
 * exhausted deliveries reach the dead-letter queue and `crm deliveries redrive` delivers them with
 * the same webhook-id.
 */
import { describe, it, expect, beforeAll, afterAll } from '@jest/globals';
import { ReceiveMessageCommand } from '@aws-sdk/client-sqs';
import { eventually, newTenant, postLead, runCli, testStack, type Tenant } from '../support/stack.js';
import { Receiver } from '../support/receiver.js';
import { addEndpoint, getEndpoint, updateEndpoint } from '../../../functions/core/endpoints.js';
import { listDeliveries } from '../../../functions/core/delivery/redrive.js';

let receiver: Receiver;
beforeAll(async () => {
  receiver = await new Receiver().start();
});
afterAll(async () => {
  await receiver.stop();
});

interface Attempt { attempt: number; statusCode?: number; error?: string; responseBody?: string; at: string }
type Delivery = { id: string; status: string; eventType: string; attempts: Attempt[]; reason?: string; payload: { id: string } };

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

  it('retries a 500 and keeps the webhook-id', async () => {
    const { tenant } = await tenantWithEndpoint('/flaky', 'client.created', { status: 500, body: 'boom' }, { status: 200 });
    await postLead(tenant.key, { name: 'Retry Me' });
    const [delivery] = await settled(tenant, 'delivery after a retry', (d) => d[0]?.status === 'delivered');
    expect(delivery.attempts.map((a) => [a.attempt, a.statusCode])).toEqual([[1, 500], [2, 200]]);
    expect(delivery.attempts[0].responseBody).toBe('boom');
    const requests = receiver.on('/flaky');
    expect(requests).toHaveLength(2);
    expect(new Set(requests.map((r) => r.headers['webhook-id'])).size).toBe(1);
    expect(requests.every((r) => !r.verifyError)).toBe(true);
    // The retry waited for the schedule (1 s in the test stack), not immediately.
    expect(requests[1].at - requests[0].at).toBeGreaterThanOrEqual(900);
  });

  it('honours Retry-After on 429 within the schedule', async () => {
    const { tenant } = await tenantWithEndpoint('/busy', 'all', { status: 429, headers: { 'Retry-After': '3' } }, { status: 204 });
    await postLead(tenant.key, { name: 'Slow Down' });
    await settled(tenant, 'delivery after Retry-After', (d) => d[0]?.status === 'delivered');
    const requests = receiver.on('/busy');
    expect(requests[1].at - requests[0].at).toBeGreaterThanOrEqual(2_900);
  });

  it('does not follow redirects: a 3xx is a failed attempt', async () => {
    const target = receiver.script('/redirect-target', 'whsec_unused');
    const { tenant } = await tenantWithEndpoint('/redirect', 'all', { status: 302, headers: { Location: target } }, { status: 204 });
    await postLead(tenant.key, { name: 'No Follow' });
    const [delivery] = await settled(tenant, 'delivery after a redirect', (d) => d[0]?.status === 'delivered');
    expect(delivery.attempts[0]).toMatchObject({ statusCode: 302, error: expect.stringContaining('not followed') });
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

  it('after five failures parks the delivery in the dead-letter queue; redrive delivers it with the same webhook-id', async () => {
    const { deps } = await testStack();
    const { tenant, endpointId } = await tenantWithEndpoint('/down', 'all', { status: 503 });
    await postLead(tenant.key, { name: 'Eventually Delivered' });
    const [failed] = await settled(tenant, 'five failed attempts', (d) => d[0]?.status === 'failed', 30_000);
    expect(failed.attempts.map((a) => a.attempt)).toEqual([1, 2, 3, 4, 5]);
    expect(failed.reason).toMatch(/5 attempts/);
    await eventually(async () => {
      const { Messages = [] } = await deps.sqs.send(new ReceiveMessageCommand({ QueueUrl: deps.queues.deliveryDlq, MaxNumberOfMessages: 10, VisibilityTimeout: 0 }));
      return Messages.some((m) => (JSON.parse(m.Body!) as { deliveryId: string }).deliveryId === failed.id);
    }, { what: 'the message in the dead-letter queue', timeoutMs: 15_000 });

    receiver.script('/down', (await getEndpoint(deps, tenant.organizationId, endpointId))!.secrets[0].secret, { status: 200 });
    const redrive = await runCli(['deliveries', 'redrive', '--all', '--org', tenant.organizationId]);
    expect(redrive.code).toBe(0);
    expect(redrive.json<{ moved: number }>().moved).toBe(1);
    const [delivered] = await settled(tenant, 'the re-driven delivery', (d) => d[0]?.status === 'delivered');
    expect(delivered.attempts.at(-1)).toMatchObject({ attempt: 1, statusCode: 200 }); // a fresh attempt count
    const requests = receiver.on('/down');
    expect(new Set(requests.map((r) => r.headers['webhook-id']))).toEqual(new Set([failed.payload.id]));
    expect(requests.at(-1)!.verifyError).toBeUndefined();
  }, 60_000);

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

  it('lists deliveries by status and re-drives one by id, or an organization’s failed ones', async () => {
    const { deps } = await testStack();
    const { tenant, endpointId, secret } = await tenantWithEndpoint('/redrive-some', 'all', { status: 410 });
    await postLead(tenant.key, { name: 'First' });
    const [gone] = await settled(tenant, 'the 410', (d) => d[0]?.status === 'failed');
    const listed = await runCli(['deliveries', 'list', '--org', tenant.organizationId, '--status', 'failed']);
    expect(listed.json<{ id: string }[]>().map((d) => d.id)).toEqual([gone.id]);
    expect((await runCli(['deliveries', 'list', '--org', tenant.organizationId, '--status', 'delivered'])).json()).toEqual([]);

    receiver.script('/redrive-some', secret, { status: 204 });
    await updateEndpoint(deps, tenant.organizationId, endpointId, { enabled: true }); // the 410 disabled it
    const one = await runCli(['deliveries', 'redrive', '--delivery', gone.id]);
    expect(one.code).toBe(0);
    await settled(tenant, 'the re-driven delivery', (d) => d[0]?.status === 'delivered');
    expect(new Set(receiver.on('/redrive-some').map((r) => r.headers['webhook-id']))).toEqual(new Set([gone.payload.id]));
    expect(receiver.on('/redrive-some').at(-1)!.verifyError).toBeUndefined();

    const none = await runCli(['deliveries', 'redrive', '--org', tenant.organizationId]);
    expect(none.json()).toEqual({ redriven: 0 });
    const bad = await runCli(['deliveries', 'redrive'], { json: false });
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toMatch(/--delivery/);
  });

  it('crm webhooks test sends webhook.test and prints the outcome', async () => {
    const { tenant } = await tenantWithEndpoint('/test-event', 'invoice.paid');
    const result = await runCli(['webhooks', 'test', '--org', tenant.organizationId]);
    expect(result.code).toBe(0);
    expect(result.json<{ deliveries: { status: string; httpStatus: number }[] }>().deliveries).toEqual([expect.objectContaining({ status: 'delivered', httpStatus: 204 })]);
    expect(receiver.on('/test-event')[0].event).toMatchObject({ type: 'webhook.test' });
  });
});
