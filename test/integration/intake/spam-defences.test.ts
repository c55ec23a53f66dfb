/**
 * Spam defences of publishable-key leads (docs/leads.md#lead-forms-in-public-pages-publishable-keys) against the local stack: a filled honeypot
 * answers 201 and creates and bills nothing (and is counted in the request log); an organization's
 * CAPTCHA is verified server-side against a loopback siteverify stub that plays the provider, set
 * as the stage's verify URL through the settings parameter, failing closed when it cannot answer.
 */
import { describe, it, expect, beforeAll, afterAll } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import { metricsNamespace } from '../../../functions/core/platform/bindings.js';
import type { AddressInfo } from 'node:net';
import { SSMClient, GetParameterCommand, PutParameterCommand } from '@aws-sdk/client-ssm';
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { keys } from '../../../functions/core/platform/model.js';
import { dailyUsage, getOrganization, setOrganizationCaptcha } from '../../../functions/core/tenancy/organizations.js';
import { listRequests } from '../../../functions/core/settings/request-log-read.js';
import { eventually, itemsOf, newTenant, runCli, testStack } from '../support/stack.js';
import { givenPublishableKey, postFromPage, send } from '../support/public-forms.js';
import { importLeadIntake, invokeLeadIntake, useStackEnvironment } from '../support/in-process-lambda.js';

const SHOP = 'https://shop.example';
let nextAddress = 100;
const freshAddress = () => `127.0.0.${nextAddress++}`;

describe('the honeypot field', () => {
  it('filled: 201 as if accepted, nothing created, nothing billed, counted in the request log', async () => {
    const { deps } = await testStack();
    const t = await givenPublishableKey({}, { billing: 'prepaid', walletMicros: 100_000 });
    const res = await postFromPage(t.key, { name: 'Bot', email: 'bot@example.com', website: 'https://spam.example' }, { origin: SHOP, from: freshAddress() });
    expect(res.status).toBe(201);
    expect(res.json()).toMatchObject({ id: expect.stringMatching(/^cli_/), status: 'lead' });

    expect(await itemsOf('clients', t.organizationId)).toEqual([]);
    expect((await getOrganization(deps, t.organizationId))?.walletMicros).toBe(100_000);
    expect(await dailyUsage(deps, t.organizationId, new Date().toISOString().slice(0, 10))).toEqual({ calls: 0, billedMicros: 0 });
    const logged = await eventually(async () => (await listRequests(deps, t.organizationId))[0], { what: 'the request record' });
    expect(logged).toMatchObject({ status: 201, outcome: 'honeypot', keyId: t.keyId });
  });

  it('filled: the answer is the one a person gets for the same input (same fields; an invalid body the same 422)', async () => {
    const t = await givenPublishableKey({ perIpLimit: 100 });
    const from = freshAddress();
    const lead = { name: 'Ada Lovelace', email: 'ada@example.com', phone: '+14155550123', notes: 'Leaky tap', sms_consent: true, sms_consent_source: 'web form' };
    const person = await postFromPage(t.key, lead, { origin: SHOP, from });
    const bot = await postFromPage(t.key, { ...lead, website: 'https://spam.example' }, { origin: SHOP, from });
    expect(person.status).toBe(201);
    expect(bot.status).toBe(201);
    const shape = (body: Record<string, unknown>) => Object.keys(body).sort();
    expect(shape(bot.json())).toEqual(shape(person.json()));
    expect(bot.json()).toMatchObject({ first_name: 'Ada', last_name: 'Lovelace', email: 'ada@example.com', notes: 'Leaky tap', sms_consent: true });
    expect(Object.keys(bot.headers).sort()).toEqual(Object.keys(person.headers).sort());

    const invalid = { name: 'Bot', email: 'not-an-email' };
    const refused = await postFromPage(t.key, invalid, { origin: SHOP, from });
    const tripped = await postFromPage(t.key, { ...invalid, website: 'x' }, { origin: SHOP, from });
    expect(refused.status).toBe(422);
    expect(tripped.status).toBe(422);
    expect((await itemsOf('clients', t.organizationId)).map((c) => c.id)).toEqual([person.json().id]);
  });

  it('filled in a no-script form: the same redirect a person gets, nothing created', async () => {
    const t = await givenPublishableKey({ thankYouUrl: `${SHOP}/thanks` });
    const body = new URLSearchParams({ api_key: t.key, name: 'Bot', website: 'x' }).toString();
    const res = await send('POST', { 'Content-Type': 'application/x-www-form-urlencoded', Origin: SHOP }, body, freshAddress());
    expect(res.status).toBe(303);
    expect(res.headers.location).toBe(`${SHOP}/thanks`);
    expect(await itemsOf('clients', t.organizationId)).toEqual([]);
  });

  it('empty: the lead is created, and the field is not stored as a custom field; a key may name its own field', async () => {
    const t = await givenPublishableKey({ honeypotField: 'fax_number' });
    const from = freshAddress();
    expect((await postFromPage(t.key, { name: 'Person', fax_number: '' }, { origin: SHOP, from })).status).toBe(201);
    expect((await postFromPage(t.key, { name: 'Bot', fax_number: '555' }, { origin: SHOP, from })).status).toBe(201);
    // With its own name set, `website` is an ordinary (custom) field of that key's leads.
    expect((await postFromPage(t.key, { name: 'Web Person', website: 'https://me.example' }, { origin: SHOP, from })).status).toBe(201);
    const clients = await itemsOf('clients', t.organizationId);
    expect(clients.map((c) => c.first_name).sort()).toEqual(['Person', 'Web']);
    expect(clients.find((c) => c.first_name === 'Person')?.custom_fields).toBeUndefined();
    expect(clients.find((c) => c.first_name === 'Web')?.custom_fields).toEqual({ website: 'https://me.example' });
  });

  it('filled: publishes the HoneypotTripped metric (the real handler in this process, metrics on, as on Lambda)', async () => {
    // The local stack runs with metrics disabled: invoke lead intake here with Lambda's environment.
    const { info } = await testStack();
    const saved = { ...process.env };
    useStackEnvironment(info);
    let captured: Awaited<ReturnType<typeof invokeLeadIntake>>;
    let organizationId: string;
    try {
      const handler = await importLeadIntake();
      const t = await givenPublishableKey();
      organizationId = t.organizationId;
      captured = await invokeLeadIntake(handler, {
        method: 'POST', headers: { 'Content-Type': 'application/json', 'X-API-Key': t.key, Origin: SHOP },
        body: JSON.stringify({ name: 'Bot', website: 'https://spam.example' }), sourceIp: '192.0.2.10',
      });
    } finally {
      process.env = saved;
    }
    expect(captured.result.statusCode).toBe(201);
    expect(await itemsOf('clients', organizationId)).toEqual([]);
    const tripped = captured.json.filter((o) => o._aws?.CloudWatchMetrics).find((o) => o.HoneypotTripped !== undefined);
    expect(tripped?.HoneypotTripped).toBe(1);
    expect(tripped!._aws.CloudWatchMetrics[0]).toMatchObject({ Namespace: metricsNamespace, Metrics: [expect.objectContaining({ Name: 'HoneypotTripped' })] });
    // The request's log line says so too, without the body's values.
    expect(captured.json.find((o) => o.message === 'request')).toMatchObject({ status: 201, outcome: 'honeypot' });
    expect(captured.lines.join('\n')).not.toContain('spam.example');
  });

  it('does not apply to secret keys: `website` stays an ordinary field of a server’s lead', async () => {
    const t = await newTenant();
    const res = await send('POST', { 'Content-Type': 'application/json', 'X-API-Key': t.key }, JSON.stringify({ name: 'Zap Lead', website: 'https://client.example' }));
    expect(res.status).toBe(201);
    expect(res.json()).toMatchObject({ custom_fields: { website: 'https://client.example' } });
  });
});

