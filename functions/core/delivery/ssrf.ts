/**
 * SSRF guard (DESIGN §11): the addresses a webhook URL resolves to are checked when the connection
 * is made (a custom `lookup` on the HTTP agent), so a name that resolved to a public address when
 * the endpoint was registered and to a private one at delivery time is still refused.
 */
import { BlockList, isIP, type LookupFunction } from 'node:net';
import { lookup as dnsLookup, type LookupAddress } from 'node:dns';

const ranges: [string, number, 'ipv4' | 'ipv6', string][] = [
  ['0.0.0.0', 8, 'ipv4', 'this network'],
  ['10.0.0.0', 8, 'ipv4', 'private'],
  ['100.64.0.0', 10, 'ipv4', 'carrier-grade NAT'],
  ['127.0.0.0', 8, 'ipv4', 'loopback'],
  ['169.254.0.0', 16, 'ipv4', 'link-local (cloud metadata)'],
  ['172.16.0.0', 12, 'ipv4', 'private'],
  ['192.0.0.0', 24, 'ipv4', 'IETF protocol assignments'],
  ['192.0.2.0', 24, 'ipv4', 'documentation'],
  ['192.88.99.0', 24, 'ipv4', '6to4 relay'],
  ['192.168.0.0', 16, 'ipv4', 'private'],
  ['198.18.0.0', 15, 'ipv4', 'benchmarking'],
  ['198.51.100.0', 24, 'ipv4', 'documentation'],
  ['203.0.113.0', 24, 'ipv4', 'documentation'],
  ['224.0.0.0', 4, 'ipv4', 'multicast'],
  ['240.0.0.0', 4, 'ipv4', 'reserved'],
  ['::', 128, 'ipv6', 'unspecified'],
  ['::1', 128, 'ipv6', 'loopback'],
  ['100::', 64, 'ipv6', 'discard'],
  ['2001:db8::', 32, 'ipv6', 'documentation'],
  ['2001::', 23, 'ipv6', 'IETF protocol assignments'],
  ['fc00::', 7, 'ipv6', 'unique local'],
  ['fe80::', 10, 'ipv6', 'link-local'],
  ['fec0::', 10, 'ipv6', 'site-local'],
  ['ff00::', 8, 'ipv6', 'multicast'],
];
const blocked = ranges.map(([net, prefix, type, reason]) => {
  const list = new BlockList();
  list.addSubnet(net, prefix, type);
  return { list, reason: `${reason} (${net}/${prefix})` };
});

/** An IPv4 address embedded in IPv4-mapped (::ffff:a.b.c.d), NAT64 (64:ff9b::/96) or compatible forms. */
function embeddedIpv4(ip: string): string | undefined {
  const lower = ip.toLowerCase();
  const dotted = /^(?:::ffff:(?:0:)?|64:ff9b::|::)(\d+\.\d+\.\d+\.\d+)$/.exec(lower);
  if (dotted) return dotted[1];
  const hex = /^(?:::ffff:(?:0:)?|64:ff9b::)([0-9a-f]{1,4}):([0-9a-f]{1,4})$/.exec(lower);
  if (hex) {
    const [hi, lo] = [parseInt(hex[1], 16), parseInt(hex[2], 16)];
    return `${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`;
  }
  return undefined;
}

function parseCidr(cidr: string): { net: string; prefix: number; type: 'ipv4' | 'ipv6' } {
  const [net, bits] = cidr.split('/');
  const family = isIP(net);
  if (!family) throw new Error(`Invalid CIDR in the SSRF allow-list: ${cidr}`);
  const type = family === 4 ? 'ipv4' : 'ipv6';
  return { net, prefix: bits === undefined ? (family === 4 ? 32 : 128) : Number(bits), type };
}

export interface Decision { blocked: boolean; reason?: string }

/** Whether a resolved address may be connected to; the allow-list (CIDRs) wins over the blocks. */
export function checkAddress(ip: string, allow: string[] = []): Decision {
  const family = isIP(ip);
  if (!family) return { blocked: true, reason: `not an IP address: ${ip}` };
  const type = family === 4 ? 'ipv4' : 'ipv6';
  const allowList = new BlockList();
  for (const cidr of allow) {
    const { net, prefix, type: t } = parseCidr(cidr);
    allowList.addSubnet(net, prefix, t);
  }
  const v4 = type === 'ipv6' ? embeddedIpv4(ip) : undefined;
  if (allowList.check(ip, type) || (v4 && allowList.check(v4, 'ipv4'))) return { blocked: false };
  if (v4) {
    const inner = checkAddress(v4, allow);
    if (inner.blocked) return { blocked: true, reason: `${inner.reason}, embedded in ${ip}` };
  }
  for (const { list, reason } of blocked) if (list.check(ip, type)) return { blocked: true, reason };
  return { blocked: false };
}

export type Resolver = (hostname: string, callback: (error: NodeJS.ErrnoException | null, addresses: LookupAddress[]) => void) => void;
const systemResolver: Resolver = (hostname, callback) => dnsLookup(hostname, { all: true, verbatim: true }, callback);

export class SsrfError extends Error {
  readonly code = 'ESSRF';
  constructor(readonly hostname: string, readonly address: string, readonly reason: string) {
    super(`refused to connect to ${hostname} (${address}): ${reason}`);
    this.name = 'SsrfError';
  }
}

/** A `lookup` for http(s).Agent that resolves, then refuses the connection if any address is blocked. */
export function guardedLookup(allow: string[], resolve: Resolver = systemResolver): LookupFunction {
  return (hostname, options, callback) => {
    resolve(hostname, (error, addresses) => {
      if (error) return callback(error, '', 0);
      if (addresses.length === 0) return callback(Object.assign(new Error(`no address for ${hostname}`), { code: 'ENOTFOUND' }), '', 0);
      for (const { address } of addresses) {
        const decision = checkAddress(address, allow);
        if (decision.blocked) return callback(new SsrfError(hostname, address, decision.reason!), '', 0);
      }
      const wanted = options.family === 6 || options.family === 'IPv6' ? 6 : options.family === 4 || options.family === 'IPv4' ? 4 : 0;
      const usable = wanted ? addresses.filter((a) => a.family === wanted) : addresses;
      if (options.all) return (callback as unknown as (e: null, a: LookupAddress[]) => void)(null, usable);
      callback(null, usable[0].address, usable[0].family);
    });
  };
}

/** CIDRs the guard admits: the stage's allow-list, plus loopback on the local stack. */
export const allowListFor = (settings: { ssrfAllowList: string[]; local: boolean }): string[] =>
  settings.local ? [...settings.ssrfAllowList, '127.0.0.0/8', '::1/128'] : settings.ssrfAllowList;
