/**
 * On call, from an alarm or a receiver's log: `crm deliveries show <delivery id | event id>` finds
 * the delivery without being told its organization (docs/operations.md), records written before
 * records lost their id-index entry included (docs/data-model.md "Finding a delivery").
 */
import { describe, it, expect } from '@jest/globals';
import { addEndpoint, updateEndpoint } from '../../../functions/core/delivery/endpoints.js';
import { dynamoDeliveryStore } from '../../../functions/core/delivery/delivery-record.js';
import { keys } from '../../../functions/core/platform/model.js';
import { eventually, newTenant, postLead, runCli, testStack } from '../support/stack.js';
import { receiverForFile } from '../support/receiver.js';

const receiver = receiverForFile();

interface Shown { id: string; organizationId: string; endpointId: string; eventId: string; status: string; attempts: { statusCode?: number }[]; payload: { id: string } }

describe('crm deliveries show', () => {
  it('finds a delivery by its id or by its webhook-id, with no --org, among several organizations', async () => {
    const { deps } = await testStack();
    await newTenant({ name: 'Someone Else Co' }); // another organization to look through
    const tenant = await newTenant({ name: 'On Call Co' });
    const added = await Promise.all(['/a', '/b'].map(async (path) => {
      const { endpoint, secret } = await addEndpoint(deps, tenant.organizationId, { url: 'http://127.0.0.1:9/placeholder', events: 'client.created' });
      return { endpoint, url: receiver.script(path, secret, { status: 204 }) };
    }));
    for (const { endpoint, url } of added) await updateEndpoint(deps, tenant.organizationId, endpoint.id, { url });
    await postLead(tenant.key, { name: 'Looked Up' });
    const webhookId = await eventually(async () => receiver.on('/a').find((r) => r.event?.type === 'client.created')?.headers['webhook-id'] as string | undefined,
      { what: 'the lead’s webhook', intervalMs: 200 });
    await eventually(async () => receiver.on('/b').some((r) => r.headers['webhook-id'] === webhookId), { what: 'the second endpoint’s webhook', intervalMs: 200 });

    // By the webhook-id (the event id): both of its deliveries, in the right organization.
    const byEvent = await eventually(async () => {
      const shown = (await runCli(['deliveries', 'show', webhookId])).json<Shown[]>();
      return shown.length === 2 && shown.every((d) => d.status === 'delivered') ? shown : undefined;
    }, { what: 'both deliveries recorded delivered', intervalMs: 300 });
    expect(byEvent.map((d) => d.endpointId).sort()).toEqual(added.map((a) => a.endpoint.id).sort());
    for (const d of byEvent) expect(d).toMatchObject({ organizationId: tenant.organizationId, eventId: webhookId, payload: { id: webhookId }, attempts: [{ statusCode: 204 }] });

    // By the delivery id alone, and with --org (one read); its human form names the organization.
    const one = byEvent[0];
    expect((await runCli(['deliveries', 'show', one.id])).json<Shown>()).toMatchObject({ id: one.id, organizationId: tenant.organizationId, status: 'delivered' });
    expect((await runCli(['deliveries', 'show', one.id, '--org', tenant.organizationId])).json<Shown>()).toMatchObject({ id: one.id });
    const human = await runCli(['deliveries', 'show', one.id], { json: false });
    expect(human.code).toBe(0);
    expect(human.stdout).toContain(tenant.organizationId);
    expect(human.stdout).toContain(webhookId);

    // A record written before records lost their id-index entry (gsi1) is still found by id alone.
    const store = dynamoDeliveryStore(deps);
    const [stored] = await store.get([keys.delivery(tenant.organizationId, one.id)]);
    const legacyId = 'dlv_legacyRecordWithGsi1x';
    await store.recorded([{ ...stored, ...keys.delivery(tenant.organizationId, legacyId), ...keys.deliveryIndex(legacyId), id: legacyId }]);
    expect((await runCli(['deliveries', 'show', legacyId])).json<Shown>()).toMatchObject({ id: legacyId, organizationId: tenant.organizationId });

    // Unknown ids, an id of another organization, and what is neither.
    expect((await runCli(['deliveries', 'show', 'dlv_noSuchDeliveryAnywhere'])).code).toBe(1);
    expect((await runCli(['deliveries', 'show', 'evt_noSuchEventAnywhere1'])).code).toBe(1);
    expect((await runCli(['deliveries', 'show', one.id, '--org', 'org_someone_else'])).code).toBe(1);
    expect((await runCli(['deliveries', 'show', 'cli_123'])).code).toBe(2);
  }, 120_000);
});
