/**
 * The receiver check through the settings API (docs/webhooks.md#checking-a-receiver), against three
 * real receivers on 127.0.0.1: one that verifies with the `standardwebhooks` library (pass), one
 * that accepts everything (fails every refusal rule), one that checks the signature but not the
 * timestamp (fails the two timestamp rules only). Each endpoint was rotated and its grace has
 * ended, so the retired-secret rule is checked too. Then: the result is kept on the endpoint, the
 * sends are test deliveries in the delivery log, a second check within a minute is a 429, another
 * organization's endpoint a 404, and an address the SSRF guard refuses (a stubbed resolver) is
 * never connected to.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { LookupAddress } from 'node:dns';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Webhook } from 'standardwebhooks';
import { newTenant, testStack } from '../support/stack.js';
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
  private server!: Server;
  constructor(private readonly verify: Verify) {}
  async start(): Promise<this> {
    this.server = createServer((req, res) => {
      let body = '';
      req.on('data', (c) => (body += c));
      req.on('end', () => {
        this.requests += 1;
        res.writeHead(this.verify(this.secret, body, req.headers) ? 204 : 401).end();
      });
    });
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/hooks`;
    return this;
  }
  stop = () => new Promise<void>((resolve) => this.server.close(() => resolve()));
}

const receivers = { strict: new Receiver(strict), careless: new Receiver(careless), signatureOnly: new Receiver(signatureOnly) };
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
