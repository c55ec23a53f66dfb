/**
 * The endpoints store's contract (functions/core/delivery/endpoint-store.ts): every behaviour runs
 * against the DynamoDB store (the endpoints table on the suite's DynamoDB Local) and its in-memory
 * twin (test/support/memory-endpoint-store.ts), which must answer alike: the bound on endpoints,
 * the count made for an organization from before it, versioned secrets, conditional header
 * changes, the circuit's conditional transitions, the throttle lanes, the fan-out's projection.
 * The twin's fault injection is pinned at the end.
 */
import { describe, it, expect } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import { testStack } from '../support/stack.js';
import type { WebhookEndpoint } from '../../../functions/core/platform/model.js';
import { LostRace } from '../../../functions/core/platform/optimistic.js';
import { dynamoEndpointStore, type EndpointStore } from '../../../functions/core/delivery/endpoint-store.js';
import { MemoryEndpointStore } from '../../support/memory-endpoint-store.js';

const T0 = Date.parse('2026-11-26T09:00:00.000Z');
const at = (ms: number) => new Date(ms).toISOString();

function newEndpoint(organizationId: string, overrides: Partial<WebhookEndpoint> = {}): WebhookEndpoint {
  return {
    id: `ep_${randomUUID().slice(0, 12)}`, organizationId, url: 'https://receiver.example.com/hook', events: ['client.created'],
    secrets: [{ secret: 'whsec_first', createdAt: at(T0) }], secretsVersion: 1, enabled: true, createdAt: at(T0), headers: {},
    ...overrides,
  };
}

const implementations: [string, () => Promise<EndpointStore>][] = [
  ['DynamoDB', async () => dynamoEndpointStore((await testStack()).deps)],
  ['in memory', async () => new MemoryEndpointStore()],
];

