/**
 * POST /api/webhook/leads over HTTP against the local stack (docs/leads.md, docs/architecture.md#errors): every field rule,
 * both name forms, custom fields, SMS consent, each error status, idempotent replay, billing, and
 * that a rejected request writes nothing (tables read back).
 */
import { describe, it, expect, beforeAll } from '@jest/globals';
import { GetCommand, PutCommand, QueryCommand } from '@aws-sdk/lib-dynamodb';
import { itemsOf, newTenant, postLead, testStack, type Tenant } from '../support/stack.js';
import { keys } from '../../../functions/core/platform/model.js';
import { runIdempotent } from '../../../functions/core/intake/idempotency.js';
import { clientSchema } from '../../../functions/core/intake/lead-schema.js';
import { lambdaContext } from '../../../lib/local/lambda-context.js';
import { listNotifications } from '../../../functions/core/crm/notifications.js';
import { dailyUsage, requireOrganization } from '../../../functions/core/tenancy/organizations.js';
import { createLead } from '../../../functions/core/intake/create-lead.js';
import { parseLead } from '../../../functions/core/intake/lead-schema.js';
import { newId } from '../../../functions/core/platform/ids.js';
import type { Deps } from '../../../functions/core/platform/deps.js';

interface Problem { status: number; title: string; type: string; detail: string; errors?: { field: string; message: string }[] }

let t: Tenant;
beforeAll(async () => {
  t = await newTenant({ name: 'Intake Plumbing' });
});

async function created(body: unknown, headers: Record<string, string> = {}) {
  const res = await postLead(t.key, body, headers);
  expect(res.status).toBe(201);
  const client = (await res.json()) as Record<string, unknown> & { id: string };
  expect(clientSchema.safeParse(client).error).toBeUndefined(); // the documented 201 shape (a strict object)
  return client;
}

