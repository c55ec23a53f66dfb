/**
 * The request log's two sources merged (docs/settings.md "Request log"), on DynamoDB Local: the
 * `REQUEST#` rows and the clients that created leads (each its request's row). Rows written on a
 * clock of the test's own, interleaved in time; read back page by page through the settings API's
 * reader (its cursor) and `crm logs`' (listRequests), and through a client read so bounded that it
 * stops early on the CRM's clients.
 */
import { describe, it, expect, beforeAll } from '@jest/globals';
import { PutCommand, QueryCommand } from '@aws-sdk/lib-dynamodb';
import { newTenant, testStack, type Tenant } from '../support/stack.js';
import type { Deps } from '../../../functions/core/platform/deps.js';
import { keys } from '../../../functions/core/platform/model.js';
import { newTimeOrderedId } from '../../../functions/core/platform/ids.js';
import { createLead } from '../../../functions/core/intake/create-lead.js';
import { parseLead } from '../../../functions/core/intake/lead-schema.js';
import { createClient } from '../../../functions/core/crm/entities.js';
import { recordRequest } from '../../../functions/core/tenancy/request-log.js';
import { listRequestLog, listRequests, readRequestLog, type RequestLogPosition } from '../../../functions/core/settings/request-log-read.js';
import { requireOrganization } from '../../../functions/core/tenancy/organizations.js';
import { listRequestHistory } from '../../../functions/core/settings/request-history.js';

type Step = 'lead' | 'get' | '422' | 'crm' | 'crm-api';
let deps: Deps;
const at = (ms: number): Deps => ({ ...deps, now: () => ms });

/** Writes `steps` one second apart from `start`: returns the request ids the log must show, newest first. */
async function history(t: Tenant, start: number, steps: Step[]): Promise<string[]> {
  const auth = { organization: await requireOrganization(deps, t.organizationId), key: { keyId: t.keyId, name: 'test' } };
  const shown: string[] = [];
  for (const [i, step] of steps.entries()) {
    const d = at(start + i * 1000);
    const requestId = `${t.organizationId}-${i}-${step}`;
    if (step === 'lead') {
      const outcome = await createLead(d, auth, parseLead({ name: `Lead ${i}`, email: `lead${i}.${t.organizationId}@example.com` }), { requestId });
      expect(outcome.kind).toBe('created');
    } else if (step === 'crm') {
      await createClient(d, t.organizationId, { name: `Crm ${i}` });
    } else if (step === 'crm-api') {
      // A client the CRM wrote with a time-ordered id, even saying `api`, but no request: not a row.
      const id = newTimeOrderedId('cli', d.now());
      await deps.doc.send(new PutCommand({ TableName: deps.tables.clients, Item: { ...keys.client(t.organizationId, id), entity: 'client', id, source: i % 2 ? 'api' : 'crm', created_at: new Date(d.now()).toISOString() } }));
    } else {
      await recordRequest(d, { requestId, organizationId: t.organizationId, keyId: t.keyId, method: step === 'get' ? 'GET' : 'POST', route: '/api/webhook/leads', status: step === 'get' ? 200 : 422, latencyMs: 4 });
    }
    if (step === 'lead' || step === 'get' || step === '422') shown.unshift(requestId);
  }
  return shown;
}

/** Every page of the settings API's reader at `limit` rows a page: the request ids in order. */
async function allPages(t: Tenant, limit: number): Promise<string[]> {
  const ids: string[] = [];
  let cursor: string | undefined;
  for (let pages = 0; pages < 100; pages++) {
    const { requests, nextCursor } = await listRequestHistory(deps, t.organizationId, { limit, cursor });
    expect(requests.length).toBeLessThanOrEqual(limit);
    ids.push(...requests.map((r) => r.requestId));
    if (!nextCursor) return ids;
    cursor = nextCursor;
  }
  throw new Error('more than 100 pages');
}

beforeAll(async () => {
  ({ deps } = await testStack());
});

