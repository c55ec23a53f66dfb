/**
 * A lead's trail (docs/settings.md "A lead's trail"), through HTTP against the local stack: the
 * request log names the client a lead came to; GET /api/settings/clients/{id}/trail shows that
 * client, each submission (created, merged), the event it caused, as the receiver got it (same id,
 * verified signature), and that event's deliveries with their attempts; a flagged duplicate shows
 * its link. Another organization's client is not found (isolation.test.ts covers it with the rest).
 */
import { describe, it, expect, beforeAll } from '@jest/globals';
import { eventually, newTenant, postLead, testStack, type Tenant } from '../support/stack.js';
import { receiverForFile } from '../support/receiver.js';
import { settingsClient } from './support.js';
import { createClient } from '../../../functions/core/crm/entities.js';

type Client = Awaited<ReturnType<typeof settingsClient>>;
interface Trail {
  client: { id: string; name: string | null; source: string; submissionCount: number; possibleDuplicateOf: string | null };
  submissions: {
    number: number; requestId: string | null;
    event: { id: string; type: string; recorded: boolean } | null;
    deliveries: { id: string; eventId: string; status: string; url: string; attempts: { number: number; statusCode: number | null }[] }[];
  }[];
}

const receiver = receiverForFile();
let tenant: Tenant;
let admin: Client;
beforeAll(async () => {
  tenant = await newTenant({ name: 'Trail Roofing' });
  admin = await settingsClient(tenant.organizationId);
  const { secret } = (await admin.post('/api/settings/webhooks', { url: `${receiver.url}/trail`, events: ['client.created', 'client.updated'] })).json<{ secret: string }>();
  receiver.script('/trail', secret, { status: 204 });
});

const trailOf = async (clientId: string) => {
  const call = await admin.get(`/api/settings/clients/${clientId}/trail`);
  expect(call.status).toBe(200);
  return call.json<Trail>();
};
/** The trail once every submission's deliveries have their first attempt. */
const settled = (clientId: string, submissions: number) => eventually(async () => {
  const trail = await trailOf(clientId);
  return trail.submissions.length === submissions && trail.submissions.every((s) => s.deliveries.length === 1 && s.deliveries[0].attempts.length > 0) && trail;
}, { what: `the trail of ${clientId} with ${submissions} delivered submission(s)` });

/** Sets the duplicate policy and waits out lead intake's organization cache (keyCacheTtlSeconds, as the page says a change takes). */
async function duplicatePolicy(policy: 'flag' | 'merge'): Promise<void> {
  expect((await admin.patch('/api/settings', { duplicate_policy: policy })).status).toBe(200);
  const { deps } = await testStack();
  await new Promise((r) => setTimeout(r, deps.config.keyCacheTtlSeconds * 1000 + 100));
}

const requestRow = async (requestId: string) =>
  (await admin.get('/api/settings/requests')).json<{ requests: { requestId: string; clientId: string | null; detail: string | null }[] }>().requests.find((r) => r.requestId === requestId);

