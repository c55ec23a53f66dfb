/** The attempt log's bounds (delivery/attempt-log.ts), and the delivered record that uses them. */
import { describe, it, expect } from '@jest/globals';
import { appendAttempts, attemptError, clip, keptHeaders, MAX_ERROR_CHARS, MAX_HEADER_CHARS, MAX_KEPT_ATTEMPTS, MAX_KEPT_HEADERS } from '../../../functions/core/delivery/attempt-log.js';
import { deliveredRecord } from '../../../functions/core/delivery/batch-records.js';
import type { DeliveryAttempt } from '../../../functions/core/platform/model.js';

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

  it('a delivered record written whole (the batch write) is bounded the same way', () => {
    const record = { pk: 'p', sk: 's', status: 'pending' as const, createdAt: new Date(0).toISOString(), attempts: Array.from({ length: MAX_KEPT_ATTEMPTS }, (_, i) => attempt(i + 1)), olderAttempts: 7 };
    const delivered = deliveredRecord(record, { ...attempt(99), statusCode: 204 }, new Date(0).toISOString());
    expect(delivered.attempts).toHaveLength(MAX_KEPT_ATTEMPTS);
    expect(delivered.attempts!.at(-1)).toMatchObject({ attempt: 99, statusCode: 204 });
    expect(delivered.olderAttempts).toBe(8);
  });
});

describe('keptHeaders', () => {
  it('keeps at most MAX_KEPT_HEADERS, each value at most MAX_HEADER_CHARS, names lower-cased, signatures shortened', () => {
    const many = Array.from({ length: 50 }, (_, i): [string, string] => [`X-Header-${i}`, 'v'.repeat(5_000)]);
    const kept = keptHeaders(many);
    expect(Object.keys(kept)).toHaveLength(MAX_KEPT_HEADERS);
    for (const [name, value] of Object.entries(kept)) {
      expect(name).toBe(name.toLowerCase());
      expect(Array.from(value).length).toBe(MAX_HEADER_CHARS);
    }
    expect(keptHeaders([['Webhook-Signature', `v1,${'a'.repeat(44)} v1,${'b'.repeat(44)}`]])).toEqual({ 'webhook-signature': `v1,${'a'.repeat(12)}… v1,${'b'.repeat(12)}…` });
    expect(keptHeaders([['Content-Type', 'application/json']])).toEqual({ 'content-type': 'application/json' });
  });
});
