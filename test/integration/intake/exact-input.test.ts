/**
 * Input taken exactly (docs/leads.md "Exact input"), over HTTP: bodies decoded as UTF-8 strictly,
 * one key header taken as sent, the body limit in bytes, malformed paths refused by the gateway.
 * Each bad input gets its status, and nothing is written or billed: no client, no usage, the
 * prepaid wallet untouched.
 */
import { describe, it, expect, beforeAll } from '@jest/globals';
import { connect } from 'node:net';
import { itemsOf, newTenant, testStack, type Tenant } from '../support/stack.js';
import { dailyUsage, getOrganization } from '../../../functions/core/tenancy/organizations.js';
import { wafKeyLimitPerMinute } from '../../../functions/front-door/waf.js';
import { authenticate } from '../../../functions/core/tenancy/authenticate.js';
import { givenPublishableKey } from '../support/public-forms.js';

const WALLET = 1_000_000;

/** One HTTP/1.1 request written byte for byte (headers repeated or cased as given); the status and body of its answer. */
async function raw(headers: [string, string][], body: Buffer | string = '', { method = 'POST', path = '/api/webhook/leads' } = {}): Promise<{ status: number; body: string }> {
  const { info } = await testStack();
  const url = new URL(info.apiUrl);
  const payload = Buffer.isBuffer(body) ? body : Buffer.from(body, 'utf8');
  const head = [`${method} ${path} HTTP/1.1`, `Host: ${url.host}`, 'Connection: close', `Content-Length: ${payload.length}`, ...headers.map(([k, v]) => `${k}: ${v}`), '', ''].join('\r\n');
  return new Promise((resolve, reject) => {
    const socket = connect(Number(url.port), url.hostname, () => socket.write(Buffer.concat([Buffer.from(head, 'latin1'), payload])));
    const chunks: Buffer[] = [];
    socket.on('data', (c) => chunks.push(c));
    socket.on('error', reject);
    socket.on('end', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      resolve({ status: Number(/^HTTP\/1\.1 (\d{3})/.exec(text)?.[1]), body: text.slice(text.indexOf('\r\n\r\n') + 4) });
    });
  });
}

const json = (key: string): [string, string][] => [['Content-Type', 'application/json'], ['X-API-Key', key]];

let t: Tenant;
beforeAll(async () => {
  t = await newTenant({ rateLimitPerMinute: wafKeyLimitPerMinute, billing: 'prepaid', walletMicros: WALLET });
});

/** Nothing created and nothing billed for the tenant so far. */
async function nothingWritten(): Promise<void> {
  const { deps } = await testStack();
  expect(await itemsOf('clients', t.organizationId)).toEqual([]);
  expect((await dailyUsage(deps, t.organizationId, new Date().toISOString().slice(0, 10))).calls).toBe(0);
  expect((await getOrganization(deps, t.organizationId))!.walletMicros).toBe(WALLET);
}

