/**
 * The request log through HTTP (docs/settings.md "Request log"): a created lead's row is its client,
 * with no `REQUEST#` item written for it, while every other call keeps its row: a GET verify, a
 * 422, an Idempotency-Key replay, a double-submit. Paging, retention, isolation and the CRM's
 * clients: test/integration/settings/request-log-read.test.ts.
 */
import { describe, it, expect } from '@jest/globals';
import { mockClient } from 'aws-sdk-client-mock';
import { QueryCommand, type QueryCommandInput } from '@aws-sdk/lib-dynamodb';
import type { APIGatewayProxyEvent } from 'aws-lambda';
import { itemsOf, newTenant, ownDeps, postLead, testStack } from '../support/stack.js';
import { settingsClient } from './support.js';
import { tokenSecret } from '../support/settings-links.js';
import { httpAdapter } from '../../../functions/adapters/http-adapter.js';
import { settingsApi } from '../../../functions/core/settings/handle-settings-request.js';
import { lambdaContext } from '../../../lib/local/lambda-context.js';

interface Row { requestId: string; method: string; path: string; status: number; keyId: string | null; keyName: string | null; clientId: string | null; detail: string | null }

describe('the request log of the lead endpoint', () => {
  it("shows a created lead from its client, with no row of its own written; every other call's row is written", async () => {
    const t = await newTenant({ name: 'Logged Leads' });
    const admin = await settingsClient(t.organizationId);
    const { api } = await testStack();
    const lead = await postLead(t.key, { name: 'Ada Lovelace', email: 'ada.log@example.com' }, { 'Idempotency-Key': 'lead-1' });
    expect(lead.status).toBe(201);
    const { id: clientId } = (await lead.json()) as { id: string };
    const replay = await postLead(t.key, { name: 'Ada Lovelace', email: 'ada.log@example.com' }, { 'Idempotency-Key': 'lead-1' });
    expect([replay.status, replay.headers.get('idempotent-replayed')]).toEqual([201, 'true']);
    const repeat = await postLead(t.key, { name: 'Ada Lovelace', email: 'ada.log@example.com' });
    expect(repeat.status).toBe(200);
    const verify = await api('/api/webhook/leads', { headers: { 'X-API-Key': t.key } });
    expect(verify.status).toBe(200);
    const invalid = await postLead(t.key, {});
    expect(invalid.status).toBe(422);
    const id = (r: Response) => r.headers.get('x-request-id')!;

    const { requests } = (await admin.get('/api/settings/requests')).json<{ requests: Row[] }>();
    expect(requests.map((r) => [r.requestId, r.status])).toEqual([[id(invalid), 422], [id(verify), 200], [id(repeat), 200], [id(replay), 201], [id(lead), 201]]);
    expect(requests.at(-1)).toMatchObject({ method: 'POST', path: '/api/webhook/leads', keyId: t.keyId, keyName: 'test', clientId, detail: null });
    // The lead's row is its client: no REQUEST# item names its request; the others' items are there.
    const written = (await itemsOf('requestLog', t.organizationId, 'REQUEST#')).map((r) => r.requestId);
    expect(written.sort()).toEqual([id(invalid), id(verify), id(repeat), id(replay)].sort());
    const [client] = await itemsOf('clients', t.organizationId, 'CLIENT#');
    expect(client).toMatchObject({ id: clientId, request_id: id(lead), key_id: t.keyId });
  });

  it('answers 500 problem+json, not a page of the request rows alone, when the clients Query fails (throttled, denied)', async () => {
    const t = await newTenant({ name: 'Clients Unreadable' });
    const admin = await settingsClient(t.organizationId);
    const invalid = await postLead(t.key, {});
    expect(invalid.status).toBe(422);
    const deps = await ownDeps();
    const realSend = deps.doc.send.bind(deps.doc) as (command: unknown) => Promise<unknown>;
    const mock = mockClient(deps.doc);
    mock.send.callThrough();
    let faulted = 0;
    mock.on(QueryCommand).callsFake(async (input: QueryCommandInput) => {
      if (input.TableName !== deps.tables.clients) return realSend(new QueryCommand(input));
      faulted += 1;
      throw Object.assign(new Error('Rate of requests exceeds the allowed throughput.'), { name: 'ProvisionedThroughputExceededException', $metadata: { httpStatusCode: 400 } });
    });
    try {
      const handler = httpAdapter(settingsApi({ tokenSecret }), { deps: async () => deps, sameOrigin: true });
      const event = {
        httpMethod: 'GET', path: '/api/settings/requests', resource: '/api/settings/requests',
        headers: { Authorization: `Bearer ${admin.token}` }, queryStringParameters: { limit: '25' }, body: null,
        requestContext: { requestId: 'req-clients-fault', identity: { sourceIp: '127.0.0.1' } },
      } as unknown as APIGatewayProxyEvent;
      const res = await handler(event, lambdaContext('settingsApi'));
      expect(faulted).toBeGreaterThan(0);
      expect(res.statusCode).toBe(500);
      expect(res.headers?.['Content-Type'] ?? res.headers?.['content-type']).toMatch(/^application\/problem\+json/);
      expect(JSON.parse(res.body)).not.toHaveProperty('requests');
    } finally {
      mock.restore();
    }
    // The same read without the fault gives the row the failed one would have left out.
    const { requests } = (await admin.get('/api/settings/requests')).json<{ requests: Row[] }>();
    expect(requests.map((r) => r.status)).toEqual([422]);
  });
});
