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