describe.each(implementations)('the endpoints store (%s)', (_name, make) => {
  const org = () => `org_epstore_${randomUUID().slice(0, 8)}`;
  /** An organization whose endpoint count exists (its first create made it), with `n` endpoints. */
  async function given(store: EndpointStore, n = 1, max = 10) {
    const organizationId = org();
    const endpoints = Array.from({ length: n }, () => newEndpoint(organizationId));
    await expect(store.createEndpoint(endpoints[0] ?? newEndpoint(organizationId), max)).rejects.toBeInstanceOf(LostRace); // the count made
    for (const e of endpoints) expect(await store.createEndpoint(e, max)).toBe('created');
    return { organizationId, endpoints };
  }

  it('makes the count on an organization’s first add (a lost race to read again), then bounds the endpoints: a refused add writes nothing', async () => {
    const store = await make();
    const { organizationId } = await given(store, 2, 2);
    const third = newEndpoint(organizationId);
    expect(await store.createEndpoint(third, 2)).toBe('full');
    expect(await store.getEndpoint(organizationId, third.id)).toBeUndefined();
    expect(await store.listEndpoints(organizationId)).toHaveLength(2);
  });

  it('reads an endpoint back as written, and lists an organization’s endpoints by id; the fan-out’s read has routing fields only', async () => {
    const store = await make();
    const organizationId = org();
    const endpoint = newEndpoint(organizationId, { description: 'CRM', headers: { 'x-key': 'v' }, rateLimitPerSecond: 3 });
    await expect(store.createEndpoint(endpoint, 10)).rejects.toBeInstanceOf(LostRace);
    expect(await store.createEndpoint(endpoint, 10)).toBe('created');
    const others = [newEndpoint(organizationId), newEndpoint(organizationId)];
    for (const e of others) await store.createEndpoint(e, 10);
    expect(await store.getEndpoint(organizationId, endpoint.id)).toEqual(endpoint);
    const listed = await store.listEndpoints(organizationId);
    expect(listed.map((e) => e.id)).toEqual([endpoint, ...others].map((e) => e.id).sort());
    const routing = (await store.listEndpoints(organizationId, { routingOnly: true })).find((e) => e.id === endpoint.id)!;
    expect(routing).toEqual({ id: endpoint.id, organizationId, url: endpoint.url, events: endpoint.events, enabled: true, createdAt: endpoint.createdAt, secrets: [] });
    expect(await store.listEndpoints(org())).toEqual([]);
  });

  it('the fan-out’s read answers the endpoints’ routing fields and the hand-off marker together; a mark never shortens the window, and the other reads never see it', async () => {
    const store = await make();
    const { organizationId, endpoints } = await given(store, 2);
    const routing = (e: WebhookEndpoint) => ({ id: e.id, organizationId, url: e.url, events: e.events, enabled: true, createdAt: e.createdAt, secrets: [] });
    expect(await store.fanOutRead(organizationId)).toEqual({ endpoints: endpoints.map(routing).sort((a, b) => (a.id < b.id ? -1 : 1)), handOffUntil: 0 });
    await store.markHandOff(organizationId, T0 + 10_000);
    await store.markHandOff(organizationId, T0 + 5_000); // an older window, written late: refused, silently
    const view = await store.fanOutRead(organizationId);
    expect(view.handOffUntil).toBe(T0 + 10_000);
    expect(view.endpoints).toHaveLength(2);
    await store.markHandOff(organizationId, T0 + 20_000);
    expect((await store.fanOutRead(organizationId)).handOffUntil).toBe(T0 + 20_000);
    // Not an endpoint: the lists, the count and the delivery read are as before.
    expect((await store.listEndpoints(organizationId)).map((e) => e.id).sort()).toEqual(endpoints.map((e) => e.id).sort());
    expect((await store.listEndpoints(organizationId, { routingOnly: true }))).toHaveLength(2);
    // An organization with a marker and no endpoint (its last one removed) reads as such.
    const other = org();
    await store.markHandOff(other, T0 + 1_000);
    expect(await store.fanOutRead(other)).toEqual({ endpoints: [], handOffUntil: T0 + 1_000 });
  });

  it('updates only what it names; headers whole only while none are stored, by name only at the count read; never brings a removed endpoint back', async () => {
    const store = await make();
    const organizationId = org();
    const endpoint = newEndpoint(organizationId, { description: 'old', rateLimitPerSecond: 2 });
    delete (endpoint as Partial<WebhookEndpoint>).headers; // from before headers
    await expect(store.createEndpoint(endpoint, 10)).rejects.toBeInstanceOf(LostRace);
    await store.createEndpoint(endpoint, 10);
    const updated = await store.updateEndpoint(endpoint, { set: { url: 'https://new.example.com/h', enabled: false }, remove: ['description', 'rateLimitPerSecond'], headers: { whole: { 'x-a': '1' } } });
    expect(updated).toEqual({ ...endpoint, url: 'https://new.example.com/h', enabled: false, description: undefined, rateLimitPerSecond: undefined, headers: { 'x-a': '1' } } as unknown as WebhookEndpoint);
    expect(JSON.parse(JSON.stringify(updated))).toEqual(JSON.parse(JSON.stringify(await store.getEndpoint(organizationId, endpoint.id))));
    // A second whole write finds headers stored: a lost race (read again).
    await expect(store.updateEndpoint(endpoint, { set: {}, remove: [], headers: { whole: { 'x-b': '2' } } })).rejects.toBeInstanceOf(LostRace);
    // By name, at the count read: a stale count loses.
    await expect(store.updateEndpoint(endpoint, { set: {}, remove: [], headers: { changes: { 'x-b': '2' }, count: 0 } })).rejects.toBeInstanceOf(LostRace);
    const both = await store.updateEndpoint(endpoint, { set: {}, remove: [], headers: { changes: { 'x-b': '2', 'x-a': null }, count: 1 } });
    expect((both as WebhookEndpoint).headers).toEqual({ 'x-b': '2' });
    await store.removeEndpoint(endpoint);
    expect(await store.updateEndpoint(endpoint, { set: { enabled: true }, remove: [] })).toBe('missing');
    expect(await store.getEndpoint(organizationId, endpoint.id)).toBeUndefined();
  });

  it('a re-enable clears the health marks, a closed circuit clears the circuit', async () => {
    const store = await make();
    const { endpoints: [endpoint] } = await given(store);
    await store.markFailing(endpoint, at(T0));
    await store.markFailing(endpoint, at(T0 + 1000)); // only the first failure after a success marks
    expect(await store.disableEndpoint(endpoint, 'failing too long')).toBe(true);
    expect(await store.disableEndpoint(endpoint, 'again')).toBe(false); // only the write that disables it says so (its notice goes once)
    await store.countFailure(endpoint);
    await store.openCircuit(endpoint, at(T0 + 60_000));
    const sick = (await store.getEndpoint(endpoint.organizationId, endpoint.id))!;
    expect(sick).toMatchObject({ enabled: false, failingSince: at(T0), disabledReason: 'failing too long', circuit: { failures: 1, opens: 1, until: at(T0 + 60_000) } });
    const healed = await store.updateEndpoint(endpoint, { set: { enabled: true }, remove: [], clearHealth: true, closeCircuit: true });
    expect(healed).toEqual({ ...endpoint, enabled: true });
    await store.markFailing(endpoint, at(T0 + 2000));
    await store.clearFailing(endpoint);
    expect((await store.getEndpoint(endpoint.organizationId, endpoint.id))!.failingSince).toBeUndefined();
  });

  it('removes the endpoint with its throttle lanes and gives its slot back', async () => {
    const store = await make();
    const { organizationId, endpoints: [endpoint] } = await given(store, 1, 1);
    expect((await store.claimThrottleLane(endpoint, { lane: 0, lanes: 1, now: T0, windowMs: 1000 })).taken).toBe(true);
    expect(await store.createEndpoint(newEndpoint(organizationId), 1)).toBe('full');
    expect(await store.removeEndpoint(endpoint)).toBe('removed');
    expect(await store.removeEndpoint(endpoint)).toBe('missing');
    // The lanes went with it: the same id's lane is free at once.
    expect((await store.claimThrottleLane(endpoint, { lane: 0, lanes: 1, now: T0 + 10, windowMs: 1000 })).taken).toBe(true);
    expect(await store.createEndpoint(newEndpoint(organizationId), 1)).toBe('created');
  });

  it('replaces the signing secrets only at the version read (grace expiries kept as given)', async () => {
    const store = await make();
    const { endpoints: [endpoint] } = await given(store);
    const secrets = [{ secret: 'whsec_second', createdAt: at(T0 + 1000) }, { secret: 'whsec_first', createdAt: at(T0), expiresAt: at(T0 + 86_400_000) }];
    await expect(store.rotateSecret(endpoint, secrets, 0)).rejects.toBeInstanceOf(LostRace);
    const rotated = await store.rotateSecret(endpoint, secrets, 1);
    expect(rotated).toMatchObject({ secrets, secretsVersion: 2 });
    await expect(store.rotateSecret(endpoint, secrets.slice(0, 1), 1)).rejects.toBeInstanceOf(LostRace); // the other rotation won
    expect(await store.rotateSecret({ organizationId: endpoint.organizationId, id: 'ep_none' }, secrets, 1)).toBe('missing');
  });

  it('an endpoint from before versioned secrets rotates once from version 0', async () => {
    const store = await make();
    const organizationId = org();
    const endpoint = newEndpoint(organizationId);
    delete (endpoint as Partial<WebhookEndpoint>).secretsVersion;
    await expect(store.createEndpoint(endpoint, 10)).rejects.toBeInstanceOf(LostRace);
    await store.createEndpoint(endpoint, 10);
    expect(await store.rotateSecret(endpoint, [{ secret: 'whsec_b', createdAt: at(T0) }], 0)).toMatchObject({ secretsVersion: 1 });
    await expect(store.rotateSecret(endpoint, [{ secret: 'whsec_c', createdAt: at(T0) }], 0)).rejects.toBeInstanceOf(LostRace);
  });

  it('counts failures, opens a closed circuit only, gives the probe to one claim, re-opens and closes it', async () => {
    const store = await make();
    const { organizationId, endpoints: [endpoint] } = await given(store);
    const circuit = async () => (await store.getEndpoint(organizationId, endpoint.id))!.circuit;
    expect(await store.countFailure(endpoint)).toBe(1);
    expect(await store.countFailure(endpoint)).toBe(2);
    expect(await store.countFailure({ organizationId, id: 'ep_none' })).toBeUndefined();
    expect(await store.openCircuit(endpoint, at(T0 + 30_000))).toBe(true);
    expect(await store.openCircuit(endpoint, at(T0 + 90_000))).toBe(false); // a late failure does not extend it
    expect(await circuit()).toEqual({ failures: 2, opens: 1, until: at(T0 + 30_000) });
    // Half-open: one claim wins (the other finds `until` moved).
    expect(await store.claimProbe(endpoint, at(T0 + 30_000), at(T0 + 45_000))).toBe(true);
    expect(await store.claimProbe(endpoint, at(T0 + 30_000), at(T0 + 46_000))).toBe(false);
    expect(await circuit()).toEqual({ failures: 2, opens: 1, until: at(T0 + 45_000), probing: true });
    // Given back: only that claim.
    expect(await store.releaseProbe(endpoint, at(T0 + 46_000), at(T0 + 30_000))).toBe(false);
    expect(await store.releaseProbe(endpoint, at(T0 + 45_000), at(T0 + 30_000))).toBe(true);
    expect(await circuit()).toEqual({ failures: 2, opens: 1, until: at(T0 + 30_000) });
    expect(await store.claimProbe(endpoint, at(T0 + 30_000), at(T0 + 45_000))).toBe(true);
    await store.reopenCircuit(endpoint, at(T0 + 150_000), 2);
    expect(await circuit()).toEqual({ failures: 2, opens: 2, until: at(T0 + 150_000) });
    await store.closeCircuit(endpoint, at(T0 + 600_000));
    expect(await circuit()).toEqual({ failures: 0, opens: 0, slowUntil: at(T0 + 600_000) });
    await store.closeCircuit(endpoint);
    expect(await circuit()).toBeUndefined();
  });

  it('marks an endpoint slow unless a later mark is stored', async () => {
    const store = await make();
    const { organizationId, endpoints: [endpoint] } = await given(store);
    expect(await store.markSlow(endpoint, at(T0 + 60_000), at(T0))).toBe(true);
    expect(await store.markSlow(endpoint, at(T0 + 70_000), at(T0 + 10_000))).toBe(false);
    expect(await store.markSlow(endpoint, at(T0 + 120_000), at(T0 + 61_000))).toBe(true);
    expect((await store.getEndpoint(organizationId, endpoint.id))!.circuit).toEqual({ failures: 0, opens: 0, slowUntil: at(T0 + 120_000) });
    expect(await store.markSlow({ organizationId, id: 'ep_none' }, at(T0), at(T0))).toBe(false);
  });

  it('keeps the last receiver check on the endpoint, the next replacing it; never for a removed endpoint', async () => {
    const store = await make();
    const { organizationId, endpoints: [endpoint] } = await given(store);
    const first = { verdict: 'fail' as const, checkedAt: at(T0), rules: [{ rule: 'signed', status: null, ok: false, note: 'ETIMEDOUT' }] };
    const second = { verdict: 'pass' as const, checkedAt: at(T0 + 60_000), rules: [{ rule: 'signed', status: 204, ok: true }] };
    expect(await store.recordCheck(endpoint, first)).toBe(true);
    expect((await store.getEndpoint(organizationId, endpoint.id))!.lastCheck).toEqual(first);
    expect(await store.recordCheck(endpoint, second)).toBe(true);
    expect((await store.listEndpoints(organizationId))[0].lastCheck).toEqual(second);
    expect(await store.recordCheck({ organizationId, id: 'ep_none' }, first)).toBe(false);
  });

  it('takes a throttle lane at most once a window; a refusal answers every lane’s last admission', async () => {
    const store = await make();
    const ref = { organizationId: org(), id: `ep_${randomUUID().slice(0, 8)}` };
    const claim = (lane: number, now: number) => store.claimThrottleLane(ref, { lane, lanes: 2, now, windowMs: 1000 });
    expect(await claim(0, T0)).toEqual({ taken: true });
    expect(await claim(0, T0 + 999)).toEqual({ taken: false, lanes: [T0, 0] });
    expect(await claim(1, T0 + 500)).toEqual({ taken: true });
    expect(await claim(1, T0 + 600)).toEqual({ taken: false, lanes: [T0, T0 + 500] });
    expect(await claim(0, T0 + 1000)).toEqual({ taken: true });
  });

  it('makes the count again when it says 0 while an endpoint is there (written around the store)', async () => {
    const store = await make();
    const { organizationId, endpoints: [a] } = await given(store, 1, 10);
    const b = newEndpoint(organizationId);
    await store.createEndpoint(b, 10);
    await store.removeEndpoint(a);
    await store.removeEndpoint(b);
    // An endpoint item written around the store, the count at 0.
    const stray = newEndpoint(organizationId);
    if (store instanceof MemoryEndpointStore) {
      store.items.set(`ORG#${organizationId}\u0000ENDPOINT#${stray.id}`, { pk: `ORG#${organizationId}`, sk: `ENDPOINT#${stray.id}`, entity: 'endpoint', ...stray });
    } else {
      const { PutCommand } = await import('@aws-sdk/lib-dynamodb');
      const { deps } = await testStack();
      await deps.doc.send(new PutCommand({ TableName: deps.tables.endpoints, Item: { pk: `ORG#${organizationId}`, sk: `ENDPOINT#${stray.id}`, entity: 'endpoint', ...stray } }));
    }
    await expect(store.removeEndpoint(stray)).rejects.toBeInstanceOf(LostRace);
    expect(await store.removeEndpoint(stray)).toBe('removed');
    expect(await store.listEndpoints(organizationId)).toEqual([]);
  });
});

