/**
 * The settings list of deliveries reads summaries, never payloads: an organization's events (up to
 * 240 KiB each) are not fetched on every page of the list; and it reads a page from the `byCreated`
 * index, never the organization's whole partition. The route runs here on the test stack's
 * DynamoDB Local with a document client of its own, whose commands the test watches.
 */
import { describe, it, expect, afterAll } from '@jest/globals';
import { newTenant, ownDeps } from '../support/stack.js';
import { Receiver } from '../support/receiver.js';
import { settingsApi } from '../../../functions/core/settings/handle-settings-request.js';
import { scanFailed } from '../../../functions/core/settings/bulk-redelivery.js';
import { settingsClient } from './support.js';
import { tokenSecret } from '../support/settings-links.js';

const receiver = new Receiver();
afterAll(() => receiver.stop());

describe('GET /api/settings/deliveries', () => {
  it('lists summaries without reading any event payload', async () => {
    await receiver.start();
    const { organizationId } = await newTenant();
    const admin = await settingsClient(organizationId);
    const { endpoint } = (await admin.post('/api/settings/webhooks', { url: `${receiver.url}/list`, events: ['client.created'] })).json<{ endpoint: { id: string } }>();
    const tested: string[] = [];
    for (let i = 0; i < 3; i++) {
      const answer = await admin.post(`/api/settings/webhooks/${endpoint.id}/test`);
      expect(answer.status).toBe(200);
      tested.push(answer.json<{ delivery: { id: string } }>().delivery.id);
    }

    const deps = await ownDeps();
    const commands: { name: string; input: Record<string, unknown> }[] = [];
    const send = deps.doc.send.bind(deps.doc);
    deps.doc.send = ((command: { input: Record<string, unknown> }) => {
      commands.push({ name: command.constructor.name, input: command.input });
      return send(command as unknown as Parameters<typeof send>[0]);
    }) as unknown as typeof deps.doc.send;
    const route = settingsApi({ tokenSecret });
    const outcome = await route(deps, {
      method: 'GET', headers: { authorization: `Bearer ${admin.token}` }, body: undefined, requestId: 'req-list',
      resource: '/api/settings/deliveries', pathParameters: {}, query: { limit: '2' },
    });

    expect(outcome).toMatchObject({ status: 200 });
    const { deliveries, nextCursor } = (outcome as { body: { deliveries: { id: string; endpointId: string; status: string; payload?: unknown }[]; nextCursor: string | null } }).body;
    expect(deliveries).toHaveLength(2);
    expect(nextCursor).toEqual(expect.any(String));
    for (const d of deliveries) {
      expect(tested).toContain(d.id);
      expect(d).toMatchObject({ endpointId: endpoint.id, status: 'delivered' });
      expect(d).not.toHaveProperty('payload');
    }
    // The deliveries: a query of the index (at most a page's worth), then the records by key: never an event item, never the partition.
    const onDeliveries = commands.filter((c) => c.input.TableName === deps.tables.deliveries || Object.keys((c.input.RequestItems ?? {}) as object).includes(deps.tables.deliveries));
    const queries = onDeliveries.filter((c) => c.name === 'QueryCommand');
    expect(queries.length).toBeGreaterThan(0);
    for (const q of queries) expect({ index: q.input.IndexName, limit: q.input.Limit }).toEqual({ index: 'byCreated', limit: expect.any(Number) });
    const readKeys = onDeliveries.filter((c) => c.name === 'BatchGetCommand')
      .flatMap((c) => ((c.input.RequestItems as Record<string, { Keys: { sk: string }[] }>)[deps.tables.deliveries].Keys).map((k) => k.sk));
    expect(readKeys.length).toBeGreaterThan(0);
    for (const sk of readKeys) expect(sk).toMatch(/^DELIVERY#/);

    // The next page continues where the first ended: the third delivery, then no cursor.
    const second = await route(deps, {
      method: 'GET', headers: { authorization: `Bearer ${admin.token}` }, body: undefined, requestId: 'req-list-2',
      resource: '/api/settings/deliveries', pathParameters: {}, query: { limit: '2', cursor: nextCursor! },
    });
    const rest = (second as { body: { deliveries: { id: string }[]; nextCursor: string | null } }).body;
    expect(rest.nextCursor).toBeNull();
    expect([...deliveries, ...rest.deliveries].map((d) => d.id).sort()).toEqual([...tested].sort());

    // Filters: a known status narrows the list; an unknown one is a 422, not an empty list.
    const delivered = await admin.get('/api/settings/deliveries?status=delivered');
    expect(delivered.json<{ deliveries: { id: string }[] }>().deliveries.map((d) => d.id).sort()).toEqual([...tested].sort());
    expect((await admin.get('/api/settings/deliveries?status=failed')).json<{ deliveries: unknown[] }>().deliveries).toEqual([]);
    const bogus = await admin.get('/api/settings/deliveries?status=deliverd');
    expect(bogus.status).toBe(422);
    expect(bogus.json()).toMatchObject({ errors: [expect.objectContaining({ field: 'status' })] });
  });
});

describe('the bulk re-delivery reader (settings/bulk-redelivery.ts)', () => {
  it('reads the index with the time range as its key condition and says when it stopped before the end (a lower bound)', async () => {
    await receiver.start();
    const { organizationId } = await newTenant();
    const admin = await settingsClient(organizationId);
    const { endpoint } = (await admin.post('/api/settings/webhooks', { url: `${receiver.url}/bulk`, events: ['client.created'] })).json<{ endpoint: { id: string } }>();
    const since = new Date(Date.now() - 60_000).toISOString();
    for (let i = 0; i < 3; i++) expect((await admin.post(`/api/settings/webhooks/${endpoint.id}/test`)).status).toBe(200);

    const deps = await ownDeps();
    const queries: Record<string, unknown>[] = [];
    const send = deps.doc.send.bind(deps.doc);
    deps.doc.send = ((command: { input: Record<string, unknown> }) => {
      if (command.constructor.name === 'QueryCommand') queries.push(command.input);
      return send(command as unknown as Parameters<typeof send>[0]);
    }) as unknown as typeof deps.doc.send;
    // Three delivered ones, none failed: with a budget of 2 keys the reader cannot know there is none.
    expect(await scanFailed(deps, organizationId, { since }, new Set(), { budget: 2 })).toEqual({ redeliverable: [], retrying: 0, hollow: 0, endpointDisabled: 0, more: true });
    expect(await scanFailed(deps, organizationId, { since }, new Set())).toEqual({ redeliverable: [], retrying: 0, hollow: 0, endpointDisabled: 0, more: false });
    for (const q of queries) expect({ index: q.IndexName, key: q.KeyConditionExpression }).toEqual({ index: 'byCreated', key: 'pk = :pk AND createdAt >= :since' });
  });
});
