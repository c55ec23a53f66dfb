/** Webhook endpoints from the CLI and the domain: validation, limits, secrets shown once, rotation, health. */
import { describe, it, expect } from '@jest/globals';
import { Webhook } from 'standardwebhooks';
import { eventually, newTenant, ownDeps, runCli, testStack } from '../support/stack.js';
import { receiverForFile } from '../support/receiver.js';
import { tables } from '../../../lib/topology.js';
import { addEndpoint, currentEndpoints, getEndpoint } from '../../../functions/core/delivery/endpoints.js';
import { deliveryIdFor, recordDelivery } from '../../../functions/core/delivery/queue.js';
import { findDelivery } from '../../../functions/core/delivery/redeliver.js';
import { webhookTestEvent } from '../../../functions/core/events/catalog.js';

const receiver = receiverForFile();

describe('the fan-out\'s endpoint read', () => {
  it('asks for the routing fields alone (Select SPECIFIC_ATTRIBUTES, the projection its IAM grant allows): never a signing secret', async () => {
    const { deps } = await testStack();
    const { organizationId: org } = await newTenant();
    const { endpoint } = await addEndpoint(deps, org, { url: `${receiver.url}/routing`, events: 'client.created' });
    const sent: Record<string, unknown>[] = [];
    const watched = await ownDeps();
    watched.doc.middlewareStack.add((next) => async (args) => { sent.push(args.input as Record<string, unknown>); return next(args); }, { step: 'initialize', name: 'recordInput' });
    const read = await currentEndpoints(watched, org);
    expect(read).toEqual([expect.objectContaining({ id: endpoint.id, events: ['client.created'], enabled: true, secrets: [] })]);
    expect(sent).toEqual([expect.objectContaining({ Select: 'SPECIFIC_ATTRIBUTES' })]);
    const projected = Object.values(sent[0].ExpressionAttributeNames as Record<string, string>);
    expect(projected.sort()).toEqual([...tables.endpoints.readableFields].sort());
    expect(projected).not.toContain('secrets');
  });
});

describe('crm webhooks', () => {
  it('adds an endpoint, printing its secret once; list, update and remove never show it', async () => {
    const { organizationId: org } = await newTenant();
    const added = await runCli(['webhooks', 'add', '--org', org, '--url', `${receiver.url}/cli`, '--events', 'client_created,invoice.paid', '--description', 'Zapier']);
    expect(added.code).toBe(0);
    const { id, secret, events } = added.json<{ id: string; secret: string; events: string[] }>();
    expect(secret).toMatch(/^whsec_/);
    expect(events).toEqual(['client.created', 'invoice.paid']);

    const list = await runCli(['webhooks', 'list', '--org', org]);
    expect(list.stdout).not.toContain(secret);
    expect(list.json()).toEqual([expect.objectContaining({ id, enabled: true, description: 'Zapier', secretCount: 1 })]);

    const updated = await runCli(['webhooks', 'update', '--org', org, '--endpoint', id, '--events', 'all', '--enabled', 'false']);
    expect(updated.json()).toMatchObject({ events: ['*'], enabled: false });
    expect(updated.stdout).not.toContain(secret);

    expect((await runCli(['webhooks', 'remove', '--org', org, '--endpoint', id])).code).toBe(0);
    expect((await runCli(['webhooks', 'list', '--org', org])).json()).toEqual([]);
  });

  it.each([
    ['an unknown event', ['--url', 'https://hooks.example.com/x', '--events', 'client.created,lead.exploded'], /unknown event lead.exploded/],
    ['a URL that is not a URL', ['--url', 'not a url'], /absolute URL/],
    ['a URL with credentials', ['--url', 'https://user:pw@hooks.example.com/x'], /credentials/],
    ['a private IP literal', ['--url', 'https://10.0.0.8/hook'], /private/],
    ['cloud metadata', ['--url', 'http://169.254.169.254/latest'], /link-local/],
  ])('refuses %s, writing nothing', async (_what, args, message) => {
    const { organizationId: org } = await newTenant();
    const result = await runCli(['webhooks', 'add', '--org', org, ...args], { json: false });
    expect(result.code).not.toBe(0);
    expect(result.stderr).toMatch(message);
    expect((await runCli(['webhooks', 'list', '--org', org])).json()).toEqual([]);
  });

  it('refuses plain http outside the local stack', async () => {
    const { deps } = await testStack();
    const { organizationId: org } = await newTenant();
    const aws = { ...deps, config: { ...deps.config, local: false } };
    await expect(addEndpoint(aws, org, { url: 'http://hooks.example.com/x', events: 'all' })).rejects.toMatchObject({ status: 422, extra: { errors: [{ field: 'url', message: 'must use https' }] } });
  });

  it('allows at most 10 endpoints per organization', async () => {
    const { deps } = await testStack();
    const { organizationId: org } = await newTenant();
    for (let i = 0; i < 10; i++) await addEndpoint(deps, org, { url: `https://hooks.example.com/${i}`, events: 'all' });
    await expect(addEndpoint(deps, org, { url: 'https://hooks.example.com/11', events: 'all' })).rejects.toMatchObject({ status: 422 });
  });

  it('signs with both secrets during a rotation, so the old and the new one verify', async () => {
    const { organizationId: org } = await newTenant();
    const { id, secret: oldSecret } = (await runCli(['webhooks', 'add', '--org', org, '--url', `${receiver.url}/rotate`])).json<{ id: string; secret: string }>();
    receiver.script('/rotate', oldSecret);
    const { secret: newSecret } = (await runCli(['webhooks', 'rotate-secret', '--org', org, '--endpoint', id])).json<{ secret: string }>();
    expect(newSecret).not.toBe(oldSecret);
    expect((await runCli(['webhooks', 'test', '--org', org])).code).toBe(0);
    const [request] = await eventually(async () => receiver.on('/rotate').length ? receiver.on('/rotate') : undefined, { what: 'the test event' });
    expect(request.verifyError).toBeUndefined(); // verified with the old secret
    expect(new Webhook(newSecret.slice(6)).verify(request.body, request.headers as Record<string, string>)).toMatchObject({ type: 'webhook.test' });
    expect(String(request.headers['webhook-signature']).split(' ')).toHaveLength(2);
  });

  // Disabling after failing too long, and re-enabling: test/unit/delivery/circuits.test.ts (the endpoints store's twin).

  it('records an event too big for the queue as failed with the reason, and queues nothing', async () => {
    const { deps } = await testStack();
    const { organizationId: org } = await newTenant();
    const { endpoint } = await addEndpoint(deps, org, { url: 'https://hooks.example.com/big', events: 'all' });
    const event = webhookTestEvent(org, new Date(), 'evt_bigbigbigbigbigbigbig');
    event.data.object = { blob: 'x'.repeat(300 * 1024) };
    expect(await recordDelivery(deps, event, (await getEndpoint(deps, org, endpoint.id))!)).toBeUndefined();
    const delivery = await findDelivery(deps, deliveryIdFor(event.id, endpoint.id));
    expect(delivery).toMatchObject({ status: 'failed', reason: expect.stringContaining('exceeds') });
  });
});