describe("a lead's trail", () => {
  it('follows a lead from its request to the client, its client.created event and that event\'s delivery and attempt, as the receiver got it', async () => {
    const lead = await postLead(tenant.key, { first_name: 'Grace', last_name: 'Hopper', email: 'grace@example.com' });
    expect(lead.status).toBe(201);
    const { id } = (await lead.json()) as { id: string };
    const row = await requestRow(lead.headers.get('x-request-id')!);
    expect(row).toMatchObject({ clientId: id });

    const trail = await settled(id, 1);
    expect(trail.client).toMatchObject({ id, name: 'Grace Hopper', source: 'api', submissionCount: 1, possibleDuplicateOf: null });
    const [first] = trail.submissions;
    // Its request, which the client records (the client is that request's row in the request log).
    expect(first).toMatchObject({ number: 1, requestId: lead.headers.get('x-request-id'), event: { type: 'client.created', recorded: true } });
    expect(first.deliveries[0]).toMatchObject({ eventId: first.event!.id, status: 'delivered', url: `${receiver.url}/trail`, attempts: [{ number: 1, statusCode: 204 }] });
    // The event the trail names is the one the receiver got and verified.
    const received = receiver.on('/trail').filter((r) => r.event?.data.object.id === id);
    expect(received).toHaveLength(1);
    expect(received[0].verifyError).toBeUndefined();
    expect(received[0].event).toMatchObject({ id: first.event!.id, type: 'client.created' });
    expect(received[0].headers['webhook-id']).toBe(first.event!.id);
  });

  it('shows a submission merged into the client as its own step, with the request that made it and its client.updated event', async () => {
    await duplicatePolicy('merge');
    try {
      const created = await postLead(tenant.key, { first_name: 'Katherine', email: 'katherine@example.com' });
      const { id } = (await created.json()) as { id: string };
      await settled(id, 1);
      const merged = await postLead(tenant.key, { first_name: 'Katherine', last_name: 'Johnson', email: 'katherine@example.com', notes: 'second form' });
      expect(merged.status).toBe(200);
      expect(await merged.json()).toMatchObject({ id, merged: true });
      const requestId = merged.headers.get('x-request-id')!;
      expect(await requestRow(requestId)).toMatchObject({ clientId: id, detail: 'merged into an earlier client' });

      const trail = await settled(id, 2);
      expect(trail.client.submissionCount).toBe(2);
      const [, second] = trail.submissions;
      expect(second).toMatchObject({ number: 2, requestId, event: { type: 'client.updated', recorded: true } });
      expect(second.deliveries[0]).toMatchObject({ eventId: second.event!.id, status: 'delivered' });
      const got = receiver.on('/trail').find((r) => r.event?.id === second.event!.id);
      expect(got?.event).toMatchObject({ type: 'client.updated', data: { object: { id, submission_count: 2 } } });
    } finally {
      await duplicatePolicy('flag');
    }
  });

  it('a lead merged into a client the CRM created: its creation shows no event (not a lead\'s), the merge its client.updated', async () => {
    const { deps } = await testStack();
    const crmClient = await createClient(deps, tenant.organizationId, { first_name: 'Dorothy', email: 'dorothy@example.com' });
    await duplicatePolicy('merge');
    try {
      const merged = await postLead(tenant.key, { first_name: 'Dorothy', last_name: 'Vaughan', email: 'dorothy@example.com' });
      expect(await merged.json()).toMatchObject({ id: crmClient.id, merged: true });
      const trail = await eventually(async () => {
        const t = await trailOf(String(crmClient.id));
        return t.submissions.length === 2 && t.submissions[1].deliveries[0]?.attempts.length > 0 && t;
      }, { what: 'the merge delivered' });
      expect(trail.submissions[0]).toMatchObject({ number: 1, event: null, deliveries: [] });
      expect(trail.submissions[1]).toMatchObject({ number: 2, requestId: merged.headers.get('x-request-id'), event: { type: 'client.updated' } });
    } finally {
      await duplicatePolicy('flag');
    }
  });

  it('links a flagged duplicate to the earlier client', async () => {
    const first = (await (await postLead(tenant.key, { first_name: 'Mary', email: 'mary@example.com' })).json()) as { id: string };
    const again = await postLead(tenant.key, { first_name: 'Mary', last_name: 'Jackson', email: 'mary@example.com' });
    expect(again.status).toBe(201);
    const { id } = (await again.json()) as { id: string };
    expect(id).not.toBe(first.id);
    expect((await trailOf(id)).client).toMatchObject({ id, possibleDuplicateOf: first.id });
  });

  it('answers 404 for a client that does not exist or an id that is not one, and has no trail for calls that made no lead', async () => {
    for (const id of ['cli_00000000000000000000000', 'not-a-client', 'cli_' + 'a'.repeat(300)]) {
      const call = await admin.get(`/api/settings/clients/${id}/trail`);
      expect({ id, status: call.status, type: call.headers.get('content-type') }).toEqual({ id, status: 404, type: 'application/problem+json' });
    }
    const { api } = await testStack();
    const check = await api('/api/webhook/leads', { headers: { 'X-API-Key': tenant.key } });
    expect(check.status).toBe(200);
    expect(await requestRow(check.headers.get('x-request-id')!)).toMatchObject({ clientId: null });
  });
});