describe('the endpoints twin’s fault injection', () => {
  it('throws a throttle, fails a condition, or loses a race, the given number of times, then behaves', async () => {
    const store = new MemoryEndpointStore();
    const organizationId = 'org_faults';
    const endpoint = newEndpoint(organizationId);
    await expect(store.createEndpoint(endpoint, 10)).rejects.toBeInstanceOf(LostRace);
    await store.createEndpoint(endpoint, 10);
    store.inject('countFailure', 'throttle', 2);
    await expect(store.countFailure(endpoint)).rejects.toMatchObject({ name: 'ThrottlingException' });
    await expect(store.countFailure(endpoint)).rejects.toMatchObject({ name: 'ThrottlingException' });
    expect(await store.countFailure(endpoint)).toBe(1);
    store.inject('openCircuit', 'condition');
    expect(await store.openCircuit(endpoint, at(T0))).toBe(false);
    expect(await store.openCircuit(endpoint, at(T0))).toBe(true);
    store.inject('claimThrottleLane', 'condition');
    expect(await store.claimThrottleLane(endpoint, { lane: 0, lanes: 1, now: T0, windowMs: 1000 })).toEqual({ taken: false, lanes: [0] });
    store.inject('rotateSecret', 'lost-race');
    await expect(store.rotateSecret(endpoint, [], 1)).rejects.toBeInstanceOf(LostRace);
    store.inject('createEndpoint', 'lost-race');
    await expect(store.createEndpoint(newEndpoint(organizationId), 10)).rejects.toBeInstanceOf(LostRace);
    expect(await store.listEndpoints(organizationId)).toHaveLength(1);
  });
});
