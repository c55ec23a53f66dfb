/**
 * The receiver check through the settings API (docs/webhooks.md#checking-a-receiver), against three
 * real receivers on 127.0.0.1: one that verifies with the `standardwebhooks` library (pass), one
 * that accepts everything (fails every refusal rule), one that checks the signature but not the
 * timestamp (fails the two timestamp rules only). Each endpoint was rotated and its grace has
 * ended, so the retired-secret rule is checked too. Then: the result is kept on the endpoint, the
 * sends are test deliveries in the delivery log (marked as the check's: no statistics, no bulk
 * re-delivery), a second check of an endpoint or of its URL's origin within a minute is a 429, as is
 * a fourth of the organization, another organization's endpoint a 404, an address the SSRF guard
 * refuses (a stubbed resolver) is never connected to, and an ed25519 endpoint is checked with `v1a`
 * signatures against a receiver verifying them with node:crypto.
 */
import { createHmac, createPublicKey, timingSafeEqual, verify as verifySignature } from 'node:crypto';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { LookupAddress } from 'node:dns';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Webhook } from 'standardwebhooks';
import { eventually, newTenant, runCli, testStack } from '../support/stack.js';
import { settingsClient } from './support.js';
import { endpointStore } from '../../../functions/core/delivery/endpoint-store.js';
import { newSigningSecret } from '../../../functions/core/delivery/signing.js';
import { guardedLookup, type Resolver } from '../../../functions/core/delivery/ssrf.js';
import { checkReceiver, RULE_ORDER, type CheckAnswer } from '../../../functions/core/events/receiver-check.js';
import { addEndpoint } from '../../../functions/core/delivery/endpoints.js';

type Verify = (secret: string, body: string, headers: IncomingHttpHeaders) => boolean;

/** Verifies as the docs recommend: the standardwebhooks library (signature and a 5-minute tolerance). */
const strict: Verify = (secret, body, headers) => {
  try {
    new Webhook(secret.replace(/^whsec_/, '')).verify(body, headers as Record<string, string>);
    return true;
  } catch {
    return false;
  }
};
/** Verifies `v1a` (ed25519) with node:crypto and the endpoint's public key (docs/webhooks.md#verifying-ed25519-signatures), with the 5-minute tolerance. */
const ed25519: Verify = (publicKey, body, headers) => {
  const [id, timestamp, signatures] = ['webhook-id', 'webhook-timestamp', 'webhook-signature'].map((h) => headers[h] as string | undefined);
  if (!id || !timestamp || !signatures || !/^\d+$/.test(timestamp) || Math.abs(Date.now() / 1000 - Number(timestamp)) > 300) return false;
  try {
    const key = createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x: Buffer.from(publicKey.replace(/^whpk_/, ''), 'base64').toString('base64url') }, format: 'jwk' });
    const content = Buffer.from(`${id}.${timestamp}.${body}`);
    return signatures.split(' ').some((signature) => {
      const [version, value] = signature.split(',');
      return version === 'v1a' && value !== undefined && verifySignature(null, content, key, Buffer.from(value, 'base64'));
    });
  } catch {
    return false; // no key held yet, or not one
  }
};
/** Never verifies. */
const careless: Verify = () => true;
/** Checks the signature, ignores the timestamp. */
const signatureOnly: Verify = (secret, body, headers) => {
  const content = `${String(headers['webhook-id'])}.${String(headers['webhook-timestamp'])}.${body}`;
  const expected = createHmac('sha256', Buffer.from(secret.replace(/^whsec_/, ''), 'base64')).update(content).digest();
  return String(headers['webhook-signature'] ?? '').split(' ').some((s) => {
    const given = Buffer.from(s.replace(/^v1,/, ''), 'base64');
    return s.startsWith('v1,') && given.length === expected.length && timingSafeEqual(given, expected);
  });
};

