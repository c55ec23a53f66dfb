/**
 * IPv4/IPv6 addresses and CIDR ranges as text: parsing, the checks an allow-list entry must pass
 * (settings validate `ssrfAllowList` with them) and the entries a deployed stage drops. The SSRF
 * guard (delivery/ssrf.ts) compiles the ranges this parses.
 */
import { isIP } from 'node:net';

export type Family = 'ipv4' | 'ipv6';

export interface Cidr { net: string; prefix: number; type: Family; bytes: number[] }

/** A CIDR or bare address parsed, or what is wrong with its form (host bits set: a likely typo). */
function cidrForm(cidr: unknown): Cidr | string {
  if (typeof cidr !== 'string') return 'not a string';
  const [net, bits, extra] = cidr.trim().split('/');
  const family = net.includes('%') ? 0 : isIP(net);
  if (!family) return `"${cidr}" is not an IPv4 or IPv6 address or CIDR`;
  const max = family === 4 ? 32 : 128;
  if (extra !== undefined || (bits !== undefined && !/^\d{1,3}$/.test(bits)) || Number(bits ?? max) > max) return `"${cidr}" has no valid prefix length (0..${max})`;
  const prefix = Number(bits ?? max);
  const bytes = family === 4 ? net.split('.').map(Number) : ipv6Bytes(net);
  const hostBits = bytes.some((b, i) => (b & ~(0xff << (8 - Math.min(8, Math.max(0, prefix - 8 * i))))) !== 0);
  return hostBits ? `"${cidr}" has host bits set` : { net, prefix, type: family === 4 ? 'ipv4' : 'ipv6', bytes };
}

/** The widest allow-list entry: a VPC's range fits; anything wider mostly admits what the guard exists to refuse. */
const minAllowPrefix = { ipv4: 8, ipv6: 32 } as const;

/**
 * What is wrong with an allow-list entry (`10.20.0.0/16`, `fd00:1234::/32`, a bare address), or
 * undefined: a malformed CIDR, host bits set (`10.0.0.1/8`), or a prefix shorter than /8 (IPv4) or
 * /32 (IPv6), which would switch most of the guard off (`0.0.0.0/1` + `128.0.0.0/1` is everything).
 */
export function cidrProblem(cidr: unknown): string | undefined {
  const form = cidrForm(cidr);
  if (typeof form === 'string') return form;
  if (form.prefix === 0) return `"${String(cidr)}" would admit every address`;
  const min = minAllowPrefix[form.type];
  return form.prefix < min ? `"${String(cidr)}" is too wide: an allow-list entry must be /${min} or narrower` : undefined;
}

export function parseCidr(cidr: string, what: string, check: (cidr: string) => string | undefined = (c) => { const f = cidrForm(c); return typeof f === 'string' ? f : undefined; }): Cidr {
  const problem = check(cidr);
  if (problem) throw new Error(`Invalid CIDR in ${what}: ${cidr} (${problem})`);
  return cidrForm(cidr) as Cidr;
}

/** The 16 bytes of an IPv6 address (already validated by isIP), any spelling. */
export function ipv6Bytes(ip: string): number[] {
  let text = ip;
  const tail: number[] = [];
  const dotted = /(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  if (dotted) {
    tail.push(...dotted[1].split('.').map(Number));
    text = text.slice(0, -dotted[1].length) + '0:0';
  }
  const [head, rest] = text.split('::');
  const groups = (part: string | undefined) => (part ? part.split(':').filter(Boolean).map((g) => parseInt(g, 16)) : []);
  const left = groups(head);
  const right = groups(rest);
  const words = rest === undefined ? left : [...left, ...Array<number>(8 - left.length - right.length).fill(0), ...right];
  const bytes = words.flatMap((w) => [w >> 8, w & 255]);
  if (tail.length) bytes.splice(12, 4, ...tail);
  return bytes;
}

/** Ranges a deployed stage's allow-list may never open: loopback, link-local and cloud metadata, their aliases. */
const sensitiveRanges = ([
  ['127.0.0.0/8', 'loopback'],
  ['169.254.0.0/16', 'link-local (cloud metadata)'],
  ['0.0.0.0/8', 'this network (reaches loopback on Linux)'],
  ['::1/128', 'loopback'],
  ['fe80::/10', 'link-local'],
  ['fd00:ec2::254/128', 'EC2 metadata (IPv6)'],
  ['::/96', 'IPv4-compatible (deprecated)'],
  ['64:ff9b:1::/48', 'local-use NAT64'],
] as const).map(([cidr, label]) => ({ ...parseCidr(cidr, 'the sensitive ranges'), label: `${label} (${cidr})` }));
/** IPv6 prefixes whose last 32 bits are an IPv4 address the guard judges as IPv4 (see embeddedIpv4). */
const ipv4Embeddings = ['::ffff:0:0/96', '::ffff:0:0:0/96', '64:ff9b::/96'].map((c) => parseCidr(c, 'the IPv4 embeddings'));

/** Whether two ranges of one family share an address: their first min(prefix) bits agree. */
function overlaps(a: Pick<Cidr, 'type' | 'prefix' | 'bytes'>, b: Pick<Cidr, 'type' | 'prefix' | 'bytes'>): boolean {
  if (a.type !== b.type) return false;
  const bits = Math.min(a.prefix, b.prefix);
  for (let i = 0; i * 8 < bits; i++) {
    const mask = 0xff << (8 - Math.min(8, bits - 8 * i)) & 0xff;
    if ((a.bytes[i] & mask) !== (b.bytes[i] & mask)) return false;
  }
  return true;
}

/** Why an allow-list entry must not apply on a deployed stage, or undefined. */
export function sensitiveAllowEntry(cidr: string): string | undefined {
  const entry = cidrForm(cidr);
  if (typeof entry === 'string') return undefined; // malformed: cidrProblem refuses it elsewhere
  const hit = sensitiveRanges.find((r) => overlaps(entry, r));
  if (hit) return hit.label;
  for (const embedding of ipv4Embeddings) {
    if (!overlaps(entry, embedding)) continue;
    if (entry.prefix <= 96) return `every IPv4 address in IPv6 form (${embedding.net}/96), loopback and metadata included`;
    const inner = { type: 'ipv4' as const, prefix: entry.prefix - 96, bytes: entry.bytes.slice(12) };
    const innerHit = sensitiveRanges.find((r) => overlaps(inner, r));
    if (innerHit) return `${innerHit.label} in IPv6 form`;
  }
  return undefined;
}

/**
 * The allow-list a deployed stage applies: entries over loopback, link-local or cloud metadata are
 * dropped, each with `warn` (the same array when none is). The guard checks the allow-list before
 * the blocked ranges, so such an entry would re-open exactly what must stay closed on AWS.
 */
export function withoutSensitiveAllowEntries(allow: string[], warn: (message: string) => void): string[] {
  const kept = allow.filter((cidr) => {
    const reason = sensitiveAllowEntry(cidr);
    if (reason) warn(`ssrfAllowList entry "${cidr}" ignored: it overlaps ${reason}, never reachable from a deployed stage`);
    return !reason;
  });
  return kept.length === allow.length ? allow : kept;
}