describe('CAPTCHA verification against a loopback siteverify stub', () => {
  const SECRET = '0x4AAAAAAA-test-secret';
  let stub: Server;
  const calls: URLSearchParams[] = [];
  // Where a `redirect-` token's answer points: it must never receive anything (the secret least of all).
  let elsewhere: Server;
  const redirected: string[] = [];
  const spent = new Set<string>();
  let ssm: SSMClient;
  let parameter: string;

  /** Changes the running stack's settings and waits until its handlers serve the new document (a probe plan's limit). */
  async function putSettings(change: (current: Record<string, unknown>) => Record<string, unknown>): Promise<void> {
    const { api } = await testStack();
    const current = JSON.parse((await ssm.send(new GetParameterCommand({ Name: parameter }))).Parameter!.Value!) as Record<string, unknown>;
    const probe = `captcha-probe-${Math.random().toString(36).slice(2, 8)}`;
    const next = change(current);
    next.planRateLimits = { ...(current.planRateLimits as Record<string, number>), [probe]: 9 };
    await ssm.send(new PutParameterCommand({ Name: parameter, Value: JSON.stringify(next), Type: 'String', Overwrite: true }));
    const tenant = await newTenant({ plan: probe });
    await eventually(async () => (await api('/api/webhook/leads', { headers: { 'X-API-Key': tenant.key } })).headers.get('X-RateLimit-Limit') === '9', { what: 'the new settings served' });
  }

  beforeAll(async () => {
    // The provider: a token passes when it is `pass-<anything>` and the secret is the organization's;
    // `slow-` tokens are answered after the function's time-out; `broken-` with a 500.
    stub = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const form = new URLSearchParams(Buffer.concat(chunks).toString('utf8'));
        calls.push(form);
        const token = form.get('response') ?? '';
        const answer = (status: number, body: unknown) => res.writeHead(status, { 'Content-Type': 'application/json' }).end(JSON.stringify(body));
        if (token.startsWith('slow-')) return void setTimeout(() => answer(200, { success: true }), 2500);
        if (token.startsWith('broken-')) return answer(500, {});
        if (token.startsWith('redirect-')) {
          return void res.writeHead(307, { Location: `http://127.0.0.1:${(elsewhere.address() as AddressInfo).port}/collect` }).end();
        }
        if (form.get('secret') !== SECRET) return answer(200, { success: false, 'error-codes': ['invalid-input-secret'] });
        // As the providers do, a token passes once.
        if (spent.has(token)) return answer(200, { success: false, 'error-codes': ['timeout-or-duplicate'] });
        spent.add(token);
        answer(200, token.startsWith('pass-') ? { success: true } : { success: false, 'error-codes': ['invalid-input-response'] });
      });
    });
    await new Promise<void>((resolve) => stub.listen(0, '127.0.0.1', resolve));
    elsewhere = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        redirected.push(Buffer.concat(chunks).toString('utf8'));
        res.writeHead(200, { 'Content-Type': 'application/json' }).end(JSON.stringify({ success: true }));
      });
    });
    await new Promise<void>((resolve) => elsewhere.listen(0, '127.0.0.1', resolve));
    const { info } = await testStack();
    ssm = new SSMClient({ region: info.region, endpoint: info.ssmEndpoint, credentials: { accessKeyId: 'local', secretAccessKey: 'local' } });
    parameter = info.settingsParameter!;
    const url = `http://127.0.0.1:${(stub.address() as AddressInfo).port}/turnstile/v0/siteverify`;
    await putSettings((s) => ({ ...s, captchaVerifyUrls: { turnstile: url }, captchaTimeoutMs: 1000 }));
  });

  afterAll(async () => {
    if (ssm) {
      await putSettings(({ captchaVerifyUrls: _u, captchaTimeoutMs: _t, ...rest }) => rest).catch(() => undefined);
      ssm.destroy();
    }
    await new Promise((resolve) => stub?.close(resolve));
    await new Promise((resolve) => elsewhere?.close(resolve));
  });

  /**
   * A publishable key of an organization that requires Turnstile: set with the CLI, as an operator
   * does, when `viaCli` (the first test: the CLI never prints the secret); else with the call the
   * CLI makes (a CLI process costs seconds on a loaded machine).
   */
  async function givenCaptchaOrganization(secret = SECRET, { viaCli = false } = {}) {
    const t = await givenPublishableKey({ perIpLimit: 100 }, { billing: 'prepaid', walletMicros: 100_000 });
    const { deps } = await testStack();
    if (viaCli) {
      const set = await runCli(['org', 'set-captcha', '--org', t.organizationId, '--provider', 'turnstile', '--secret', secret], { json: false });
      expect(set.code).toBe(0);
      expect(set.stdout).toContain('turnstile');
      expect(set.stdout + set.stderr).not.toContain(secret);
      const listed = await runCli(['org', 'list']);
      expect(listed.stdout).not.toContain(secret);
    } else {
      await setOrganizationCaptcha(deps, t.organizationId, { provider: 'turnstile', secret });
    }
    // Not on the organization item, which is read on every key-cache miss and returned whole by failed prepaid debits.
    const orgItem = await deps.doc.send(new GetCommand({ TableName: deps.tables.organizations, Key: keys.org(t.organizationId), ConsistentRead: true }));
    expect(orgItem.Item).toMatchObject({ captchaProvider: 'turnstile' });
    expect(JSON.stringify(orgItem.Item)).not.toContain(secret);
    // Warm containers learn the organization's provider within the key cache TTL (1 s here).
    const from = freshAddress();
    await eventually(async () => (await postFromPage(t.key, { name: 'Probe' }, { origin: SHOP, from })).status === 403, { what: 'the CAPTCHA required' });
    return { ...t, from };
  }

  it('a token the provider accepts creates the lead; the secret, token and visitor address went to siteverify', async () => {
    const t = await givenCaptchaOrganization(SECRET, { viaCli: true });
    const res = await postFromPage(t.key, { name: 'Real Person', 'cf-turnstile-response': 'pass-abc' }, { origin: SHOP, from: t.from });
    expect(res.status).toBe(201);
    const call = calls.find((c) => c.get('response') === 'pass-abc');
    expect(call?.get('secret')).toBe(SECRET);
    expect(call?.get('remoteip')).toBe(t.from);
    const [client] = await itemsOf('clients', t.organizationId);
    expect(client.first_name).toBe('Real');
    expect(JSON.stringify(client)).not.toContain('pass-abc'); // the token is not a custom field
  });

  it.each([
    ['no token', {}, 403, 'captcha-failed'],
    ['a token the provider rejects', { 'cf-turnstile-response': 'forged' }, 403, 'captcha-failed'],
    ['a provider that does not answer in time (fail closed)', { 'cf-turnstile-response': 'slow-1' }, 503, 'captcha-unavailable'],
    ['a provider that fails (fail closed)', { 'cf-turnstile-response': 'broken-1' }, 503, 'captcha-unavailable'],
  ])('%s: refused, nothing written or billed', async (_what, token, status, slug) => {
    const { deps } = await testStack();
    const t = await givenCaptchaOrganization();
    const res = await postFromPage(t.key, { name: 'Maybe Bot', ...token }, { origin: SHOP, from: t.from });
    expect(res.status).toBe(status);
    expect(res.headers['content-type']).toBe('application/problem+json');
    expect(res.json()).toMatchObject({ type: expect.stringContaining(slug) });
    if (status === 503) expect(res.headers['retry-after']).toBeDefined();
    expect(await itemsOf('clients', t.organizationId)).toEqual([]);
    expect((await getOrganization(deps, t.organizationId))?.walletMicros).toBe(100_000);
  });

  it('a retry with the same Idempotency-Key (a lost answer) is replayed, not verified again (a token passes once)', async () => {
    const t = await givenCaptchaOrganization();
    const lead = { name: 'Retrying Person', email: 'retry@example.com', 'cf-turnstile-response': 'pass-once' };
    const headers = { 'Idempotency-Key': `form-${randomUUID()}` };
    const first = await postFromPage(t.key, lead, { origin: SHOP, from: t.from, headers });
    expect(first.status).toBe(201);
    const retry = await postFromPage(t.key, lead, { origin: SHOP, from: t.from, headers });
    expect(retry.status).toBe(201);
    // Replayed (the same id), without saying so to a page (docs/leads.md "Idempotency").
    expect(retry.headers['idempotent-replayed']).toBeUndefined();
    expect(retry.json().id).toBe(first.json().id);
    expect(calls.filter((c) => c.get('response') === 'pass-once')).toHaveLength(1);
    // A new post with the spent token is refused as the provider says.
    const reused = await postFromPage(t.key, { ...lead, email: 'other@example.com' }, { origin: SHOP, from: t.from });
    expect(reused.status).toBe(403);
    expect(await itemsOf('clients', t.organizationId)).toHaveLength(1);
  });

  it('a verify URL that redirects: fail closed, and the secret is not re-sent to the redirect’s target', async () => {
    const t = await givenCaptchaOrganization();
    const res = await postFromPage(t.key, { name: 'Maybe Bot', 'cf-turnstile-response': 'redirect-1' }, { origin: SHOP, from: t.from });
    expect(res.status).toBe(503);
    expect(res.json()).toMatchObject({ type: expect.stringContaining('captcha-unavailable') });
    expect(calls.some((c) => c.get('response') === 'redirect-1')).toBe(true);
    expect(redirected).toEqual([]);
    expect(await itemsOf('clients', t.organizationId)).toEqual([]);
  });

  it('a secret the provider rejects is the organization’s problem, not the visitor’s: 503, the visitor is not told why', async () => {
    const t = await givenCaptchaOrganization('0x4AAAAAAA-wrong-secret');
    const res = await postFromPage(t.key, { name: 'Real Person', 'cf-turnstile-response': 'pass-but-wrong-secret' }, { origin: SHOP, from: t.from });
    expect(res.status).toBe(503);
    expect(res.json()).toMatchObject({ type: expect.stringContaining('captcha-unavailable') });
    expect(res.text).not.toContain('secret');
    expect(await itemsOf('clients', t.organizationId)).toEqual([]);
  });

  it('the no-script form sends the widget’s field like any other; a failure is an HTML page', async () => {
    const t = await givenCaptchaOrganization();
    const post = (fields: Record<string, string>) =>
      send('POST', { 'Content-Type': 'application/x-www-form-urlencoded', Origin: SHOP }, new URLSearchParams({ api_key: t.key, name: 'Form Person', ...fields }).toString(), t.from);
    const failed = await post({ 'cf-turnstile-response': 'forged' });
    expect(failed.status).toBe(403);
    expect(failed.text).toContain('CAPTCHA verification failed');
    expect((await post({ 'cf-turnstile-response': 'pass-form' })).status).toBe(201);
  });

  it('removing the provider lets leads through without a token again', async () => {
    const t = await givenCaptchaOrganization();
    expect((await runCli(['org', 'set-captcha', '--org', t.organizationId, '--provider', 'none'])).code).toBe(0);
    await eventually(async () => (await postFromPage(t.key, { name: 'After' }, { origin: SHOP, from: t.from })).status === 201, { what: 'no CAPTCHA required' });
  });
});