/** A receiver on 127.0.0.1 holding `secret` (set once the endpoint is made): 204 when `verify` passes, else 401. */
class Receiver {
  secret = '';
  requests = 0;
  url = '';
  /** Every request as received. */
  readonly received: { headers: IncomingHttpHeaders; body: string }[] = [];
  private server!: Server;
  constructor(private readonly verify: Verify) {}
  async start(): Promise<this> {
    this.server = createServer((req, res) => {
      let body = '';
      req.on('data', (c) => (body += c));
      req.on('end', () => {
        this.requests += 1;
        this.received.push({ headers: req.headers, body });
        res.writeHead(this.verify(this.secret, body, req.headers) ? 204 : 401).end();
      });
    });
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/hooks`;
    return this;
  }
  stop = () => new Promise<void>((resolve) => this.server.close(() => resolve()));
}

const receivers = {
  strict: new Receiver(strict), careless: new Receiver(careless), signatureOnly: new Receiver(signatureOnly),
  another: new Receiver(strict), ed25519: new Receiver(ed25519),
};
beforeAll(async () => { await Promise.all(Object.values(receivers).map((r) => r.start())); });
afterAll(async () => { await Promise.all(Object.values(receivers).map((r) => r.stop())); });

/**
 * An endpoint to `receiver`, rotated a day ago with a grace that has ended: the old secret is
 * retired (still stored), the receiver holds the new one only.
 */
async function givenRotatedEndpoint(organizationId: string, receiver: Receiver) {
  const { deps } = await testStack();
  const admin = await settingsClient(organizationId);
  const { endpoint, secret: old } = (await admin.post('/api/settings/webhooks', { url: receiver.url, events: ['*'] })).json<{ endpoint: { id: string }; secret: string }>();
  const fresh = newSigningSecret();
  const now = Date.now();
  const rotated = await endpointStore(deps).rotateSecret({ organizationId, id: endpoint.id }, [
    { secret: fresh, createdAt: new Date(now - 86_400_000).toISOString() },
    { secret: old, createdAt: new Date(now - 2 * 86_400_000).toISOString(), expiresAt: new Date(now - 60_000).toISOString() },
  ], 1);
  expect(rotated).not.toBe('missing');
  receiver.secret = fresh;
  return { admin, endpointId: endpoint.id };
}

const failedRules = (answer: CheckAnswer) => answer.rules.filter((r) => !r.ok).map((r) => r.rule);

describe('the receiver check', () => {
  it('a receiver verifying with standardwebhooks passes; the replay is advice; the result is kept and the sends are in the delivery log', async () => {
    const { organizationId } = await newTenant();
    const { admin, endpointId } = await givenRotatedEndpoint(organizationId, receivers.strict);

    const checked = await admin.post(`/api/settings/webhooks/${endpointId}/check`);
    expect(checked.status).toBe(200);
    const answer = checked.json<CheckAnswer>();
    expect(answer.verdict).toBe('pass');
    expect(answer.rules.map((r) => [r.rule, r.status])).toEqual([
      ['signed', 204], ['wrong-signature', 401], ['body-changed', 401], ['no-signature', 401],
      ['stale-timestamp', 401], ['future-timestamp', 401], ['replay', 204], ['retired-secret', 401],
    ]);
    expect(failedRules(answer)).toEqual([]);
    // Stateless verification accepts the same request twice: advice, not a failure.
    const replay = answer.rules.find((r) => r.rule === 'replay')!;
    expect(replay).toMatchObject({ ok: true, expected: 'refusal or idempotent 2xx' });
    expect(replay.advice).toMatch(/webhook-id.*docs\/webhooks\.md#checking-a-receiver-replay/);
    expect(answer.rules.filter((r) => r.rule !== 'replay').every((r) => r.advice === null)).toBe(true);
    expect(receivers.strict.requests).toBe(RULE_ORDER.length);
    // The future-dated request is a test event of its own (docs/webhooks.md#checking-a-receiver-future-timestamp), never the first event's id.
    const [first, , , , , future] = receivers.strict.received.slice(-RULE_ORDER.length);
    expect(Number(future!.headers['webhook-timestamp']) - Number(first!.headers['webhook-timestamp'])).toBe(600);
    expect(JSON.parse(future!.body)).toMatchObject({ type: 'webhook.test', test: true, id: future!.headers['webhook-id'] });
    expect(future!.headers['webhook-id']).not.toBe(first!.headers['webhook-id']);

    // Kept: the endpoint shows it when the page opens.
    const { endpoints } = (await admin.get('/api/settings/webhooks')).json<{ endpoints: { id: string; lastCheck: CheckAnswer | null }[] }>();
    expect(endpoints.find((e) => e.id === endpointId)!.lastCheck).toEqual(answer);

    // In the delivery log as test sends: one per event, the replay as the first one's second attempt.
    const { deliveries } = (await admin.get(`/api/settings/deliveries?endpoint=${endpointId}`)).json<{ deliveries: { eventType: string; status: string; attemptCount: number; lastStatusCode: number }[] }>();
    expect(deliveries).toHaveLength(7);
    expect(deliveries.every((d) => d.eventType === 'webhook.test')).toBe(true);
    expect(deliveries.filter((d) => d.status === 'delivered').map((d) => [d.attemptCount, d.lastStatusCode])).toEqual([[2, 204]]);
    expect(deliveries.filter((d) => d.status === 'failed')).toHaveLength(6);
  });

  it('a receiver that accepts everything fails every refusal rule, each with advice linking into the docs', async () => {
    const { organizationId } = await newTenant();
    const { admin, endpointId } = await givenRotatedEndpoint(organizationId, receivers.careless);
    const answer = (await admin.post(`/api/settings/webhooks/${endpointId}/check`)).json<CheckAnswer>();
    expect(answer.verdict).toBe('fail');
    expect(failedRules(answer)).toEqual(['wrong-signature', 'body-changed', 'no-signature', 'stale-timestamp', 'future-timestamp', 'retired-secret']);
    for (const rule of answer.rules.filter((r) => !r.ok)) {
      expect(rule).toMatchObject({ status: 204, expected: 'refusal (non-2xx)' });
      expect(rule.advice).toContain(`docs/webhooks.md#checking-a-receiver-${rule.rule}`);
    }
  });

  it('a receiver checking the signature but not the timestamp fails only the two timestamp rules', async () => {
    const { organizationId } = await newTenant();
    const { admin, endpointId } = await givenRotatedEndpoint(organizationId, receivers.signatureOnly);
    const answer = (await admin.post(`/api/settings/webhooks/${endpointId}/check`)).json<CheckAnswer>();
    expect(answer.verdict).toBe('fail');
    expect(failedRules(answer)).toEqual(['stale-timestamp', 'future-timestamp']);
  });

  it('at most one check of an endpoint a minute (429 with Retry-After); another organization\'s endpoint is not found', async () => {
    const { organizationId } = await newTenant();
    const { admin, endpointId } = await givenRotatedEndpoint(organizationId, receivers.strict);
    expect((await admin.post(`/api/settings/webhooks/${endpointId}/check`)).status).toBe(200);
    const again = await admin.post(`/api/settings/webhooks/${endpointId}/check`);
    expect(again.status).toBe(429);
    expect(Number(again.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(Number(again.headers.get('retry-after'))).toBeLessThanOrEqual(61);

    const other = await settingsClient((await newTenant()).organizationId);
    const foreign = await other.post(`/api/settings/webhooks/${endpointId}/check`);
    expect(foreign.status).toBe(404);
  });

  it('an endpoint removed and added again to the same URL is not checked again within the minute: one check per origin', async () => {
    const { organizationId } = await newTenant();
    const admin = await settingsClient(organizationId);
    const add = async (url: string) => (await admin.post('/api/settings/webhooks', { url, events: ['*'] })).json<{ endpoint: { id: string } }>().endpoint.id;
    const first = await add(receivers.careless.url);
    expect((await admin.post(`/api/settings/webhooks/${first}/check`)).status).toBe(200);
    expect((await admin.delete(`/api/settings/webhooks/${first}`)).status).toBe(200);
    const before = receivers.careless.requests;
    for (const url of [receivers.careless.url, `${receivers.careless.url}/elsewhere?on=the-same-origin`]) {
      const refused = await admin.post(`/api/settings/webhooks/${await add(url)}/check`);
      expect(refused.status).toBe(429);
      expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
      expect(Number(refused.headers.get('retry-after'))).toBeLessThanOrEqual(61);
    }
    expect(receivers.careless.requests).toBe(before);
  });

  it('at most three checks of an organization a minute, whatever their endpoints and origins', async () => {
    const { organizationId } = await newTenant();
    const admin = await settingsClient(organizationId);
    const add = async (url: string) => (await admin.post('/api/settings/webhooks', { url, events: ['*'] })).json<{ endpoint: { id: string } }>().endpoint.id;
    for (const receiver of [receivers.careless, receivers.signatureOnly, receivers.ed25519]) {
      expect((await admin.post(`/api/settings/webhooks/${await add(receiver.url)}/check`)).status).toBe(200);
    }
    const fourth = await admin.post(`/api/settings/webhooks/${await add(receivers.another.url)}/check`);
    expect(fourth.status).toBe(429);
    expect(Number(fourth.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(receivers.another.requests).toBe(0);
  });

  it('a check\'s sends are not the endpoint\'s traffic: its statistics count only a real delivery, and no bulk re-delivery sends them again', async () => {
    const { organizationId } = await newTenant();
    const admin = await settingsClient(organizationId);
    const { endpoint, secret } = (await admin.post('/api/settings/webhooks', { url: receivers.strict.url, events: ['*'] })).json<{ endpoint: { id: string }; secret: string }>();
    receivers.strict.secret = secret;
    const answer = (await admin.post(`/api/settings/webhooks/${endpoint.id}/check`)).json<CheckAnswer>();
    expect(answer.verdict).toBe('pass');
    const listed = (await admin.get(`/api/settings/deliveries?endpoint=${endpoint.id}&status=failed`)).json<{ deliveries: unknown[] }>().deliveries;
    expect(listed).toHaveLength(5); // still in the log, failed as the check asked

    const redelivered = await admin.post('/api/settings/deliveries/redeliver', { endpoint: endpoint.id });
    expect(redelivered.status).toBe(202);
    expect(redelivered.json()).toMatchObject({ count: 0 });
    const since = new Date(Date.now() - 3_600_000).toISOString();
    expect((await admin.post('/api/settings/deliveries/recover', { since, endpoint_id: endpoint.id, dry_run: true })).json()).toMatchObject({ count: 0 });
    const cli = await runCli(['deliveries', 'redeliver', '--org', organizationId, '--endpoint', endpoint.id]);
    expect(cli.code).toBe(0);
    expect(cli.json()).toMatchObject({ redriven: 0 });

    // One real delivery after the check: the statistics hold it alone (the stream is read in order, so the check's records came first).
    expect((await admin.post(`/api/settings/webhooks/${endpoint.id}/test`, {})).status).toBeLessThan(300);
    const totals = await eventually(async () => {
      const t = (await admin.get(`/api/settings/webhooks/${endpoint.id}/stats?window=24h`)).json<{ totals: { delivered: number; failed: number; retrying: number } }>().totals;
      return t.delivered + t.failed > 0 ? t : undefined;
    }, { what: 'the endpoint\'s statistics' });
    expect(totals).toEqual({ delivered: 1, failed: 0, retrying: 0, success_rate: 1 });
  });

  it('an ed25519 endpoint is checked with v1a signatures: a receiver verifying them with its public key passes', async () => {
    const { organizationId } = await newTenant();
    const admin = await settingsClient(organizationId);
    const { endpoint } = (await admin.post('/api/settings/webhooks', { url: receivers.ed25519.url, events: ['*'], signing: 'ed25519' })).json<{ endpoint: { id: string; public_key: string } }>();
    receivers.ed25519.secret = endpoint.public_key;
    const answer = (await admin.post(`/api/settings/webhooks/${endpoint.id}/check`)).json<CheckAnswer>();
    expect(answer.rules.map((r) => [r.rule, r.status])).toEqual([
      ['signed', 204], ['wrong-signature', 401], ['body-changed', 401], ['no-signature', 401],
      ['stale-timestamp', 401], ['future-timestamp', 401], ['replay', 204], ['retired-secret', null],
    ]);
    expect(answer.verdict).toBe('pass');
    const sent = receivers.ed25519.received.slice(-7);
    const signatures = (i: number) => String(sent[i]!.headers['webhook-signature']).split(' ');
    expect(signatures(0).every((sig) => sig.startsWith('v1a,'))).toBe(true);
    // The forged one is of the endpoint's own scheme: a v1a signature the public key does not verify.
    expect(signatures(1).length).toBeGreaterThan(0);
    expect(signatures(1).every((sig) => /^v1a,[A-Za-z0-9+/]{86}==$/.test(sig))).toBe(true);
  });

  it('an endpoint without a retired secret: the retired-secret rule is not checked, and says why', async () => {
    const { organizationId } = await newTenant();
    const admin = await settingsClient(organizationId);
    const { endpoint } = (await admin.post('/api/settings/webhooks', { url: receivers.careless.url, events: ['*'] })).json<{ endpoint: { id: string } }>();
    const answer = (await admin.post(`/api/settings/webhooks/${endpoint.id}/check`)).json<CheckAnswer>();
    expect(answer.rules.find((r) => r.rule === 'retired-secret')).toMatchObject({ status: null, ok: true, advice: expect.stringMatching(/^Not checked: the endpoint holds no secret retired/) });
  });

  it('a receiver that never answers: the check stops after the first request\'s time-out, well inside the settings function\'s', async () => {
    const hanging = createServer(() => { /* never answers */ });
    await new Promise<void>((resolve) => hanging.listen(0, '127.0.0.1', resolve));
    try {
      const { organizationId } = await newTenant();
      const admin = await settingsClient(organizationId);
      const url = `http://127.0.0.1:${(hanging.address() as AddressInfo).port}/hooks`;
      const { endpoint } = (await admin.post('/api/settings/webhooks', { url, events: ['*'] })).json<{ endpoint: { id: string } }>();
      const started = Date.now();
      const answer = (await admin.post(`/api/settings/webhooks/${endpoint.id}/check`)).json<CheckAnswer>();
      expect(Date.now() - started).toBeLessThan(5_000);
      expect(answer.verdict).toBe('fail');
      expect(answer.rules[0]).toMatchObject({ rule: 'signed', status: null, ok: false, advice: expect.stringContaining('No answer within') });
      expect(answer.rules.slice(1, 7).every((r) => r.status === null && r.advice?.startsWith('Not checked'))).toBe(true);
    } finally {
      hanging.closeAllConnections();
      await new Promise<void>((resolve) => hanging.close(() => resolve()));
    }
  });

  it('an address the SSRF guard refuses is never connected to: the check stops at the first request', async () => {
    const { deps } = await testStack();
    const { organizationId } = await newTenant();
    const { endpoint } = await addEndpoint(deps, organizationId, { url: 'http://receiver.crm-test.example/hooks', events: ['*'] });
    const resolver: Resolver = (hostname, callback) => setImmediate(() => callback(null, [{ address: '10.20.30.40', family: 4 } as LookupAddress]));
    const answer = await checkReceiver(deps, organizationId, endpoint.id, { lookup: guardedLookup(resolver, []) });
    expect(answer.verdict).toBe('fail');
    expect(answer.rules[0]).toMatchObject({ rule: 'signed', status: null, ok: false, advice: expect.stringContaining('Refused before connecting') });
    expect(answer.rules.slice(1, 7).every((r) => r.status === null && r.advice?.startsWith('Not checked'))).toBe(true);
  });
});
