/** The attempt log's bounds (delivery/attempt-log.ts), and the delivered record that uses them. */
import { describe, it, expect } from '@jest/globals';
import {
  appendAttempts, attemptError, clip, keptHeaders, MAX_ERROR_CHARS, MAX_HEADER_BYTES, MAX_HEADER_CHARS, MAX_HEADER_NAME_CHARS, MAX_KEPT_ATTEMPTS, MAX_KEPT_HEADERS, NOT_KEPT, REDACTED,
} from '../../../functions/core/delivery/attempt-log.js';
import { MAX_RESPONSE_BODY_BYTES } from '../../../functions/core/delivery/http-client.js';
import { applyChange, changeOf } from '../../../functions/core/delivery/delivery-state.js';
import type { DeliveryAttempt } from '../../../functions/core/platform/model.js';
import { clipBytes } from '../../../functions/core/platform/text.js';

const attempt = (n: number): DeliveryAttempt => ({ at: new Date(n * 1000).toISOString(), attempt: n, latencyMs: 1, statusCode: 500 });

describe('attempt log', () => {
  it('keeps an error text under the bound whatever the receiver sent, and a short one as it is', () => {
    const error = attemptError({ errorCode: 'EREDIRECT', error: `redirect (302) to https://x.example/${'x'.repeat(15_000)} not followed` })!;
    expect(error.length).toBeLessThanOrEqual(MAX_ERROR_CHARS);
    expect(error.startsWith('EREDIRECT: redirect (302) to https://x.example/')).toBe(true);
    expect(error.endsWith('…')).toBe(true);
    expect(attemptError({ errorCode: 'ECONNREFUSED', error: 'connect ECONNREFUSED 127.0.0.1:9' })).toBe('ECONNREFUSED: connect ECONNREFUSED 127.0.0.1:9');
    expect(attemptError({})).toBeUndefined();
  });

  it('never cuts a character in half', () => {
    expect(Array.from(clip('😀'.repeat(400), 10))).toHaveLength(10);
    expect(clip('😀'.repeat(400), 10)).toBe(`${'😀'.repeat(9)}…`);
  });

  it(`keeps the ${MAX_KEPT_ATTEMPTS} most recent attempts and counts the older ones`, () => {
    let log: { attempts?: DeliveryAttempt[]; olderAttempts?: number } = {};
    for (let n = 1; n <= 50; n++) log = appendAttempts(log, attempt(n));
    expect(log.attempts!.map((a) => a.attempt)).toEqual(Array.from({ length: MAX_KEPT_ATTEMPTS }, (_, i) => 31 + i));
    expect(log.olderAttempts).toBe(30);
    expect(appendAttempts({}, attempt(1))).toEqual({ attempts: [attempt(1)] });
  });

  it('a delivered record (the transitions both stores carry out) is bounded the same way', () => {
    const record = { pk: 'p', sk: 's', status: 'pending' as const, createdAt: new Date(0).toISOString(), attempts: Array.from({ length: MAX_KEPT_ATTEMPTS }, (_, i) => attempt(i + 1)), olderAttempts: 7 };
    const delivered = applyChange(record, changeOf({ organizationId: 'o', deliveryId: 'd' }, { to: 'delivered', attempt: { ...attempt(99), statusCode: 204 } }, 0)) as typeof record;
    expect(delivered.attempts).toHaveLength(MAX_KEPT_ATTEMPTS);
    expect(delivered.attempts!.at(-1)).toMatchObject({ attempt: 99, statusCode: 204 });
    expect(delivered.olderAttempts).toBe(8);
  });
});

