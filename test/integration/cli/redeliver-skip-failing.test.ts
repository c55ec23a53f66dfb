/**
 * The runbook's redeliver (docs/operations.md "Redeliver"): per organization, after a test event has
 * told which receivers answer again, `crm deliveries redeliver --org --skip-failing` sends the failed
 * deliveries of the endpoints that answer and leaves those of an endpoint still failing failed,
 * unsent, and named.
 */
import { describe, it, expect } from '@jest/globals';
import { addEndpoint, updateEndpoint } from '../../../functions/core/delivery/endpoints.js';
import { listDeliveries } from '../../../functions/core/delivery/redeliver.js';
import { eventually, newTenant, postLead, runCli, testStack } from '../support/stack.js';
import { receiverForFile } from '../support/receiver.js';

const receiver = receiverForFile();

describe('crm deliveries redeliver --org --skip-failing', () => {
  it('re-sends the failed deliveries of endpoints that answer again, and leaves those of an endpoint still failing', async () => {
    const { deps } = await testStack();
    const tenant = await newTenant({ name: 'Half Down Co' });
    const endpoint = async (path: string) => {
      const { endpoint: created, secret } = await addEndpoint(deps, tenant.organizationId, { url: 'http://127.0.0.1:9/placeholder', events: 'client.created' });
      await updateEndpoint(deps, tenant.organizationId, created.id, { url: receiver.script(path, secret, { status: 503 }) });
      return { id: created.id, secret };
    };
    const fixed = await endpoint('/fixed');
    const down = await endpoint('/still-down');
    await postLead(tenant.key, { name: 'Twice Failed' });
    const failed = await eventually(async () => {
      const list = await listDeliveries(deps, tenant.organizationId);
      return list.length === 2 && list.every((d) => d.status === 'failed') ? list : undefined;
    }, { what: 'both deliveries to fail their 5 attempts', intervalMs: 250 });
    const failedTo = (id: string) => failed.find((d) => d.endpointId === id)!;

    // One receiver is fixed; the test event finds it answering (and the other not).
    receiver.script('/fixed', fixed.secret, { status: 204 });
    const tested = await runCli(['webhooks', 'test', '--org', tenant.organizationId]);
    expect(tested.json<{ deliveries: { endpointId: string; status: string }[] }>().deliveries.map((d) => [d.endpointId, d.status]).sort())
      .toEqual([[fixed.id, 'delivered'], [down.id, expect.not.stringMatching(/^delivered$/)]].sort());
    // The test event keeps retrying there; what counts is the lead's event.
    const leadsTo = (path: string) => receiver.on(path).filter((r) => r.event?.type === 'client.created');
    const sentToDown = leadsTo('/still-down').length;

    const redrive = await runCli(['deliveries', 'redeliver', '--org', tenant.organizationId, '--skip-failing']);
    expect(redrive.code).toBe(0);
    expect(redrive.json()).toEqual({ redriven: 1, skippedEndpoints: [{ id: down.id, why: expect.any(String) }] });
    await eventually(async () => (await listDeliveries(deps, tenant.organizationId)).find((d) => d.id === failedTo(fixed.id).id)?.status === 'delivered',
      { what: 'the fixed endpoint\'s redelivered delivery' });
    // Its original webhook-id, verified with its secret.
    const original = (failedTo(fixed.id).payload as { id: string }).id;
    expect(leadsTo('/fixed').filter((r) => r.headers['webhook-id'] === original && r.verifyError === undefined).length).toBeGreaterThanOrEqual(1);
    // The endpoint still failing got nothing more, and its delivery is still failed.
    await new Promise((resolve) => setTimeout(resolve, 1500));
    expect(leadsTo('/still-down')).toHaveLength(sentToDown);
    expect((await listDeliveries(deps, tenant.organizationId)).find((d) => d.id === failedTo(down.id).id)?.status).toBe('failed');

    // Without --org it is refused, as is --skip-failing with --all.
    expect((await runCli(['deliveries', 'redeliver', '--all', '--skip-failing'])).code).toBe(2);
  }, 180_000);
});