async function problem(res: Response, status: number): Promise<Problem> {
  expect(res.status).toBe(status);
  expect(res.headers.get('content-type')).toBe('application/problem+json');
  const body = (await res.json()) as Problem;
  expect(body).toMatchObject({ status, type: expect.stringMatching(/^https:\/\//), title: expect.any(String), detail: expect.any(String) });
  return body;
}

/** Snapshot of everything a request could write for an organization (request log aside). */
async function writesOf(tenant: Tenant) {
  const { deps } = await testStack();
  const org = await deps.doc.send(new GetCommand({ TableName: deps.tables.organizations, Key: keys.org(tenant.organizationId), ConsistentRead: true }));
  return {
    clients: await itemsOf('clients', tenant.organizationId),
    notifications: await listNotifications(deps, tenant.organizationId),
    usage: await dailyUsage(deps, tenant.organizationId, new Date().toISOString().slice(0, 10)),
    wallet: org.Item?.walletMicros,
  };
}

describe('creating a lead', () => {
  it('stores a client with status lead, returns it as 201 and notifies the team in the same write', async () => {
    const client = await created({ first_name: '  Ada ', last_name: 'Lovelace', email: 'Ada@Example.COM', phone: '(415) 555-0100', notes: 'Kitchen sink', address: '1 Main St', service: 'Leak' });
    expect(client).toMatchObject({
      id: expect.stringMatching(/^cli_/), organization_id: t.organizationId, status: 'lead',
      first_name: 'Ada', last_name: 'Lovelace', email: 'ada@example.com', phone: '+14155550100',
      notes: 'Kitchen sink', address: '1 Main St', service: 'Leak', sms_consent: false,
      created_at: expect.any(String),
    });
    const { clients, notifications } = await writesOf(t);
    expect(clients.find((c) => c.id === client.id)).toMatchObject({ status: 'lead', email: 'ada@example.com' });
    expect(notifications.find((n) => n.clientId === client.id)).toMatchObject({ type: 'lead.created', title: 'New lead: Ada Lovelace' });
  });

  it.each([
    ['a full name split at the first space', { name: 'Mary Ann  Evans' }, { first_name: 'Mary', last_name: 'Ann Evans' }],
    ['a single-word name', { name: 'Cher' }, { first_name: 'Cher' }],
    ['only a last name', { last_name: 'Turing' }, { last_name: 'Turing' }],
    ['first/last winning over name', { first_name: 'Alan', last_name: 'Turing', name: 'Someone Else' }, { first_name: 'Alan', last_name: 'Turing' }],
  ])('accepts %s', async (_what, body, expected) => {
    expect(await created(body)).toMatchObject(expected);
  });

  it('keeps a phone it cannot parse as given, and treats blank strings as absent', async () => {
    const client = await created({ name: 'Blank Fields', phone: 'ext. 12', email: '', notes: '   ' });
    expect(client.phone).toBe('ext. 12');
    expect(client).not.toHaveProperty('email');
    expect(client).not.toHaveProperty('notes');
  });

  it('collects custom fields from the object and from unknown top-level scalars', async () => {
    const client = await created({ name: 'Flat Form', utm_source: 'google', 'form.page': '/contact', budget: 500, urgent: true, custom_fields: { referral: 'neighbour' } });
    expect(client.custom_fields).toEqual({ referral: 'neighbour', utm_source: 'google', 'form.page': '/contact', budget: 500, urgent: true });
  });

  it('stores SMS consent with its proof: source, time, IP, user agent and key id', async () => {
    const client = await created(
      { name: 'Consenting Caller', phone: '+1 212 555 0199', sms_consent: 'true', sms_consent_source: 'contact page, checkbox "Text me updates"' },
      { 'User-Agent': 'FormTool/1.0' },
    );
    expect(client).toMatchObject({ sms_consent: true, phone: '+12125550199' });
    const { clients } = await writesOf(t);
    expect(clients.find((c) => c.id === client.id)?.sms_consent_proof).toEqual({
      source: 'contact page, checkbox "Text me updates"', captured_at: client.created_at, ip: '127.0.0.1', user_agent: 'FormTool/1.0', key_id: t.keyId,
    });
  });

  it('removes control characters and bidi overrides, keeping newlines and tabs only where text is multi-line', async () => {
    const client = await created({
      first_name: 'Eve\u001b[31m\u202Eyl\u200E', last_name: 'Tab\tNew\u2028Line', service: 'Leak\u0085\u2066fix\u2069\u200F\u061C',
      notes: 'line 1\r\nline 2\t\u0007\u0000end\u2029more', address: '1 Main St\nApt 2\u202D', utm_source: 'ad\u0008s\nnet',
    });
    expect(client).toMatchObject({
      first_name: 'Eve[31myl', last_name: 'Tab New Line', service: 'Leakfix',
      notes: 'line 1\nline 2\tend\nmore', address: '1 Main St\nApt 2', custom_fields: { utm_source: 'ads\nnet' },
    });
    const { clients } = await writesOf(t);
    expect(clients.find((c) => c.id === client.id)).toMatchObject({ first_name: 'Eve[31myl', notes: 'line 1\nline 2\tend\nmore' });
  });

  it('counts every maximum length in characters (code points), not UTF-16 units', async () => {
    const drops = (n: number) => '💧'.repeat(n); // one character, two UTF-16 units
    expect(await created({ first_name: drops(100), service: drops(200), custom_fields: { k: drops(1000) } })).toMatchObject({ first_name: drops(100) });
    expect(await created({ name: `${drops(100)} ${drops(100)}` })).toMatchObject({ first_name: drops(100), last_name: drops(100) });
    const p = await problem(await postLead(t.key, { first_name: drops(101), service: drops(201), custom_fields: { k: drops(1001) } }), 422);
    expect(p.errors?.map((e) => e.field).sort()).toEqual(['custom_fields.k', 'first_name', 'service']);
  });

  it('stores sms_consent false when consent is not given', async () => {
    const client = await created({ name: 'No Consent', phone: '+12125550199', sms_consent: false, sms_consent_source: 'ignored' });
    expect(client.sms_consent).toBe(false);
    expect(client).not.toHaveProperty('sms_consent_proof');
  });
});

describe('rejecting a bad lead writes nothing', () => {
  const long = (n: number) => 'x'.repeat(n);
  const cases: [string, unknown, string[]][] = [
    ['no name of any form', { email: 'a@example.com' }, ['name']],
    ['a blank name', { name: '   ' }, ['name']],
    ['a first name over 100 characters', { first_name: long(101) }, ['first_name']],
    ['a last name over 100 characters', { name: 'A', last_name: long(101) }, ['last_name']],
    ['an invalid e-mail', { name: 'A', email: 'not-an-email' }, ['email']],
    ['an e-mail over 254 characters', { name: 'A', email: `${long(250)}@example.com` }, ['email']],
    ['a phone over 32 characters', { name: 'A', phone: '1'.repeat(33) }, ['phone']],
    ['notes over 5000 characters', { name: 'A', notes: long(5001) }, ['notes']],
    ['an address over 500 characters', { name: 'A', address: long(501) }, ['address']],
    ['a service over 200 characters', { name: 'A', service: long(201) }, ['service']],
    ['a wrong type', { name: 'A', email: 42 }, ['email']],
    ['sms_consent that is not a boolean', { name: 'A', sms_consent: 'yes' }, ['sms_consent']],
    ['consent without a source', { name: 'A', phone: '+12125550199', sms_consent: true }, ['sms_consent_source']],
    ['consent without a phone', { name: 'A', sms_consent: true, sms_consent_source: 'web' }, ['phone']],
    ['a consent source over 500 characters', { name: 'A', phone: '+12125550199', sms_consent: true, sms_consent_source: long(501) }, ['sms_consent_source']],
    ['a custom field name with bad characters', { name: 'A', custom_fields: { 'bad key': 1 } }, ['custom_fields.bad key']],
    ['a custom field value over 1000 characters', { name: 'A', custom_fields: { k: long(1001) } }, ['custom_fields.k']],
    ['a number DynamoDB cannot hold exactly', { name: 'A', big: 2 ** 53, tiny: 1e-200 }, ['big', 'tiny']],
    ['a nested unknown field', { name: 'A', extra: { deep: true } }, ['extra']],
    ['more than 50 custom fields', { name: 'A', ...Object.fromEntries(Array.from({ length: 51 }, (_, i) => [`f${i}`, i])) }, ['custom_fields']],
    ['a __proto__ custom field', '{"name":"A","custom_fields":{"__proto__":{"polluted":1}}}', ['custom_fields.__proto__']],
    ['a JSON array', [{ name: 'A' }], ['']],
    ['every problem at once', { email: 'nope', sms_consent: true }, ['email', 'name', 'sms_consent_source', 'phone']],
  ];
  it.each(cases)('422 for %s, naming the field', async (_what, body, fields) => {
    const before = await writesOf(t);
    const p = await problem(await postLead(t.key, body), 422);
    expect(p.errors?.map((e) => e.field).sort()).toEqual([...fields].sort());
    expect(await writesOf(t)).toEqual(before);
  });

  it('400 for malformed JSON', async () => {
    const before = await writesOf(t);
    const p = await problem(await postLead(t.key, '{"name": "A",'), 400);
    expect(p.detail).toMatch(/not valid JSON/);
    expect(await writesOf(t)).toEqual(before);
  });

  it('415 for a body that is not JSON', async () => {
    const before = await writesOf(t);
    await problem(await postLead(t.key, 'name=A', { 'Content-Type': 'application/x-www-form-urlencoded' }), 415);
    expect(await writesOf(t)).toEqual(before);
  });

  it('413 for a body over 64 KiB', async () => {
    const before = await writesOf(t);
    await problem(await postLead(t.key, { name: 'A', notes: 'x'.repeat(64 * 1024) }), 413);
    expect(await writesOf(t)).toEqual(before);
  });

  it('405 for another method', async () => {
    const { api } = await testStack();
    const res = await api('/api/webhook/leads', { method: 'PUT', headers: { 'X-API-Key': t.key } });
    await problem(res, 405);
  });
});

describe('Idempotency-Key', () => {
  it('replays the first response for the same key and body, creating one client', async () => {
    const body = { name: 'Retry Once', email: 'retry@example.com' };
    const first = await created(body, { 'Idempotency-Key': 'form-42' });
    const res = await postLead(t.key, body, { 'Idempotency-Key': 'form-42' });
    expect(res.status).toBe(201);
    expect(res.headers.get('idempotent-replayed')).toBe('true');
    expect(await res.json()).toEqual(first);
    expect((await writesOf(t)).clients.filter((c) => c.email === 'retry@example.com')).toHaveLength(1);
  });

  it('answers 422 for the same key with a different body, writing nothing', async () => {
    await created({ name: 'Key Reuse' }, { 'Idempotency-Key': 'form-43' });
    const before = await writesOf(t);
    const p = await problem(await postLead(t.key, { name: 'Someone Else' }, { 'Idempotency-Key': 'form-43' }), 422);
    expect(p.type).toContain('idempotency-key-reused');
    expect(await writesOf(t)).toEqual(before);
  });

  it('scopes keys to the organization', async () => {
    const other = await newTenant();
    const body = { name: 'Same Key Other Org' };
    await created(body, { 'Idempotency-Key': 'shared-key' });
    const res = await postLead(other.key, body, { 'Idempotency-Key': 'shared-key' });
    expect(res.status).toBe(201);
    expect(res.headers.get('idempotent-replayed')).toBeNull();
    expect(await itemsOf('clients', other.organizationId)).toHaveLength(1);
  });

  it('answers 409 while the first request is still in flight', async () => {
    const { deps } = await testStack();
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const call = { organizationId: t.organizationId, idempotencyKey: 'in-flight', payload: { name: 'Slow' } };
    let running!: () => void;
    const started = new Promise<void>((r) => (running = r));
    // The wrapped function runs only once the in-progress record is written.
    const first = runIdempotent(deps, lambdaContext('leadIntake'), { ...call, run: async () => (running(), await gate, 'done') });
    await started;
    await expect(runIdempotent(deps, lambdaContext('leadIntake'), { ...call, run: async () => 'second' })).rejects.toMatchObject({ status: 409 });
    release();
    await expect(first).resolves.toEqual({ result: 'done', replayed: false });
  });

  it('400 for an unusable Idempotency-Key', async () => {
    await problem(await postLead(t.key, { name: 'A' }, { 'Idempotency-Key': 'x'.repeat(256) }), 400);
  });
});

describe('billing a prepaid organization', () => {
  it('debits 3000 micro-dollars per lead with the write and counts usage per day', async () => {
    const paid = await newTenant({ billing: 'prepaid', walletMicros: 10_000 });
    expect((await postLead(paid.key, { name: 'Billed Lead' })).status).toBe(201);
    const after = await writesOf(paid);
    expect(after.wallet).toBe(7_000);
    expect(after.usage).toEqual({ calls: 1, billedMicros: 3000 });
  });

  it('answers 402 and writes nothing when the wallet cannot pay', async () => {
    const broke = await newTenant({ billing: 'prepaid', walletMicros: 2_999 });
    const before = await writesOf(broke);
    const p = await problem(await postLead(broke.key, { name: 'Unpaid Lead' }), 402);
    expect(p.detail).toMatch(/wallet/);
    expect(await writesOf(broke)).toEqual(before);
    expect(before.clients).toEqual([]);
    expect(before.wallet).toBe(2_999);
  });

  it('bills a replayed Idempotency-Key request once: one debit, one usage count, the replay marked', async () => {
    const paid = await newTenant({ billing: 'prepaid', walletMicros: 10_000 });
    const body = { name: 'Paid Retry' };
    const first = await postLead(paid.key, body, { 'Idempotency-Key': 'paid-1' });
    expect(first.status).toBe(201);
    const replay = await postLead(paid.key, body, { 'Idempotency-Key': 'paid-1' });
    expect(replay.status).toBe(201);
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
    expect(await replay.json()).toEqual(await first.json());
    const after = await writesOf(paid);
    expect(after.wallet).toBe(7_000);
    expect(after.usage).toEqual({ calls: 1, billedMicros: 3000 });
    expect(after.clients).toHaveLength(1);
    expect(after.notifications).toHaveLength(1);
  });

  it('does not bill the GET connectivity test', async () => {
    const paid = await newTenant({ billing: 'prepaid', walletMicros: 5_000 });
    const { api } = await testStack();
    expect((await api('/api/webhook/leads', { headers: { 'X-API-Key': paid.key } })).status).toBe(200);
    expect((await writesOf(paid)).wallet).toBe(5_000);
  });
});

describe('the notification inbox', () => {
  /** `count` leads through the domain code, one second apart on the given clock. */
  async function leadsAt(tenant: Tenant, count: number, startMs: number): Promise<string[]> {
    const { deps } = await testStack();
    const auth = { organization: await requireOrganization(deps, tenant.organizationId), key: { keyId: tenant.keyId, name: 'test' } };
    const ids: string[] = [];
    for (let i = 0; i < count; i++) {
      const outcome = await createLead({ ...deps, now: () => startMs + i * 1000 }, auth, parseLead({ name: `Lead ${i}` }), { requestId: `r${i}` });
      if (outcome.kind === 'created') ids.push(outcome.client.id);
    }
    return ids;
  }

  /** Deps that count the items the inbox's queries read. */
  function counting(deps: Deps) {
    let scanned = 0;
    const send = deps.doc.send.bind(deps.doc) as (c: unknown) => Promise<{ ScannedCount?: number }>;
    const doc = Object.create(deps.doc) as Deps['doc'];
    doc.send = (async (command: unknown) => {
      const out = await send(command);
      if (command instanceof QueryCommand) scanned += out.ScannedCount ?? 0;
      return out;
    }) as Deps['doc']['send'];
    return { deps: { ...deps, doc }, scanned: () => scanned };
  }

  it('lists the newest 50 of 120 leads in order, reading a bounded number of items', async () => {
    const { deps } = await testStack();
    const tenant = await newTenant({ name: 'Busy Inbox' });
    const ids = await leadsAt(tenant, 120, Date.now() - 200_000);
    const { deps: watched, scanned } = counting(deps);
    const inbox = await listNotifications(watched, tenant.organizationId);
    expect(inbox.map((n) => n.clientId)).toEqual(ids.slice(-50).reverse());
    expect(scanned()).toBeLessThanOrEqual(60); // not the organization's 120 clients
  });

  it('still lists clients with the older random ids', async () => {
    const { deps } = await testStack();
    const tenant = await newTenant({ name: 'Old Inbox' });
    const legacyId = newId('cli');
    const at = new Date(Date.now() - 3_600_000).toISOString();
    await deps.doc.send(new PutCommand({ TableName: deps.tables.clients, Item: {
      ...keys.client(tenant.organizationId, legacyId), entity: 'client', id: legacyId, organization_id: tenant.organizationId, status: 'lead', first_name: 'Legacy',
      created_at: at, updated_at: at, notification: { id: newId('ntf'), type: 'lead.created', title: 'New lead: Legacy', createdAt: at },
    } }));
    const ids = await leadsAt(tenant, 2, Date.now() - 10_000);
    expect((await listNotifications(deps, tenant.organizationId)).map((n) => n.clientId)).toEqual([ids[1], ids[0], legacyId]);
  });
});
