/**
 * SSRF guard (DESIGN §11): the addresses a webhook URL resolves to are checked when the connection
 * is made (a custom `lookup` on the HTTP agent), so a name that resolved to a public address when
 * the endpoint was registered and to a private one at delivery time is still refused.
 *
 * IPv6 forms that reach an IPv4 host (IPv4-mapped `::ffff:a.b.c.d`, IPv4-translated, the NAT64
 * well-known prefix `64:ff9b::/96`) are judged by the IPv4 address inside, whatever the spelling
 * (`::ffff:7f00:1` is 127.0.0.1). Forms no receiver needs are refused outright, whatever they
 * embed: the deprecated IPv4-compatible `::a.b.c.d` (`::/96`), 6to4 `2002::/16` (deprecated; it
 * goes through relays to whatever the embedded IPv4 names) and local-use NAT64 `64:ff9b:1::/48`
 * (translated by a site's own gateway, into its own network).
 */
import { BlockList, isIP, type LookupFunction } from 'node:net';
import { lookup as dnsLookup, type LookupAddress, type LookupOptions } from 'node:dns';

type Family = 'ipv4' | 'ipv6';

/** Most specific first: the first match names the reason. */
const blockedRanges: [cidr: string, label: string][] = [
  ['255.255.255.255/32', 'limited broadcast'],
  ['169.254.169.254/32', 'link-local (cloud metadata)'],
  ['0.0.0.0/8', 'this network'],
  ['10.0.0.0/8', 'private'],
  ['100.64.0.0/10', 'carrier-grade NAT'],
  ['127.0.0.0/8', 'loopback'],
  ['169.254.0.0/16', 'link-local (cloud metadata)'],
  ['172.16.0.0/12', 'private'],
  ['192.0.0.0/24', 'IETF protocol assignments'],
  ['192.0.2.0/24', 'documentation'],
  ['192.88.99.0/24', '6to4 relay anycast'],
  ['192.168.0.0/16', 'private'],
  ['198.18.0.0/15', 'benchmarking'],
  ['198.51.100.0/24', 'documentation'],
  ['203.0.113.0/24', 'documentation'],
  ['224.0.0.0/4', 'multicast'],
  ['240.0.0.0/4', 'reserved'],
  ['::/128', 'unspecified'],
  ['::1/128', 'loopback'],
  ['::/96', 'IPv4-compatible (deprecated)'],
  ['64:ff9b:1::/48', 'local-use NAT64'],
  ['2002::/16', '6to4 (deprecated)'],
  ['100::/64', 'discard'],
  ['2001:db8::/32', 'documentation'],
  ['2001::/23', 'IETF protocol assignments'],
  ['3fff::/20', 'documentation'],
  ['fc00::/7', 'unique local'],
  ['fe80::/10', 'link-local'],
  ['fec0::/10', 'site-local'],
  ['ff00::/8', 'multicast'],
];

interface Cidr { net: string; prefix: number; type: Family; bytes: number[] }

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

function parseCidr(cidr: string, what: string, check: (cidr: string) => string | undefined = (c) => { const f = cidrForm(c); return typeof f === 'string' ? f : undefined; }): Cidr {
  const problem = check(cidr);
  if (problem) throw new Error(`Invalid CIDR in ${what}: ${cidr} (${problem})`);
  return cidrForm(cidr) as Cidr;
}

const blocked = blockedRanges.map(([cidr, label]) => {
  const { net, prefix, type } = parseCidr(cidr, 'the SSRF block list');
  const list = new BlockList();
  list.addSubnet(net, prefix, type);
  return { list, type, reason: `${label} (${cidr})` };
});

/** The allow-list as a BlockList ("contains" is all we need); throws on an entry cidrProblem refuses. */
export function compileAllowList(allow: string[]): BlockList {
  const list = new BlockList();
  for (const cidr of allow) {
    const { net, prefix, type } = parseCidr(cidr, 'the SSRF allow-list', cidrProblem);
    list.addSubnet(net, prefix, type);
  }
  return list;
}

