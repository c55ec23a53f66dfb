/**
 * The body limit counts bytes and is inclusive (docs/leads.md: 64 KiB is 65,536 bytes): a body of
 * exactly the limit is read, one byte more is a 413. Off by one either way, a form that fills the
 * limit is refused or a body over it stored.
 */
import { describe, it, expect } from '@jest/globals';
import { readJsonBody, readUtf8Body } from '../../../functions/core/platform/http-request.js';
import { DomainError } from '../../../functions/core/platform/errors.js';
import { MAX_BODY_BYTES } from '../../../functions/core/intake/lead-schema.js';

const json = { 'content-type': 'application/json' };
/** A JSON object of exactly `bytes` bytes: `{"notes":"xxx…"}`. */
const bodyOf = (bytes: number) => `{"notes":"${'x'.repeat(bytes - '{"notes":""}'.length)}"}`;
const statusOf = (read: () => unknown) => {
  try {
    read();
    return 'read';
  } catch (error) {
    return (error as DomainError).status;
  }
};

describe('the body limit', () => {
  it('is 65,536 bytes for a lead', () => {
    expect(MAX_BODY_BYTES).toBe(65_536);
  });

  it.each([
    ['text', (n: number) => bodyOf(n)],
    ['bytes', (n: number) => Buffer.from(bodyOf(n))],
  ])('reads a body of exactly the limit and refuses one byte more with 413 (given as %s)', (_how, body) => {
    expect(Buffer.byteLength(bodyOf(MAX_BODY_BYTES))).toBe(65_536);
    expect(statusOf(() => readJsonBody({ headers: json, body: body(MAX_BODY_BYTES) }, MAX_BODY_BYTES))).toBe('read');
    expect(statusOf(() => readJsonBody({ headers: json, body: body(MAX_BODY_BYTES + 1) }, MAX_BODY_BYTES))).toBe(413);
  });

  it('counts bytes, not characters: 2-byte characters reach it at half the length', () => {
    const at = 'é'.repeat(MAX_BODY_BYTES / 2);
    expect(statusOf(() => readUtf8Body({ headers: json, body: at }, MAX_BODY_BYTES))).toBe('read');
    expect(statusOf(() => readUtf8Body({ headers: json, body: `${at}x` }, MAX_BODY_BYTES))).toBe(413);
  });
});
