/**
 * The webhook HTTP client against a real receiver on 127.0.0.1 (the guard is told to admit
 * loopback). A tripwire refuses any non-loopback connect, so a broken test cannot reach the network.
 */
import { describe, it, expect, beforeAll, afterAll } from '@jest/globals';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import type { LookupAddress } from 'node:dns';
import { postWebhook, destroyAgents, MAX_READ_BODY_BYTES, MAX_RESPONSE_BODY_BYTES, USER_AGENT, type PostWebhookInput } from '../../../functions/core/delivery/http-client.js';
import { guardedLookup, type Resolver } from '../../../functions/core/delivery/ssrf.js';
import { installTripwire, type Tripwire } from './support/tripwire.js';

const LOOPBACK = ['127.0.0.0/8'];

type Received = { path: string; headers: IncomingMessage['headers']; body: string; socket: Socket };

/** A receiver whose behaviour is chosen by the path. */
function receiver() {
  const received: Received[] = [];
  const sockets = new Set<Socket>();
  const requestsOn = new Map<Socket, number>();
  const routes: Record<string, (req: IncomingMessage, res: ServerResponse) => void> = {
    '/ok': (_req, res) => res.writeHead(200, { 'Content-Type': 'text/plain' }).end('thanks'),
    '/no-content': (_req, res) => res.writeHead(204).end(),
    '/fail': (_req, res) => res.writeHead(500).end('boom'),
    '/moved': (_req, res) => res.writeHead(302, { Location: '/ok' }).end(),
    '/busy': (_req, res) => res.writeHead(429, { 'Retry-After': '120' }).end(),
    '/unavailable': (_req, res) => res.writeHead(503, { 'Retry-After': 'Wed, 21 Oct 2026 07:28:00 GMT' }).end(),
    '/silent': () => undefined, // never answers
    '/trickle': (_req, res) => res.writeHead(200).write('partial'), // headers, then nothing
    '/big': (_req, res) => res.writeHead(200).end('é'.repeat(3000) + 'x'.repeat(20_000)), // 26 KB, multi-byte first
    '/hang-up': (req) => req.socket.destroy(),
    // Drops the connection on its second request, like a receiver closing an idle keep-alive socket.
    '/flaky-keepalive': (req, res) => {
      if (requestsOn.get(req.socket) === 2) return req.socket.destroy();
      res.writeHead(200).end('ok');
    },
  };
  const server: Server = createServer((req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (chunk: string) => (body += chunk));
    req.on('end', () => {
      requestsOn.set(req.socket, (requestsOn.get(req.socket) ?? 0) + 1);
      received.push({ path: req.url!, headers: req.headers, body, socket: req.socket });
      (routes[req.url!] ?? routes['/ok'])(req, res);
    });
  });
  server.on('connection', (socket: Socket) => sockets.add(socket));
  return {
    received,
    sockets,
    start: () => new Promise<string>((resolve) => server.listen(0, '127.0.0.1', () => resolve(`http://127.0.0.1:${(server.address() as AddressInfo).port}`))),
    stop: () => {
      server.closeAllConnections();
      return new Promise((resolve) => server.close(resolve));
    },
  };
}

const rx = receiver();
let base: string;
let tripwire: Tripwire;

beforeAll(async () => {
  tripwire = installTripwire();
  base = await rx.start();
});
afterAll(async () => {
  destroyAgents();
  await rx.stop();
  tripwire.uninstall();
  expect(tripwire.refused).toEqual([]);
});

const post = (path: string, extra: Partial<PostWebhookInput> = {}) =>
  postWebhook({ url: `${base}${path}`, headers: { 'webhook-id': 'evt_1' }, body: '{"type":"webhook.test"}', timeoutMs: 2000, allow: LOOPBACK, ...extra });

