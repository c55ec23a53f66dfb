/**
 * Many hands at once (docs/decisions.md "Settings writes: versions and slot items"): requests that
 * arrive together never undo each other's writes, and the per-organization bounds hold however
 * many arrive at once. Everything through the settings API over HTTP, read back from DynamoDB Local.
 */
import { describe, it, expect } from '@jest/globals';
import { ConditionalCheckFailedException, TransactionCanceledException } from '@aws-sdk/client-dynamodb';
import { DeleteCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { Webhook } from 'standardwebhooks';
import { itemsOf, newTenant, ownDeps, runCli, testStack } from '../support/stack.js';
import { activeSecrets, addEndpoint, getEndpoint, MAX_SIGNING_SECRETS, rotateSecret } from '../../../functions/core/delivery/endpoints.js';
import { sign } from '../../../functions/core/delivery/signing.js';
import { createApiKey, listApiKeys, MAX_LIVE_KEYS } from '../../../functions/core/tenancy/api-keys.js';
import type { Deps } from '../../../functions/core/platform/deps.js';
import { keys } from '../../../functions/core/platform/model.js';
import { Receiver } from '../support/receiver.js';
import { settingsClient } from './support.js';

interface EndpointView { id: string; url: string; enabled: boolean; description: string | null; secretCount: number }

/** The endpoint as stored, and whether `secret` is what signs its deliveries now (standardwebhooks verifies). */
async function signsWith(organizationId: string, endpointId: string, secret: string): Promise<boolean> {
  const { deps } = await testStack();
  const stored = (await getEndpoint(deps, organizationId, endpointId))!;
  const body = JSON.stringify({ id: 'evt_race', type: 'webhook.test' });
  const headers = sign({ id: 'evt_race', timestamp: Math.floor(Date.now() / 1000), body, secrets: activeSecrets(stored, Date.now()) });
  try {
    new Webhook(secret.replace(/^whsec_/, '')).verify(body, headers);
    return true;
  } catch {
    return false;
  }
}

describe('settings writes under concurrency', () => {
  it('an emergency rotation (grace 0) racing a PATCH of the same endpoint: every answered secret is the one that signs, the leaked one never does, and the PATCH is kept', async () => {
    const { organizationId } = await newTenant();
    const admin = await settingsClient(organizationId);
    const added = await admin.post('/api/settings/webhooks', { url: 'http://127.0.0.1:9/race', events: ['client.created'] });
    expect(added.status).toBe(201);
    const { endpoint: { id }, secret: first } = added.json<{ endpoint: EndpointView; secret: string }>();
    let leaked = first;
    for (let round = 0; round < 12; round++) {
      const description = `round ${round}`;
      const patch = () => admin.patch(`/api/settings/webhooks/${id}`, { description, enabled: round % 2 === 0 });
      const rotate = () => admin.post(`/api/settings/webhooks/${id}/rotate-secret`, { grace_hours: 0 });
      // Both orders of arrival, at the same moment.
      const [a, b] = await Promise.all(round % 2 ? [patch(), rotate()] : [rotate(), patch()]);
      const [rotated, patched] = round % 2 ? [b, a] : [a, b];
      expect([rotated.status, patched.status]).toEqual([200, 200]);
      const secret = rotated.json<{ secret: string }>().secret;
      expect(await signsWith(organizationId, id, secret)).toBe(true);
      expect(await signsWith(organizationId, id, leaked)).toBe(false);
      const stored = (await getEndpoint((await testStack()).deps, organizationId, id))!;
      expect(stored.secrets.map((s) => s.secret)).toEqual([secret]);
      expect(stored).toMatchObject({ description, enabled: round % 2 === 0 });
      leaked = secret;
    }

    // And through the pipeline: a test event to a loopback receiver verifies (standardwebhooks) with
    // the secret the last racing rotation answered, and not with the one before it.
    const receiver = await new Receiver().start();
    try {
      const url = receiver.script('/race-final', leaked);
      const previous = leaked;
      const [rotated] = await Promise.all([
        admin.post(`/api/settings/webhooks/${id}/rotate-secret`, { grace_hours: 0 }),
        admin.patch(`/api/settings/webhooks/${id}`, { url, enabled: true }),
      ]);
      const secret = rotated.json<{ secret: string }>().secret;
      receiver.script('/race-final', secret);
      const tested = await admin.post(`/api/settings/webhooks/${id}/test`);
      expect(tested.json<{ delivery: { status: string } }>().delivery.status).toBe('delivered');
      const [received] = receiver.on('/race-final');
      expect(received.verifyError).toBeUndefined();
      expect(() => new Webhook(previous.replace(/^whsec_/, '')).verify(received.body, received.headers as Record<string, string>)).toThrow();
    } finally {
      await receiver.stop();
    }
  });

  it(`40 parallel key creations leave exactly ${MAX_LIVE_KEYS} live keys; every answered key is stored; revoking one makes room for one`, async () => {
    const { organizationId } = await newTenant(); // starts with one key
    const admin = await settingsClient(organizationId);
    const answers = await Promise.all(Array.from({ length: 40 }, (_, i) => admin.post('/api/settings/keys', { name: `parallel ${i}` })));
    const statuses = answers.map((a) => a.status);
    expect(statuses.filter((s) => s === 201)).toHaveLength(MAX_LIVE_KEYS - 1);
    // The others: 422 (full); a 409 only for one that kept losing for 8 tries and 5 s, and then nothing written.
    expect(statuses.filter((s) => s !== 201).every((s) => s === 422 || s === 409)).toBe(true);
    expect(statuses).toContain(422);
    const { deps } = await testStack();
    const live = (await listApiKeys(deps, organizationId)).filter((k) => k.status === 'active' || k.status === 'expiring');
    expect(live).toHaveLength(MAX_LIVE_KEYS);
    const answered = answers.filter((a) => a.status === 201).map((a) => a.json<{ key: { id: string } }>().key.id);
    expect(live.map((k) => k.keyId)).toEqual(expect.arrayContaining(answered));

    expect((await admin.delete(`/api/settings/keys/${answered[0]}`)).status).toBe(200);
    const again = await Promise.all(Array.from({ length: 5 }, (_, i) => admin.post('/api/settings/keys', { name: `after ${i}` })));
    expect(again.map((a) => a.status).sort()).toEqual([201, 422, 422, 422, 422]);
  });

  it('20 parallel endpoint creations leave exactly 10 endpoints; a refused one writes nothing; deleting one makes room for one', async () => {
    const { organizationId } = await newTenant();
    const admin = await settingsClient(organizationId);
    const { deps } = await testStack();
    const max = deps.config.maxEndpointsPerOrganization;
    expect(max).toBe(10);
    const answers = await Promise.all(Array.from({ length: 20 }, (_, i) => admin.post('/api/settings/webhooks', { url: `http://127.0.0.1:9/ep-${i}`, events: ['client.created'] })));
    expect(answers.filter((a) => a.status === 201)).toHaveLength(max);
    expect(answers.filter((a) => a.status === 422)).toHaveLength(20 - max);
    const stored = await itemsOf('endpoints', organizationId, 'ENDPOINT#');
    expect(stored).toHaveLength(max);
    expect(stored.map((e) => e.id).sort()).toEqual(answers.filter((a) => a.status === 201).map((a) => a.json<{ endpoint: EndpointView }>().endpoint.id).sort());

    const gone = stored[0].id as string;
    expect((await admin.delete(`/api/settings/webhooks/${gone}`)).status).toBe(200);
    const again = await Promise.all(Array.from({ length: 4 }, (_, i) => admin.post('/api/settings/webhooks', { url: `http://127.0.0.1:9/again-${i}`, events: ['client.created'] })));
    expect(again.map((a) => a.status).sort()).toEqual([201, 422, 422, 422]);
    expect(await itemsOf('endpoints', organizationId, 'ENDPOINT#')).toHaveLength(max);
  });

  it(`20 parallel secret rotations: every 200 answer's secret is stored and signs, never more than ${MAX_SIGNING_SECRETS} stored`, async () => {
    const { organizationId } = await newTenant();
    const admin = await settingsClient(organizationId);
    const { endpoint: { id } } = (await admin.post('/api/settings/webhooks', { url: 'http://127.0.0.1:9/rotations', events: ['client.created'] })).json<{ endpoint: EndpointView }>();
    const answers = await Promise.all(Array.from({ length: 20 }, () => admin.post(`/api/settings/webhooks/${id}/rotate-secret`, {})));
    const ok = answers.filter((a) => a.status === 200).map((a) => a.json<{ secret: string }>().secret);
    expect(answers.every((a) => [200, 409, 422].includes(a.status))).toBe(true);
    expect(ok.length).toBeGreaterThan(0);
    const stored = (await getEndpoint((await testStack()).deps, organizationId, id))!.secrets.map((s) => s.secret);
    expect(stored.length).toBeLessThanOrEqual(MAX_SIGNING_SECRETS);
    expect(stored).toEqual(expect.arrayContaining(ok));
    for (const secret of ok) expect(await signsWith(organizationId, id, secret)).toBe(true);
  });

  it('a rotation that keeps losing its race is answered 409 after bounded retries, and writes nothing', async () => {
    const { organizationId } = await newTenant();
    const { deps } = await testStack();
    const { endpoint } = await addEndpoint(deps, organizationId, { url: 'http://127.0.0.1:9/lost', events: 'all' });
    const before = await getEndpoint(deps, organizationId, endpoint.id);
    // Another writer always wins in between: the conditional write fails as DynamoDB answers it.
    const own = await ownDeps();
    const losing = { ...own, doc: { send: (command: { constructor: { name: string } }) => (command.constructor.name === 'UpdateCommand'
      ? Promise.reject(new ConditionalCheckFailedException({ message: 'The conditional request failed', $metadata: {}, Item: { pk: { S: 'x' } } }))
      : own.doc.send(command as never)) } } as unknown as Deps;
    await expect(rotateSecret(losing, organizationId, endpoint.id, { graceHours: 0 })).rejects.toMatchObject({ status: 409 });
    expect(await getEndpoint(deps, organizationId, endpoint.id)).toEqual(before);
  });

  it('an endpoint creation cancelled by a transaction conflict (real DynamoDB; never on DynamoDB Local) is retried and counted once', async () => {
    const { organizationId } = await newTenant();
    const own = await ownDeps();
    let conflicts = 1;
    const conflicting = { ...own, doc: { send: (command: { constructor: { name: string } }) => {
      if (command.constructor.name === 'TransactWriteCommand' && conflicts-- > 0) {
        return Promise.reject(new TransactionCanceledException({ message: 'Transaction cancelled', $metadata: {}, CancellationReasons: [{ Code: 'TransactionConflict' }, { Code: 'None' }] }));
      }
      return own.doc.send(command as never);
    } } } as unknown as Deps;
    await addEndpoint(conflicting, organizationId, { url: 'http://127.0.0.1:9/conflict', events: 'all' });
    expect(await itemsOf('endpoints', organizationId, 'ENDPOINT#')).toHaveLength(1);
    expect(await itemsOf('endpoints', organizationId, 'SLOTS#ENDPOINTS')).toEqual([expect.objectContaining({ count: 1 })]);
  });

  it('an organization from before the slot items: the bounds are made from what it holds on its first write (and a count gone wrong is made again)', async () => {
    const { organizationId } = await newTenant();
    const admin = await settingsClient(organizationId);
    const { deps } = await testStack();
    for (let i = 0; i < 10; i++) expect((await admin.post('/api/settings/webhooks', { url: `http://127.0.0.1:9/old-${i}`, events: ['client.created'] })).status).toBe(201);
    for (let i = 1; i < MAX_LIVE_KEYS; i++) expect((await admin.post('/api/settings/keys', { name: `old ${i}` })).status).toBe(201);
    // As the organization was before this change: no slot items.
    for (const [table, key] of [[deps.tables.endpoints, keys.endpointSlots(organizationId)], [deps.tables.organizations, keys.apiKeySlots(organizationId)]] as const) await deps.doc.send(new DeleteCommand({ TableName: table, Key: key }));

    const endpoints = await Promise.all(Array.from({ length: 3 }, (_, i) => admin.post('/api/settings/webhooks', { url: `http://127.0.0.1:9/new-${i}`, events: ['client.created'] })));
    expect(endpoints.map((a) => a.status)).toEqual([422, 422, 422]);
    const created = await Promise.all(Array.from({ length: 3 }, (_, i) => admin.post('/api/settings/keys', { name: `new ${i}` })));
    expect(created.map((a) => a.status)).toEqual([422, 422, 422]);
    expect(await itemsOf('endpoints', organizationId, 'ENDPOINT#')).toHaveLength(10);
    expect((await listApiKeys(deps, organizationId)).filter((k) => k.status === 'active')).toHaveLength(MAX_LIVE_KEYS);

    // A count that says 0 while endpoints are there (written around endpoints.ts): a removal still works and counts again.
    await deps.doc.send(new UpdateCommand({ TableName: deps.tables.endpoints, Key: keys.endpointSlots(organizationId), UpdateExpression: 'SET #n = :z', ExpressionAttributeNames: { '#n': 'count' }, ExpressionAttributeValues: { ':z': 0 } }));
    const [first] = await itemsOf('endpoints', organizationId, 'ENDPOINT#');
    expect((await admin.delete(`/api/settings/webhooks/${first.id as string}`)).status).toBe(200);
    expect(await itemsOf('endpoints', organizationId, 'SLOTS#ENDPOINTS')).toEqual([expect.objectContaining({ count: 9 })]);
    expect((await admin.post('/api/settings/webhooks', { url: 'http://127.0.0.1:9/refill', events: ['client.created'] })).status).toBe(201);
    expect((await admin.post('/api/settings/webhooks', { url: 'http://127.0.0.1:9/over', events: ['client.created'] })).status).toBe(422);
  });

  it('the CLI is held to the same bounds (one domain): a key past the bound and a rotation with a grace past the secrets bound fail and write nothing', async () => {
    const { organizationId } = await newTenant();
    const { deps } = await testStack();
    for (let i = 1; i < MAX_LIVE_KEYS; i++) await createApiKey(deps, organizationId, `domain ${i}`);
    const refused = await runCli(['keys', 'create', '--org', organizationId, '--name', 'one too many'], { json: false });
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain(`at most ${MAX_LIVE_KEYS}`);
    expect(refused.stdout).not.toMatch(/crm_live_/);
    expect((await listApiKeys(deps, organizationId)).filter((k) => k.status === 'active')).toHaveLength(MAX_LIVE_KEYS);

    const { endpoint } = await addEndpoint(deps, organizationId, { url: 'http://127.0.0.1:9/cli-bound', events: 'all' });
    for (let i = 1; i < MAX_SIGNING_SECRETS; i++) await rotateSecret(deps, organizationId, endpoint.id);
    const rotated = await runCli(['webhooks', 'rotate-secret', '--org', organizationId, '--endpoint', endpoint.id], { json: false });
    expect(rotated.code).not.toBe(0);
    expect(rotated.stdout).not.toContain('whsec_');
    expect((await getEndpoint(deps, organizationId, endpoint.id))!.secrets).toHaveLength(MAX_SIGNING_SECRETS);
  });
});
