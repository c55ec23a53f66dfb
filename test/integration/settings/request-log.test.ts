/**
 * The request log through HTTP (docs/settings.md "Request log"): a created lead's row is its client,
 * with no `REQUEST#` item written for it, while every other call keeps its row: a GET verify, a
 * 422, an Idempotency-Key replay, a double-submit. Paging, retention, isolation and the CRM's
 * clients: test/integration/tenancy/request-log-read.test.ts.
 */
import { describe, it, expect } from '@jest/globals';
import { itemsOf, newTenant, postLead, testStack } from '../support/stack.js';
import { settingsClient } from './support.js';

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
});