describe('posting a webhook', () => {
  it('delivers on a 2xx, with our User-Agent, JSON content type, the caller’s headers and the exact body', async () => {
    const result = await post('/ok', { headers: { 'webhook-id': 'evt_1', 'webhook-signature': 'v1,abc' } });
    const { requestHeaders, responseHeaders, ...rest } = result;
    expect(rest).toEqual({ ok: true, status: 200, responseBody: 'thanks', latencyMs: expect.any(Number) });
    // What was sent and what came back, for the attempt log (attempt-log.ts keptHeaders bounds them).
    expect(Object.fromEntries(requestHeaders!)).toMatchObject({ 'webhook-id': 'evt_1', 'webhook-signature': 'v1,abc', 'Content-Type': 'application/json' });
    expect(Object.fromEntries(responseHeaders!.map(([name, value]) => [name.toLowerCase(), value]))).toMatchObject({ 'content-type': 'text/plain' });
    const request = rx.received.at(-1)!;
    expect(request.headers).toMatchObject({
      'user-agent': USER_AGENT, 'content-type': 'application/json', 'webhook-id': 'evt_1', 'webhook-signature': 'v1,abc', 'content-length': '23',
    });
    expect(USER_AGENT).toBe('crm-webhooks/1.0 (+https://docs.crm.example/webhooks)');
    expect(request.body).toBe('{"type":"webhook.test"}');
    expect(await post('/no-content')).toMatchObject({ ok: true, status: 204, responseBody: '' });
  });

  it('fails on a 500 and keeps what the receiver said', async () => {
    expect(await post('/fail')).toMatchObject({ ok: false, status: 500, responseBody: 'boom' });
  });

  it('does not follow a redirect: a 3xx is a failure with its status recorded', async () => {
    const before = rx.received.length;
    const result = await post('/moved');
    expect(result).toMatchObject({ ok: false, status: 302, errorCode: 'EREDIRECT', error: expect.stringContaining('/ok') });
    expect(rx.received.slice(before).map((r) => r.path)).toEqual(['/moved']);
  });

  it('gives up after the time-out when the receiver does not answer', async () => {
    const result = await post('/silent', { timeoutMs: 200 });
    expect(result).toMatchObject({ ok: false, errorCode: 'ETIMEDOUT' });
    expect(result.status).toBeUndefined();
    expect(result.latencyMs).toBeGreaterThanOrEqual(195);
    expect(result.latencyMs).toBeLessThan(10_000); // gave up, not hung: a loaded machine may be seconds late
  });

  it('counts the whole response against the time-out, not just the headers', async () => {
    const result = await post('/trickle', { timeoutMs: 200 });
    expect(result).toMatchObject({ ok: false, status: 200, errorCode: 'ETIMEDOUT' });
  });

  it(`reads at most ${MAX_READ_BODY_BYTES} bytes of the response body and says it stopped (the attempt keeps ${MAX_RESPONSE_BODY_BYTES} of them, redacted first)`, async () => {
    const result = await post('/big');
    expect(result.ok).toBe(true);
    expect(Buffer.byteLength(result.responseBody!)).toBe(MAX_READ_BODY_BYTES);
    expect(result.responseBody).toBe('é'.repeat(3000) + 'x'.repeat(MAX_READ_BODY_BYTES - 6000));
    expect(result.responseBodyTruncated).toBe(true);
    expect((await post('/ok')).responseBodyTruncated).toBeUndefined();
  });

  it('captures Retry-After from a 429 or a 503, as sent', async () => {
    expect(await post('/busy')).toMatchObject({ ok: false, status: 429, retryAfter: '120' });
    expect(await post('/unavailable')).toMatchObject({ ok: false, status: 503, retryAfter: 'Wed, 21 Oct 2026 07:28:00 GMT' });
  });

  it('reuses a kept-alive connection for the next delivery', async () => {
    const allow = [...LOOPBACK, '10.99.0.0/16']; // a fresh allow-list config, so fresh agents
    const before = rx.sockets.size;
    expect((await post('/ok', { allow })).ok).toBe(true);
    expect((await post('/ok', { allow })).ok).toBe(true);
    expect((await post('/ok', { allow })).ok).toBe(true);
    expect(rx.sockets.size - before).toBe(1);
    const [a, b, c] = rx.received.slice(-3);
    expect(a.socket).toBe(b.socket);
    expect(b.socket).toBe(c.socket);
  });

  it('retries once on a fresh connection when a kept-alive one turns out to be closed', async () => {
    const allow = [...LOOPBACK, '10.98.0.0/16'];
    const before = rx.sockets.size;
    expect((await post('/flaky-keepalive', { allow })).ok).toBe(true);
    expect(await post('/flaky-keepalive', { allow })).toMatchObject({ ok: true, status: 200 });
    expect(rx.sockets.size - before).toBe(2);
  });

  it('uses the injected guard as its DNS: a name only the stub resolver knows is delivered to', async () => {
    const port = new URL(base).port;
    const resolver: Resolver = (hostname, callback) =>
      callback(hostname === 'receiver.test' ? null : Object.assign(new Error('ENOTFOUND'), { code: 'ENOTFOUND' }), [{ address: '127.0.0.1', family: 4 } as LookupAddress]);
    const lookup = guardedLookup(resolver, LOOPBACK);
    const result = await postWebhook({ url: `http://receiver.test:${port}/ok`, headers: {}, body: '{}', timeoutMs: 2000, lookup });
    expect(result).toMatchObject({ ok: true, status: 200 });
    expect(rx.received.at(-1)!.headers.host).toBe(`receiver.test:${port}`);
  });
});

describe('network failures are results, never exceptions', () => {
  it('reports a refused connection', async () => {
    const closed = receiver();
    const url = await closed.start();
    await closed.stop();
    expect(await postWebhook({ url: `${url}/ok`, headers: {}, body: '{}', timeoutMs: 2000, allow: LOOPBACK })).toMatchObject({ ok: false, errorCode: 'ECONNREFUSED' });
  });

  it('reports a receiver that hangs up without answering', async () => {
    const result = await post('/hang-up', { allow: [...LOOPBACK, '10.97.0.0/16'] });
    expect(result).toMatchObject({ ok: false, errorCode: 'ECONNRESET' });
    expect(result.status).toBeUndefined();
  });

  it('reports an unusable URL', async () => {
    expect(await postWebhook({ url: 'not a url', headers: {}, body: '{}' })).toMatchObject({ ok: false, errorCode: 'EINVALIDURL' });
    expect(await postWebhook({ url: 'ftp://127.0.0.1/x', headers: {}, body: '{}', allow: LOOPBACK })).toMatchObject({ ok: false, errorCode: 'EINVALIDURL' });
  });

  it('reports a header the HTTP layer refuses', async () => {
    expect(await post('/ok', { headers: { 'webhook-id': 'evt_1\r\nx-injected: 1' } })).toMatchObject({ ok: false, errorCode: 'ERR_INVALID_CHAR' });
  });

  it('refuses loopback when the allow-list does not admit it', async () => {
    const before = rx.received.length;
    expect(await post('/ok', { allow: [] })).toMatchObject({ ok: false, errorCode: 'ESSRF', error: expect.stringContaining('loopback') });
    expect(rx.received.length).toBe(before);
  });
});