describe('exact input on the lead endpoint', () => {
  it('refuses a body that is not UTF-8 with 400', async () => {
    const res = await raw(json(t.key), Buffer.concat([Buffer.from('{"name":"a'), Buffer.from([0xff, 0xfe]), Buffer.from('"}')]));
    expect(res.status).toBe(400);
    expect(JSON.parse(res.body).detail).toContain('UTF-8');
    await nothingWritten();
  });

  it('refuses a JSON type the gateway does not pass as bytes (a +json type) with 415, even when its bytes are not UTF-8', async () => {
    const bad = Buffer.concat([Buffer.from('{"name":"a'), Buffer.from([0xff, 0xfe]), Buffer.from('"}')]);
    const res = await raw([['Content-Type', 'application/vnd.api+json'], ['X-API-Key', t.key]], bad);
    expect(res.status).toBe(415);
    expect(JSON.parse(res.body).detail).toContain('application/json');
    // The media type compares in any case, and is still decoded strictly.
    expect((await raw([['Content-Type', 'APPLICATION/JSON'], ['X-API-Key', t.key]], bad)).status).toBe(400);
    await nothingWritten();
  });

  it('refuses a lone surrogate in any text field with 422 naming the field', async () => {
    for (const body of ['{"name":"a\\ud800b"}', '{"name":"Ann","custom_fields":{"x":"\\udc00"}}', '{"name":"Ann","\\ud83d":"x"}']) {
      const res = await raw(json(t.key), body);
      expect(res.status).toBe(422);
      expect(JSON.parse(res.body).errors[0].message).toContain('surrogate');
    }
    // A surrogate pair (an emoji written as escapes) is a character: accepted elsewhere, so only checked here for the status.
    await nothingWritten();
  });

  it('refuses a charset other than UTF-8 with 415 and accepts charset=utf-8', async () => {
    const res = await raw([['Content-Type', 'application/json; charset=utf-16'], ['X-API-Key', t.key]], Buffer.from('{"name":"Ann"}', 'utf16le'));
    expect(res.status).toBe(415);
    expect((await raw([['Content-Type', 'application/json; charset=latin1'], ['X-API-Key', t.key]], '{"name":"Ann"}')).status).toBe(415);
    await nothingWritten();
  });

  it('counts the body limit in bytes: 40,000 × é (80 KB) is a 413', async () => {
    const res = await raw(json(t.key), JSON.stringify({ name: 'Ann', notes: 'é'.repeat(40_000) }));
    expect(res.status).toBe(413);
    await nothingWritten();
  });

  it('takes a key header exactly as sent: a padded key is 401', async () => {
    // Spaces and tabs around a value are HTTP's optional whitespace, not part of it; a no-break space is.
    for (const value of [`${t.key}\u00a0`, `\u00a0${t.key}`, `${t.key}\u200b`]) {
      const res = await raw([['Content-Type', 'application/json'], ['X-API-Key', Buffer.from(value, 'utf8').toString('latin1')]], '{"name":"Ann"}');
      expect(res.status).toBe(401);
    }
    const bearer = await raw([['Content-Type', 'application/json'], ['Authorization', `Bearer  ${t.key}`]], '{"name":"Ann"}');
    expect(bearer.status).toBe(401);
    await nothingWritten();
  });

  it('refuses more than one key header with 400: repeated, in two cases, or both styles', async () => {
    const cases: [string, string][][] = [
      [['X-API-Key', 'junk'], ['x-api-key', t.key]],
      [['X-API-Key', t.key], ['X-API-Key', t.key]],
      [['X-API-Key', t.key], ['Authorization', `Bearer ${t.key}`]],
      [['Authorization', 'Bearer junk'], ['authorization', `Bearer ${t.key}`]],
    ];
    for (const headers of cases) {
      const res = await raw([['Content-Type', 'application/json'], ...headers], '{"name":"Ann"}');
      expect(res.status).toBe(400);
      expect(JSON.parse(res.body).detail).toContain('one header');
    }
    await nothingWritten();
  });

  it('refuses a malformed percent-escape in the path with 400, as API Gateway does', async () => {
    for (const path of ['/api/webhook/leads%zz', '/api/settings/keys/%E2%82', '/%']) {
      const res = await raw(json(t.key), '{"name":"Ann"}', { path });
      expect(res.status).toBe(400);
    }
    await nothingWritten();
  });

  it('still takes a well-formed request: UTF-8 text, charset=utf-8, a surrogate pair', async () => {
    const res = await raw([['Content-Type', 'application/json; charset=UTF-8'], ['X-API-Key', t.key]], '{"name":"Zoë \\ud83d\\udca7 Ça"}');
    expect(res.status).toBe(201);
    expect(JSON.parse(res.body).first_name).toBe('Zoë');
  });

  it('gives a publishable key without a cap of its own the stage\'s default daily cap', async () => {
    const { deps } = await testStack();
    const uncapped = await givenPublishableKey();
    const capped = await givenPublishableKey({ dailyCap: 7 });
    const stage = { ...deps, config: { ...deps.config, publishableDailyCap: 3 } };
    expect((await authenticate(stage, { 'X-API-Key': uncapped.key }, { allowPublishable: true })).key.publishable?.dailyCap).toBe(3);
    expect((await authenticate(stage, { 'X-API-Key': capped.key }, { allowPublishable: true })).key.publishable?.dailyCap).toBe(7);
  });
});
