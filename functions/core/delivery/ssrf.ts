/**
 * SSRF guard (docs/webhooks.md#security): the addresses a webhook URL resolves to are checked when the connection
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
import { cidrProblem, ipv6Bytes, parseCidr, type Family } from '../platform/ip-ranges.js';

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

/** The refused ranges (CIDRs), for the table test that holds a row for each. */
export const BLOCKED_RANGES: readonly string[] = blockedRanges.map(([cidr]) => cidr);

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
 */
export function guardedLookup(resolver: Resolver = systemResolver, allowCidrs: string[] = []): LookupFunction {
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

/** CIDRs the guard admits: the stage's allow-list, plus loopback on the local stack. */
export const allowListFor = (settings: { ssrfAllowList: string[]; local: boolean }): string[] =>
  settings.local ? [...settings.ssrfAllowList, '127.0.0.0/8', '::1/128'] : settings.ssrfAllowList;