/** The 16 bytes of an IPv6 address (already validated by isIP), any spelling. */
function ipv6Bytes(ip: string): number[] {
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

const zero = (bytes: number[], from: number, to: number) => bytes.slice(from, to).every((b) => b === 0);

/** The IPv4 address an IPv6 address carries, if it is one of the forms that carry one. */
function embeddedIpv4(ip: string): { v4: string; form: string } | undefined {
  const b = ipv6Bytes(ip);
  const v4 = (at: number) => b.slice(at, at + 4).join('.');
  if (zero(b, 0, 10) && b[10] === 0xff && b[11] === 0xff) return { v4: v4(12), form: 'IPv4-mapped' };
  if (zero(b, 0, 8) && b[8] === 0xff && b[9] === 0xff && zero(b, 10, 12)) return { v4: v4(12), form: 'IPv4-translated' };
  if (b[0] === 0 && b[1] === 0x64 && b[2] === 0xff && b[3] === 0x9b && zero(b, 4, 12)) return { v4: v4(12), form: 'NAT64' };
  return undefined;
}

export interface Decision { blocked: boolean; reason?: string }

function decide(raw: string, allow: BlockList): Decision {
  const ip = raw.replace(/%.*$/, ''); // a zone id (fe80::1%eth0) says nothing about the range
  const family = isIP(ip);
  if (!family) return { blocked: true, reason: `not an IP address: ${raw}` };
  const type: Family = family === 4 ? 'ipv4' : 'ipv6';
  const embedded = type === 'ipv6' ? embeddedIpv4(ip) : undefined;
  if (allow.check(ip, type) || (embedded && allow.check(embedded.v4, 'ipv4'))) return { blocked: false };
  for (const range of blocked) {
    if (range.type === type && range.list.check(ip, type)) return { blocked: true, reason: range.reason };
  }
  if (embedded) {
    const inner = decide(embedded.v4, allow);
    if (inner.blocked) return { blocked: true, reason: `${inner.reason}, ${embedded.form} in ${raw}` };
  }
  return { blocked: false };
}

/**
 * Whether a resolved address may be connected to. `allow` (CIDRs, e.g. a VPC receiver's subnet)
 * wins over the blocked ranges; an allowed IPv4 range also admits its IPv6-embedded spellings.
 * Throws only on a malformed allow-list entry.
 */
export function isBlockedAddress(ip: string, allow: string[] = []): Decision {
  return decide(ip, compileAllowList(allow));
}

/** The earlier name of isBlockedAddress (endpoints.ts checks IP-literal URLs with it). */
export const checkAddress = isBlockedAddress;

/** Resolves a name to all its addresses (the guard must see every one, not just the first). */
export type Resolver = (hostname: string, callback: (error: NodeJS.ErrnoException | null, addresses: LookupAddress[]) => void) => void;

export const systemResolver: Resolver = (hostname, callback) => dnsLookup(hostname, { all: true, verbatim: true }, callback);

export class SsrfError extends Error {
  readonly code = 'ESSRF';
  constructor(readonly hostname: string, readonly address: string, readonly reason: string) {
    super(`refused to connect to ${hostname === address ? address : `${hostname} (${address})`}: ${reason}`);
    this.name = 'SsrfError';
  }
}

const wantedFamily = (family: LookupOptions['family']): 0 | 4 | 6 =>
  family === 4 || family === 'IPv4' ? 4 : family === 6 || family === 'IPv6' ? 6 : 0;

/**
 * A `lookup` for net/http(s) agents: resolves with `resolver` (default: dns.lookup, all addresses)
 * and fails with an SsrfError (code ESSRF, naming the address and the reason) if ANY address is
 * blocked, so a name with one public and one private address is refused as a whole. IP literals
 * are judged without resolving. Honours `options.all` and `options.family`.
 *
 * Also callable as guardedLookup(allow, resolver?).
 */
export function guardedLookup(resolver?: Resolver, allow?: string[]): LookupFunction;
export function guardedLookup(allow: string[], resolver?: Resolver): LookupFunction;
export function guardedLookup(first?: Resolver | string[], second?: Resolver | string[]): LookupFunction {
  const [resolver, allowCidrs] = Array.isArray(first)
    ? [(second as Resolver | undefined) ?? systemResolver, first]
    : [first ?? systemResolver, (second as string[] | undefined) ?? []];
  const allow = compileAllowList(allowCidrs);

  return (hostname, options, callback) => {
    const all = Boolean(options?.all);
    const fail = (error: NodeJS.ErrnoException) => callback(error, all ? [] : '', 0);
    const judge = (error: NodeJS.ErrnoException | null, addresses: LookupAddress[]) => {
      if (error) return fail(error);
      if (!addresses?.length) return fail(Object.assign(new Error(`no address for ${hostname}`), { code: 'ENOTFOUND', hostname }));
      for (const { address } of addresses) {
        const decision = decide(address, allow);
        if (decision.blocked) return fail(new SsrfError(hostname, address, decision.reason!));
      }
      const family = wantedFamily(options?.family);
      const usable = family ? addresses.filter((a) => a.family === family) : addresses;
      if (!usable.length) return fail(Object.assign(new Error(`no IPv${family} address for ${hostname}`), { code: 'ENOTFOUND', hostname }));
      if (all) return callback(null, usable);
      callback(null, usable[0].address, usable[0].family);
    };
    const literal = isIP(hostname.replace(/%.*$/, ''));
    if (literal) return process.nextTick(judge, null, [{ address: hostname, family: literal }]);
    let answered = false;
    try {
      resolver(hostname, (error, addresses) => {
        if (answered) return;
        answered = true;
        judge(error, addresses);
      });
    } catch (error) {
      if (!answered) fail(error as NodeJS.ErrnoException);
    }
  };
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

/** CIDRs the guard admits: the stage's allow-list, plus loopback on the local stack. */
export const allowListFor = (settings: { ssrfAllowList: string[]; local: boolean }): string[] =>
  settings.local ? [...settings.ssrfAllowList, '127.0.0.0/8', '::1/128'] : settings.ssrfAllowList;
