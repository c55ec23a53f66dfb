/**
 * Upgrading a stage deployed before the endpoints table: its endpoints sit in the organizations
 * table. `crm endpoints migrate` moves them (docs/operations.md), after which they receive
 * deliveries signed with their old secret, and nothing with a secret is left behind.
 */
import { describe, it, expect } from '@jest/globals';
import { BatchWriteCommand } from '@aws-sdk/lib-dynamodb';
import { addEndpoint } from '../../../functions/core/delivery/endpoints.js';
import { eventually, itemsOf, newTenant, postLead, runCli, testStack } from '../support/stack.js';
import { receiverForFile } from '../support/receiver.js';

const receiver = receiverForFile();

/** An endpoint as a stage from before the split stored it: its items (and bound) in the organizations table. */
async function oldStyleEndpoint(organizationId: string, path: string) {
  const { deps } = await testStack();
  const { endpoint, secret } = await addEndpoint(deps, organizationId, { url: `${receiver.url}${path}`, events: 'client.created' });
  receiver.script(path, secret, { status: 204 });
  const items = await itemsOf('endpoints', organizationId);
  await deps.doc.send(new BatchWriteCommand({ RequestItems: {
    [deps.tables.organizations]: items.map((Item) => ({ PutRequest: { Item } })),
    [deps.tables.endpoints]: items.map((i) => ({ DeleteRequest: { Key: { pk: i.pk, sk: i.sk } } })),
  } }));
  return { endpoint, secret, items: items.length };
}

describe('crm endpoints migrate', () => {
  it('moves endpoints written the old way, which then receive signed deliveries; none left in the organizations table; a second run moves nothing', async () => {
    const tenant = await newTenant();
    const { endpoint, items } = await oldStyleEndpoint(tenant.organizationId, '/migrated');
    expect(await itemsOf('organizations', tenant.organizationId, 'ENDPOINT#')).toHaveLength(1);

    const first = await runCli(['endpoints', 'migrate']);
    expect(first.code).toBe(0);
    expect(first.json()).toMatchObject({ left: 0 });
    expect(first.json<{ moved: number }>().moved).toBeGreaterThanOrEqual(items);
    expect(await itemsOf('organizations', tenant.organizationId, 'ENDPOINT#')).toEqual([]);
    expect(await itemsOf('organizations', tenant.organizationId, 'SLOTS#ENDPOINTS')).toEqual([]);
    expect(await itemsOf('endpoints', tenant.organizationId, 'ENDPOINT#')).toEqual([expect.objectContaining({ id: endpoint.id, secrets: [expect.anything()] })]);

    expect((await postLead(tenant.key, { name: 'After Upgrade' })).status).toBe(201);
    const [received] = await eventually(async () => receiver.on('/migrated').length > 0 && receiver.on('/migrated'), { what: 'the delivery to the migrated endpoint' });
    expect(received.event).toMatchObject({ type: 'client.created', organization_id: tenant.organizationId });

    const again = await runCli(['endpoints', 'migrate']);
    expect(again.json()).toEqual({ moved: 0, alreadyThere: 0, left: 0 });
  });

  it('keeps the copy already in the endpoints table (changed since the deploy) and still deletes the old one', async () => {
    const tenant = await newTenant();
    const { deps } = await testStack();
    const { endpoint } = await oldStyleEndpoint(tenant.organizationId, '/kept');
    const [old] = await itemsOf('organizations', tenant.organizationId, 'ENDPOINT#');
    await deps.doc.send(new BatchWriteCommand({ RequestItems: { [deps.tables.endpoints]: [{ PutRequest: { Item: { ...old, description: 'changed after the deploy' } } }] } }));
    expect((await runCli(['endpoints', 'migrate'])).code).toBe(0);
    expect(await itemsOf('endpoints', tenant.organizationId, 'ENDPOINT#')).toEqual([expect.objectContaining({ id: endpoint.id, description: 'changed after the deploy' })]);
    expect(await itemsOf('organizations', tenant.organizationId, 'ENDPOINT#')).toEqual([]);
  });
});