describe('the request log read from its rows and from the clients leads created', () => {
  const steps: Step[] = ['lead', 'get', '422', 'lead', 'lead', 'crm', 'get', 'lead', 'crm-api', '422', '422', 'lead', 'get', 'crm-api', 'lead'];
  let t: Tenant;
  let expected: string[];
  beforeAll(async () => {
    t = await newTenant({ name: 'Interleaved Log' });
    expected = await history(t, Date.now() - 3_600_000, steps);
  });

  it('pages across both sources in time order, every row exactly once, at any page size', async () => {
    for (const limit of [2, 3, 50]) expect(await allPages(t, limit)).toEqual(expected);
    expect((await listRequests(deps, t.organizationId, { limit: 4 })).map((r) => r.requestId)).toEqual(expected.slice(0, 4));
    expect((await listRequests(deps, t.organizationId)).map((r) => r.requestId)).toEqual(expected);
  });

  it("shows a created lead's row from its client: its key, POST, 201 and the client; never a row for a client the CRM wrote", async () => {
    const { requests } = await listRequestHistory(deps, t.organizationId, { limit: 50 });
    const leads = requests.filter((r) => r.requestId.endsWith('-lead'));
    expect(leads).toHaveLength(steps.filter((s) => s === 'lead').length);
    for (const row of leads) {
      expect(row).toMatchObject({ method: 'POST', path: '/api/webhook/leads', status: 201, keyId: t.keyId, keyName: 'test', clientId: expect.stringMatching(/^cli_/), durationMs: null });
    }
    expect(requests.filter((r) => r.requestId.endsWith('-get') || r.requestId.endsWith('-422')).every((r) => r.clientId === null && r.durationMs === 4)).toBe(true);
  });

  it('gives every row once when the clients read stops early on the CRM\'s clients (the page then ends where it stopped)', async () => {
    const tight = await newTenant({ name: 'Many Crm Clients' });
    const crowded = await history(tight, Date.now() - 7_200_000, ['get', 'crm-api', 'crm-api', 'lead', 'crm-api', 'crm-api', 'crm-api', '422', 'lead', 'crm-api', 'get', 'crm-api', 'crm-api', 'lead']);
    for (const clientReads of [{ pageSize: 1, maxPages: 1 }, { pageSize: 2, maxPages: 1 }, { pageSize: 1, maxPages: 3 }]) {
      for (const limit of [1, 2, 3]) {
        const ids: string[] = [];
        let before: RequestLogPosition | undefined;
        for (let pages = 0; pages < 100; pages++) {
          const { rows, next } = await readRequestLog(deps, tight.organizationId, { limit, before, clientReads });
          ids.push(...rows.map((r) => r.requestId));
          if (!next) break;
          before = next;
        }
        expect({ clientReads, limit, ids }).toEqual({ clientReads, limit, ids: crowded });
      }
    }
    // `crm logs` stops after its reads and says rows may remain; given enough, it reads them all.
    const cut = await listRequestLog(deps, tight.organizationId, { limit: 50, maxCalls: 2, clientReads: { pageSize: 1, maxPages: 1 } });
    expect(cut).toMatchObject({ more: true, calls: 2 });
    expect(cut.rows.length).toBeLessThan(crowded.length);
    expect(cut.rows.map((r) => r.requestId)).toEqual(crowded.slice(0, cut.rows.length));
    expect(await listRequestLog(deps, tight.organizationId, { limit: 50, maxCalls: 100, clientReads: { pageSize: 1, maxPages: 1 } })).toMatchObject({ more: false, rows: crowded.map((requestId) => expect.objectContaining({ requestId })) });
  });

  it("gives a request's own row, not its client's, when a page holds both (a 5xx answered after the client's write)", async () => {
    const failed = await newTenant({ name: 'Failed After Write' });
    const auth = { organization: await requireOrganization(deps, failed.organizationId), key: { keyId: failed.keyId, name: 'test' } };
    const start = Date.now() - 60_000;
    const requestId = `${failed.organizationId}-failed`;
    const outcome = await createLead(at(start), auth, parseLead({ name: 'Half Done', email: `half.${failed.organizationId}@example.com` }), { requestId });
    expect(outcome.kind).toBe('created');
    await recordRequest(at(start + 50), { requestId, organizationId: failed.organizationId, keyId: failed.keyId, method: 'POST', route: '/api/webhook/leads', status: 500, latencyMs: 60 });
    const { requests } = await listRequestHistory(deps, failed.organizationId, { limit: 50 });
    expect(requests.map((r) => [r.requestId, r.status, r.durationMs])).toEqual([[requestId, 500, 60]]);
    expect((await listRequests(deps, failed.organizationId)).map((r) => r.status)).toEqual([500]);
  });

  it("never shows another organization's rows", async () => {
    const other = await newTenant({ name: 'Other Log' });
    const theirs = await history(other, Date.now() - 1_800_000, ['lead', 'get', '422']);
    const ours = await allPages(t, 50);
    expect(ours.filter((id) => theirs.includes(id))).toEqual([]);
    expect(await allPages(other, 2)).toEqual(theirs);
  });

  it('shows no row older than the retention, from either source', async () => {
    const aged = await newTenant({ name: 'Aged Log' });
    const day = 86_400_000;
    const old = await history(aged, Date.now() - (deps.config.retentionDays + 1) * day, ['lead']);
    // The aged REQUEST# rows with no expiresAt: only the reader's lower bound hides them, not DynamoDB's TTL sweep.
    for (const [i, status] of [200, 422].entries()) {
      const time = new Date(Date.now() - (deps.config.retentionDays + 1) * day + (i + 1) * 1000).toISOString();
      const requestId = `${aged.organizationId}-aged-${status}`;
      await deps.doc.send(new PutCommand({ TableName: deps.tables.requestLog, Item: { ...keys.request(aged.organizationId, time, requestId), at: time, requestId, organizationId: aged.organizationId, keyId: aged.keyId, method: 'POST', route: '/api/webhook/leads', status, latencyMs: 4 } }));
      old.push(requestId);
    }
    const recent = await history(aged, Date.now() - (deps.config.retentionDays - 1) * day, ['lead', 'get']);
    expect(await allPages(aged, 2)).toEqual(recent);
    expect((await listRequests(deps, aged.organizationId)).map((r) => r.requestId)).toEqual(recent);
    expect(old).toHaveLength(3);
  });

  it('refuses a cursor it did not hand out: malformed, a position of the wrong shape, or longer than any it writes', async () => {
    const json = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');
    const long = json([`${keys.requestPrefix}${new Date().toISOString()}#${'a'.repeat(2048)}`, null]);
    expect(long.length).toBeGreaterThan(2048);
    for (const cursor of ['nope', Buffer.from('REQUEST#x').toString('base64url'), json(['CLIENT#a', null]), json(['REQUEST#', null]), json([null, 'CLIENT#']), json([null, `CLIENT#cli_${'a'.repeat(900)}`]), long]) {
      await expect(listRequestHistory(deps, t.organizationId, { limit: 2, cursor })).rejects.toMatchObject({ status: 422 });
    }
  });

  it('reads on from a cursor of the previous format (a REQUEST# sort key alone): the rows older than it, from both sources', async () => {
    const { Items } = await deps.doc.send(new QueryCommand({ TableName: deps.tables.requestLog, KeyConditionExpression: 'pk = :pk AND begins_with(sk, :r)', ExpressionAttributeValues: { ':pk': keys.org(t.organizationId).pk, ':r': keys.requestPrefix } }));
    const row = Items!.find((i) => String(i.requestId).endsWith('-6-get'))!;
    const from = expected.indexOf(String(row.requestId));
    expect(from).toBeGreaterThan(0);
    const ids: string[] = [];
    let cursor: string | undefined = Buffer.from(String(row.sk)).toString('base64url');
    while (cursor) {
      const page = await listRequestHistory(deps, t.organizationId, { limit: 2, cursor });
      ids.push(...page.requests.map((r) => r.requestId));
      cursor = page.nextCursor ?? undefined;
    }
    expect(ids).toEqual(expected.slice(from + 1));
    expect(ids.some((id) => id.endsWith('-lead'))).toBe(true);
  });

  it('answers an empty last page to a cursor older than the retention (a page kept open past it), in either format', async () => {
    const old = `${keys.requestPrefix}2020-01-01T00:00:00.000Z#req-1`;
    const json = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');
    for (const cursor of [json([old, 'CLIENT#cli_000000000~']), json([null, 'CLIENT#cli_0000000000000000000000A']), json([old, null]), Buffer.from(old).toString('base64url')]) {
      expect(await listRequestHistory(deps, t.organizationId, { limit: 2, cursor })).toEqual({ requests: [], nextCursor: null });
    }
  });
});
