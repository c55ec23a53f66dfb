import { randomBytes } from 'node:crypto';

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

/** `length` base62 characters from the CSPRNG, unbiased (rejection sampling): 5.95 bits each. */
export function randomBase62(length: number): string {
  let out = '';
  while (out.length < length) {
    for (const byte of randomBytes(length * 2)) {
      if (byte < 248) out += BASE62[byte % 62]; // 248 = 4 × 62: keeps every character equally likely
      if (out.length === length) break;
    }
  }
  return out;
}

/** A prefixed public id, e.g. `org_3fA9c2D1xQ0b`. */
export const newId = (prefix: string, length = 14) => `${prefix}_${randomBase62(length)}`;

/** Characters of the time part: base62 of a 48-bit millisecond time (62^9 > 2^48), zero-padded. */
export const TIME_PART_LENGTH = 9;

/** The time part of a time-ordered id: fixed width, so ids compare as their times do (BASE62 is in ASCII order). */
export function timePart(epochMs: number): string {
  let n = Math.max(0, Math.floor(epochMs));
  let out = '';
  for (let i = 0; i < TIME_PART_LENGTH; i++) {
    out = BASE62[n % 62] + out;
    n = Math.floor(n / 62);
  }
  return out;
}

/**
 * A time-ordered public id, e.g. `cli_00VZkX3b9QfA3c2D1xQ0bZr`: 9 base62 characters of the
 * creation time in ms, then 14 random ones (83 bits). Sorted as strings, they sort by creation
 * time (to the ms; within one ms, randomly), so a DynamoDB sort key built on them can be read
 * newest-first without an index. Ids made by `newId` (random only) stay valid; they just do not sort.
 */
export const newTimeOrderedId = (prefix: string, epochMs: number) => `${prefix}_${timePart(epochMs)}${randomBase62(14)}`;
