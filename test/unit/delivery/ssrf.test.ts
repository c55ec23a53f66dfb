/**
 * The SSRF guard as a decision. Resolvers are stubs and the connect step only RECORDS where it
 * would have connected, so no test here opens a socket; a tripwire on net.Socket#connect would
 * refuse (and report) any non-loopback connect if the code under test were broken.
 */
import { describe, it, expect, beforeAll, afterAll } from '@jest/globals';
import { createServer, type Server } from 'node:http';
import { Socket, type AddressInfo } from 'node:net';
import type { LookupAddress } from 'node:dns';
import { BLOCKED_RANGES, guardedLookup, isBlockedAddress, allowListFor, type Resolver } from '../../../functions/core/delivery/ssrf.js';
import { cidrProblem, sensitiveAllowEntry } from '../../../functions/core/platform/ip-ranges.js';
import { parseConfig } from '../../../functions/core/platform/config.js';
import { postWebhook, destroyAgents, type ConnectFunction, type ConnectTarget } from '../../../functions/core/delivery/http-client.js';
import { installTripwire, type Tripwire } from './support/tripwire.js';

/** A resolver that answers from a table (and can be changed between calls). */
const stubResolver = (answers: Record<string, string[]>): Resolver => (hostname, callback) => {
  const list = answers[hostname];
  if (!list) return callback(Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' }), []);
  setImmediate(() => callback(null, list.map((address): LookupAddress => ({ address, family: address.includes(':') ? 6 : 4 }))));
};

/** A connect function that records the target and fails the attempt; it never opens a socket. */
function recorder() {
  const seen: ConnectTarget[] = [];
  const connect: ConnectFunction = (target) => {
    seen.push(target);
    const socket = new Socket();
    (socket as unknown as { connecting: boolean }).connecting = true; // the request's writes wait, as on a real connecting socket
    setImmediate(() => socket.destroy(Object.assign(new Error(`recorded, not connected: ${target.host}`), { code: 'ERECORDED' })));
    return socket;
  };
  return { connect, seen };
}

/** POSTs to `hostname` through the guard with `answers` as DNS, recording instead of connecting. */
async function deliverVia(hostname: string, addresses: string[], allow: string[] = []) {
  const { connect, seen } = recorder();
  const lookup = guardedLookup(stubResolver({ [hostname]: addresses }), allow);
  const result = await postWebhook({ url: `https://${hostname}/hooks`, headers: {}, body: '{}', timeoutMs: 2000, lookup, connect });
  return { result, seen };
}

/** Every range of docs/webhooks.md#security, with the words the refusal must use. */
const blockedAddresses: [ip: string, reason: string][] = [
  ['0.1.2.3', 'this network'],
  ['0.0.0.0', 'this network'],
  ['10.1.2.3', 'private'],
  ['100.64.0.1', 'carrier-grade NAT'],
  ['100.127.255.254', 'carrier-grade NAT'],
  ['127.0.0.1', 'loopback'],
  ['127.255.255.254', 'loopback'],
  ['169.254.169.254', 'cloud metadata'],
  ['169.254.1.1', 'link-local'],
  ['172.16.0.1', 'private'],
  ['172.31.255.255', 'private'],
  ['192.0.0.8', 'IETF protocol assignments'],
  ['192.0.2.10', 'documentation'],
  ['192.168.1.1', 'private'],
  ['198.18.0.1', 'benchmarking'],
  ['198.19.255.1', 'benchmarking'],
  ['198.51.100.7', 'documentation'],
  ['203.0.113.9', 'documentation'],
  ['224.0.0.1', 'multicast'],
  ['239.255.255.250', 'multicast'],
  ['240.0.0.1', 'reserved'],
  ['255.255.255.255', 'broadcast'],
  ['::', 'unspecified'],
  ['::1', 'loopback'],
  ['0:0:0:0:0:0:0:1', 'loopback'],
  ['::ffff:10.0.0.1', 'private'],
  ['::ffff:7f00:1', 'loopback'],
  ['::ffff:169.254.169.254', 'cloud metadata'],
  ['0:0:0:0:0:ffff:a9fe:a9fe', 'cloud metadata'],
  ['64:ff9b::10.0.0.1', 'private'],
  ['64:ff9b::7f00:1', 'loopback'],
  ['64:ff9b::169.254.169.254', 'cloud metadata'],
  // Forms no receiver needs are refused whatever they embed.
  ['::127.0.0.1', 'IPv4-compatible'],
  ['::7f00:1', 'IPv4-compatible'],
  ['::10.0.0.1', 'IPv4-compatible'],
  ['::8.8.8.8', 'IPv4-compatible'],
  ['2002:a00:1::1', '6to4'],
  ['2002:7f00:1::', '6to4'],
  ['2002:808:808::1', '6to4'],
  ['64:ff9b:1::808:808', 'local-use NAT64'],
  ['64:ff9b:1:ffff::1', 'local-use NAT64'],
  ['fc00::1', 'unique local'],
  ['fd00:ec2::254', 'unique local'],
  ['fe80::1', 'link-local'],
  ['fe80::1%eth0', 'link-local'],
  ['febf:ffff::1', 'link-local'],
  ['ff02::1', 'multicast'],
  ['2001:db8::1', 'documentation'],
  ['100::1', 'discard'],
];

/**
 * One row per refused range, each naming the range it must fall in (the reason carries the CIDR):
 * dropping a range from ssrf.ts fails its row, and a range added there without a row fails the
 * completeness test below.
 */
const everyRange: [ip: string, cidr: string][] = [
  ['255.255.255.255', '255.255.255.255/32'],
  ['169.254.169.254', '169.254.169.254/32'],
  ['0.1.2.3', '0.0.0.0/8'],
  ['10.255.255.254', '10.0.0.0/8'],
  ['100.100.0.1', '100.64.0.0/10'],
  ['127.0.0.2', '127.0.0.0/8'],
  ['169.254.0.1', '169.254.0.0/16'],
  ['172.20.1.1', '172.16.0.0/12'],
  ['192.0.0.170', '192.0.0.0/24'],
  ['192.0.2.1', '192.0.2.0/24'],
  ['192.88.99.1', '192.88.99.0/24'],
  ['192.168.255.1', '192.168.0.0/16'],
  ['198.18.5.5', '198.18.0.0/15'],
  ['198.51.100.1', '198.51.100.0/24'],
  ['203.0.113.1', '203.0.113.0/24'],
  ['232.1.1.1', '224.0.0.0/4'],
  ['250.1.2.3', '240.0.0.0/4'],
  ['::', '::/128'],
  ['::1', '::1/128'],
  ['::a00:1', '::/96'],
  ['64:ff9b:1::1', '64:ff9b:1::/48'],
  ['2002:c000:201::1', '2002::/16'],
  ['100::ffff', '100::/64'],
  ['2001:db8:1::1', '2001:db8::/32'],
  ['2001:2::1', '2001::/23'],
  ['3fff:fff::1', '3fff::/20'],
  ['fdff::1', 'fc00::/7'],
  ['fe80::abcd', 'fe80::/10'],
  ['fec0::1', 'fec0::/10'],
  ['feff:ffff::1', 'fec0::/10'],
  ['ff0e::1', 'ff00::/8'],
];

const publicAddresses = ['93.184.216.34', '8.8.8.8', '172.32.0.1', '100.128.0.1', '198.20.0.1', '2606:4700:4700::1111', '::ffff:8.8.8.8', '64:ff9b::808:808'];

let tripwire: Tripwire;
beforeAll(() => {
  tripwire = installTripwire();
});
afterAll(() => {
  tripwire.uninstall();
  destroyAgents();
});

describe('the SSRF guard', () => {
  it.each(blockedAddresses)('refuses %s (%s), naming the address and the reason, and never connects', async (ip, reason) => {
    expect(isBlockedAddress(ip, [])).toEqual({ blocked: true, reason: expect.stringContaining(reason) });

    const { result, seen } = await deliverVia('hooks.example.com', [ip]);
    expect(result).toMatchObject({ ok: false, errorCode: 'ESSRF' });
    expect(result.error).toContain(ip);
    expect(result.error).toContain(reason);
    expect(seen).toEqual([]);
  });

  it.each(everyRange)('refuses %s as inside %s', async (ip, cidr) => {
    expect(isBlockedAddress(ip, [])).toEqual({ blocked: true, reason: expect.stringContaining(`(${cidr})`) });
    const { result, seen } = await deliverVia('hooks.example.com', [ip]);
    expect(result).toMatchObject({ ok: false, errorCode: 'ESSRF', error: expect.stringContaining(`(${cidr})`) });
    expect(seen).toEqual([]);
  });

  it('has a row above for every refused range of ssrf.ts', () => {
    expect([...new Set(everyRange.map(([, cidr]) => cidr))].sort()).toEqual([...BLOCKED_RANGES].sort());
  });

  it.each(publicAddresses)('lets the public address %s through to a connect attempt (recorded, not made)', async (ip) => {
    expect(isBlockedAddress(ip)).toEqual({ blocked: false });

    const { result, seen } = await deliverVia('hooks.example.com', [ip]);
    expect(seen).toEqual([{ host: ip, port: 443, family: ip.includes(':') ? 6 : 4, hostname: 'hooks.example.com', tls: true }]);
    expect(result).toMatchObject({ ok: false, errorCode: 'ERECORDED' });
  });

  it('refuses a name if any one of its addresses is blocked', async () => {
    const { result, seen } = await deliverVia('mixed.example.com', ['93.184.216.34', '2606:4700:4700::1111', '10.0.0.5']);
    expect(result).toMatchObject({ ok: false, errorCode: 'ESSRF', error: expect.stringContaining('10.0.0.5') });
    expect(seen).toEqual([]);
  });

  it('decides at connect time: a name public at registration and private at delivery is refused', async () => {
    const answers: Record<string, string[]> = { 'rebind.example.com': ['93.184.216.34'] };
    const lookup = guardedLookup(stubResolver(answers), []);
    const { connect, seen } = recorder();
    const post = () => postWebhook({ url: 'https://rebind.example.com/', headers: {}, body: '{}', timeoutMs: 2000, lookup, connect });

    expect(await post()).toMatchObject({ errorCode: 'ERECORDED' });
    answers['rebind.example.com'] = ['169.254.169.254'];
    expect(await post()).toMatchObject({ ok: false, errorCode: 'ESSRF', error: expect.stringContaining('169.254.169.254') });
    expect(seen.map((t) => t.host)).toEqual(['93.184.216.34']);
  });

  it('refuses IP-literal URLs too, though Node skips the lookup for them', async () => {
    const { connect, seen } = recorder();
    const urls = [
      'http://169.254.169.254/latest/meta-data/',
      'http://[::ffff:10.0.0.1]:8080/',
      'https://[fd00:ec2::254]/',
      'http://0x7f000001/', // the URL parser reads these as 127.0.0.1
      'http://2130706433/',
      'http://127.1/',
      'http://[::127.0.0.1]/', // the URL parser rewrites it to [::7f00:1]
      'http://[2002:a9fe:a9fe::1]/',
      'http://[64:ff9b:1::a9fe:a9fe]/',
    ];
    for (const url of urls) {
      const result = await postWebhook({ url, headers: {}, body: '{}', timeoutMs: 2000, allow: [], connect });
      expect(result).toMatchObject({ ok: false, errorCode: 'ESSRF' });
    }
    expect(seen).toEqual([]);
  });

  it('admits what the allow-list names (a VPC receiver), in any spelling, and nothing else', async () => {
    const allow = ['10.20.0.0/16', 'fd00:1234::/32'];
    expect(isBlockedAddress('10.20.0.7', allow)).toEqual({ blocked: false });
    expect(isBlockedAddress('::ffff:10.20.0.7', allow)).toEqual({ blocked: false });
    expect(isBlockedAddress('fd00:1234::9', allow)).toEqual({ blocked: false });
    expect(isBlockedAddress('10.21.0.7', allow)).toMatchObject({ blocked: true, reason: expect.stringContaining('private') });
    expect(isBlockedAddress('169.254.169.254', allow).blocked).toBe(true);

    const { result, seen } = await deliverVia('vpc.internal', ['10.20.0.7'], allow);
    expect(result.errorCode).toBe('ERECORDED');
    expect(seen.map((t) => t.host)).toEqual(['10.20.0.7']);
  });

  it('admits loopback on the local stack only', () => {
    expect(allowListFor({ ssrfAllowList: [], local: false })).toEqual([]);
    expect(isBlockedAddress('127.0.0.1', allowListFor({ ssrfAllowList: [], local: true })).blocked).toBe(false);
    expect(isBlockedAddress('::1', allowListFor({ ssrfAllowList: [], local: true })).blocked).toBe(false);
  });

  it('does not let an IPv4 allow-list entry admit a 6to4 or IPv4-compatible address that embeds it', () => {
    expect(isBlockedAddress('2002:a14::1', ['10.20.0.0/16'])).toMatchObject({ blocked: true, reason: expect.stringContaining('6to4') });
    expect(isBlockedAddress('::10.20.0.7', ['10.20.0.0/16'])).toMatchObject({ blocked: true, reason: expect.stringContaining('IPv4-compatible') });
    expect(isBlockedAddress('64:ff9b::a14:7', ['10.20.0.0/16'])).toEqual({ blocked: false }); // NAT64 reaches the IPv4 host itself
  });

  it('validates allow-list CIDRs: a malformed one, host bits set, or a /0 is named', () => {
    for (const good of ['10.20.0.0/16', '10.20.0.7', '192.168.4.0/31', 'fd00:1234::/32', 'fd00:1234::9']) expect(cidrProblem(good)).toBeUndefined();
    expect(cidrProblem('10.0.0.1/8')).toMatch(/host bits/);
    expect(cidrProblem('172.17.0.0/12')).toMatch(/host bits/);
    expect(cidrProblem('fd00:1234::1/32')).toMatch(/host bits/);
    expect(cidrProblem('0.0.0.0/0')).toMatch(/every address/);
    expect(cidrProblem('::/0')).toMatch(/every address/);
    for (const bad of ['10.0.0.0/33', '10.0.0.0/-0', '10.0.0.0/8/8', '10.0.0.0/', 'vpc.internal', '', 'fe80::%eth0/64', '2001:db8::/129']) {
      expect(cidrProblem(bad)).toEqual(expect.any(String));
    }
  });

  it('refuses allow-list entries wider than /8 (IPv4) or /32 (IPv6): together they would admit everything', () => {
    for (const wide of ['0.0.0.0/1', '128.0.0.0/1', '10.0.0.0/7', '2001::/16', 'fc00::/7', '::/1']) expect(cidrProblem(wide)).toMatch(/too wide.*\/(8|32) or narrower/);
    for (const narrow of ['10.0.0.0/8', '2001:db8::/32']) expect(cidrProblem(narrow)).toBeUndefined();
    expect(() => isBlockedAddress('127.0.0.1', ['0.0.0.0/1', '128.0.0.0/1'])).toThrow(/allow-list: 0\.0\.0\.0\/1 .*too wide/);
    expect(() => parseConfig({ ssrfAllowList: ['0.0.0.0/1'] })).toThrow(/too wide[\s\S]*"ssrfAllowList",\s*0/);
  });

  it('names the allow-list entries a deployed stage drops: loopback, link-local and metadata, in any spelling', () => {
    const dropped: Record<string, RegExp> = {
      '127.0.0.0/8': /loopback/, '127.0.0.1': /loopback/, '169.254.0.0/16': /link-local/, '169.254.169.254': /metadata/,
      '0.0.0.0/8': /this network/, '::1': /loopback/, 'fe80::/10': /link-local/, 'fe80::/64': /link-local/, 'fd00:ec2::/32': /EC2 metadata/,
      'fd00:ec2::254': /EC2 metadata/, '::/96': /loopback|IPv4-compatible/, '64:ff9b:1::/48': /local-use NAT64/,
      '::ffff:0:0/96': /every IPv4 address/, '::ffff:7f00:0/104': /loopback.*IPv6 form/, '::ffff:a9fe:a9fe': /metadata.*IPv6 form/,
      '64:ff9b::7f00:1': /loopback.*IPv6 form/, '::ffff:0:a9fe:0/112': /link-local.*IPv6 form/,
    };
    for (const [cidr, reason] of Object.entries(dropped)) {
      expect({ cidr, reason: sensitiveAllowEntry(cidr) ?? '' }).toEqual({ cidr, reason: expect.stringMatching(reason) });
    }
    for (const fine of ['10.0.0.0/8', '172.16.0.0/12', '192.168.0.0/16', 'fd00:1234::/32', '::ffff:a00:0/104', '64:ff9b::a14:7', '2001:db8::/32']) {
      expect({ fine, reason: sensitiveAllowEntry(fine) }).toEqual({ fine, reason: undefined });
    }
  });

  it('fails settings parsing on an invalid allow-list CIDR, naming the field', () => {
    expect(parseConfig({ ssrfAllowList: ['10.20.0.0/16'] }).ssrfAllowList).toEqual(['10.20.0.0/16']);
    const failure = (allow: string[]) => {
      try {
        parseConfig({ ssrfAllowList: allow });
      } catch (error) {
        return (error as Error).message;
      }
      return 'parsed';
    };
    expect(failure(['10.20.0.0/16', '10.0.0.1/8'])).toMatch(/"ssrfAllowList",\s*1/);
    expect(failure(['10.20.0.0/16', '10.0.0.1/8'])).toMatch(/not a valid CIDR: .*10\.0\.0\.1\/8.* has host bits set/);
    expect(failure(['vpc.internal'])).toMatch(/"ssrfAllowList",\s*0/);
    expect(failure(['vpc.internal'])).toMatch(/not a valid CIDR: .*vpc\.internal/);
  });

  it('rejects a malformed allow-list entry; the client reports it instead of throwing', async () => {
    expect(() => isBlockedAddress('8.8.8.8', ['10.0.0.0/33'])).toThrow(/allow-list: 10\.0\.0\.0\/33/);
    expect(() => guardedLookup(undefined, ['not-a-cidr'])).toThrow(/allow-list/);
    const { connect, seen } = recorder();
    const result = await postWebhook({ url: 'https://hooks.example.com/', headers: {}, body: '{}', allow: ['10.0.0.0/8/8'], connect });
    expect(result).toMatchObject({ ok: false, errorCode: 'ECONFIG' });
    expect(seen).toEqual([]);
  });

  it('treats anything that is not an IP address as blocked', () => {
    expect(isBlockedAddress('example.com')).toMatchObject({ blocked: true, reason: expect.stringContaining('not an IP address') });
  });
});

describe('the guard as a lookup function', () => {
  const lookupAsync = (lookup: ReturnType<typeof guardedLookup>, hostname: string, options: { all?: boolean; family?: number } = {}) =>
    new Promise<{ error: NodeJS.ErrnoException | null; address: unknown; family?: number }>((resolve) =>
      lookup(hostname, options, (error, address, family) => resolve({ error, address, family })));

  const lookup = guardedLookup(stubResolver({ 'dual.example.com': ['93.184.216.34', '2606:4700:4700::1111'], 'empty.example.com': [] }), []);

  it('answers the first address, all of them with options.all, or one family', async () => {
    expect(await lookupAsync(lookup, 'dual.example.com')).toEqual({ error: null, address: '93.184.216.34', family: 4 });
    expect(await lookupAsync(lookup, 'dual.example.com', { all: true })).toEqual({
      error: null, address: [{ address: '93.184.216.34', family: 4 }, { address: '2606:4700:4700::1111', family: 6 }], family: undefined,
    });
    expect(await lookupAsync(lookup, 'dual.example.com', { family: 6 })).toMatchObject({ address: '2606:4700:4700::1111', family: 6 });
  });

  it('passes resolver failures on, and treats an empty answer as not found', async () => {
    expect((await lookupAsync(lookup, 'nowhere.example.com')).error).toMatchObject({ code: 'ENOTFOUND' });
    expect((await lookupAsync(lookup, 'empty.example.com')).error).toMatchObject({ code: 'ENOTFOUND' });
  });

  it('judges IP literals itself, without asking the resolver', async () => {
    const never: Resolver = () => {
      throw new Error('the resolver must not be asked');
    };
    const literal = guardedLookup(never, []);
    expect((await lookupAsync(literal, '10.0.0.1')).error).toMatchObject({ code: 'ESSRF' });
    expect(await lookupAsync(literal, '8.8.8.8')).toEqual({ error: null, address: '8.8.8.8', family: 4 });
  });

  it('fails with code ESSRF naming the host, the address and the reason', async () => {
    const metadata = guardedLookup(stubResolver({ 'metadata.example.com': ['169.254.169.254'] }), []);
    const { error } = await lookupAsync(metadata, 'metadata.example.com', { all: true });
    expect(error).toMatchObject({ code: 'ESSRF', hostname: 'metadata.example.com', address: '169.254.169.254' });
    expect(error!.message).toBe('refused to connect to metadata.example.com (169.254.169.254): link-local (cloud metadata) (169.254.169.254/32)');
  });
});

describe('the guard inside Node’s own connect (loopback receiver, no allow-list)', () => {
  let server: Server;
  let port: number;
  let connections = 0;
  beforeAll(async () => {
    server = createServer((_req, res) => res.end('ok'));
    server.on('connection', () => connections++);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as AddressInfo).port;
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });

  it('refuses a name that resolves to loopback: the receiver never sees a connection', async () => {
    const lookup = guardedLookup(stubResolver({ 'receiver.test': ['127.0.0.1'] }), []);
    const result = await postWebhook({ url: `http://receiver.test:${port}/`, headers: {}, body: '{}', timeoutMs: 2000, lookup });
    expect(result).toMatchObject({ ok: false, errorCode: 'ESSRF', error: expect.stringContaining('loopback') });
    expect(connections).toBe(0);
    expect(tripwire.refused).toEqual([]);
  });
});