describe('keptHeaders', () => {
  it('keeps at most MAX_KEPT_HEADERS, names and values cut, names lower-cased, signatures shortened', () => {
    const many = Array.from({ length: 50 }, (_, i): [string, string] => [`X-H-${i}`, 'v'.repeat(30)]);
    expect(Object.keys(keptHeaders(many, 'response'))).toHaveLength(MAX_KEPT_HEADERS);
    const long = keptHeaders([[`X-${'N'.repeat(500)}`, 'v'.repeat(5_000)]], 'response');
    const [[name, value]] = Object.entries(long);
    expect(name).toBe(name.toLowerCase());
    expect(Array.from(name)).toHaveLength(MAX_HEADER_NAME_CHARS);
    expect(Array.from(value)).toHaveLength(MAX_HEADER_CHARS);
    expect(keptHeaders([['Webhook-Signature', `v1,${'a'.repeat(44)} v1,${'b'.repeat(44)}`]], 'request')).toEqual({ 'webhook-signature': `v1,${'a'.repeat(12)}… v1,${'b'.repeat(12)}…` });
    expect(keptHeaders([['Content-Type', 'application/json']], 'request')).toEqual({ 'content-type': 'application/json' });
  });

  it(`keeps at most ${MAX_HEADER_BYTES} bytes of names and values per side, whatever the receiver sends`, () => {
    const wide = Array.from({ length: 50 }, (_, i): [string, string] => [`X-${i}-${'😀'.repeat(400)}`, '😀'.repeat(5_000)]);
    const long = Array.from({ length: 50 }, (_, i): [string, string] => [`Content-Type-${i}-${'n'.repeat(400)}`, 'v'.repeat(5_000)]);
    for (const [side, hostile] of [['request', wide], ['response', wide], ['request', long], ['response', long]] as const) {
      const kept = keptHeaders([...hostile], side);
      expect(Object.entries(kept).reduce((n, [k, v]) => n + Buffer.byteLength(k) + Buffer.byteLength(v), 0)).toBeLessThanOrEqual(MAX_HEADER_BYTES);
    }
  });

  it('shows only allow-listed request headers with a value, and redacts credential-like response headers', () => {
    const request = keptHeaders([['webhook-id', 'msg_1'], ['webhook-timestamp', '1700000000'], ['Content-Type', 'application/json'], ['User-Agent', 'crm'], ['Content-Length', '12'], ['X-Custom-Auth', 'hunter2'], ['Authorization', 'Bearer abc']], 'request');
    expect(request).toEqual({ 'webhook-id': 'msg_1', 'webhook-timestamp': '1700000000', 'content-type': 'application/json', 'user-agent': 'crm', 'content-length': '12', 'x-custom-auth': NOT_KEPT, authorization: NOT_KEPT });
    const response = keptHeaders([
      ['Set-Cookie', 'session=abc'], ['WWW-Authenticate', 'Basic realm=x'], ['Authorization', 'x'], ['Proxy-Authenticate', 'x'], ['Proxy-Connection', 'keep-alive'],
      ['X-Api-Key', 'k'], ['X-Auth-Token', 't'], ['X-Client-Secret', 's'], ['Cookie', 'c'], ['Content-Type', 'text/plain'], ['Server', 'nginx'],
    ], 'response');
    expect(response).toEqual({
      'set-cookie': REDACTED, 'www-authenticate': REDACTED, authorization: REDACTED, 'proxy-authenticate': REDACTED, 'proxy-connection': REDACTED,
      'x-api-key': REDACTED, 'x-auth-token': REDACTED, 'x-client-secret': REDACTED, cookie: REDACTED, 'content-type': 'text/plain', server: 'nginx',
    });
  });
});

/** An item's size as DynamoDB counts it (names and strings in UTF-8, numbers ≤ 21 bytes, 3 bytes + 1 per element for a map or list). */
function itemBytes(value: unknown): number {
  if (typeof value === 'string') return Buffer.byteLength(value);
  if (typeof value === 'number') return 21;
  if (typeof value === 'boolean' || value === null) return 1;
  if (Array.isArray(value)) return 3 + value.reduce((n: number, v) => n + 1 + itemBytes(v), 0);
  return 3 + Object.entries(value as object).reduce((n, [k, v]) => n + 1 + Buffer.byteLength(k) + itemBytes(v), 0);
}

describe('a full delivery record', () => {
  it('stays far under DynamoDB\'s 400 KB item limit in the worst case a receiver can make', () => {
    const hostileHeaders = Array.from({ length: 50 }, (_, i): [string, string] => [`Content-Type-${i}-${'n'.repeat(400)}`, 'v'.repeat(5_000)]);
    const worst: DeliveryAttempt = {
      at: new Date(0).toISOString(), attempt: 5, latencyMs: 30_000, statusCode: 599,
      error: attemptError({ errorCode: 'EREDIRECT', error: '😀'.repeat(15_000) }),
      // 4 KiB of bytes that are not UTF-8, decoded: each becomes a 3-byte U+FFFD.
      responseBody: clipBytes(Buffer.alloc(MAX_RESPONSE_BODY_BYTES, 0xff).toString('utf8'), MAX_RESPONSE_BODY_BYTES),
      requestHeaders: keptHeaders(hostileHeaders, 'request'),
      responseHeaders: keptHeaders(hostileHeaders, 'response'),
    };
    expect(itemBytes(worst.requestHeaders) + itemBytes(worst.responseHeaders)).toBeLessThanOrEqual(2 * MAX_HEADER_BYTES + 200);
    let record: Record<string, unknown> = {
      pk: `ORG#${'o'.repeat(36)}`, sk: `DELIVERY#${'d'.repeat(64)}`, gsi1pk: `DELIVERY#${'d'.repeat(64)}`, gsi1sk: 'x', id: 'd'.repeat(64), organizationId: 'o'.repeat(36),
      endpointId: 'e'.repeat(36), eventId: 'v'.repeat(36), eventType: 'client.updated', status: 'pending', reason: '😀'.repeat(300), createdAt: worst.at, updatedAt: worst.at,
      queuedAt: worst.at, redrivenAt: worst.at, nextAttemptAt: worst.at, expiresAt: 0, duePk: 'due#7', dueAt: 0, dueRound: worst.at, olderAttempts: 0,
    };
    for (let n = 0; n < 3 * MAX_KEPT_ATTEMPTS; n++) record = { ...record, ...appendAttempts(record, worst) };
    const bytes = itemBytes(record);
    if (process.env.PRINT_SIZES) console.log({ bytes, attempt: itemBytes(worst) }); // the figure docs/decisions.md gives
    expect(bytes).toBeLessThan(200 * 1024);
  });
});
