/**
 * The SSRF guard as a decision on resolved addresses. Resolvers are stubs and the "connect" step
 * only records, so even a broken guard could not make this test open a socket anywhere.
 */
import { describe, it, expect } from '@jest/globals';
import type { LookupAddress } from 'node:dns';
import { Socket, type LookupFunction } from 'node:net';
import { checkAddress, guardedLookup, type Resolver } from '../../../functions/core/delivery/ssrf.js';
import { postWebhook } from '../../../functions/core/delivery/http-client.js';

const stub = (answers: Record<string, string[]>): Resolver => (hostname, callback) => {
  const list = answers[hostname];
  if (!list) return callback(Object.assign(new Error(`ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' }), []);
  callback(null, list.map((address): LookupAddress => ({ address, family: address.includes(':') ? 6 : 4 })));
};

/** Resolves through the guard, then records the address it would connect to. Never connects. */
function recordingConnect(lookup: LookupFunction) {
  const connected: string[] = [];
  const connect = (hostname: string) => new Promise<{ error?: NodeJS.ErrnoException; address?: string }>((resolve) => {
    lookup(hostname, {}, (error, address) => {
      if (error) return resolve({ error });
      connected.push(address as string);
      resolve({ address: address as string });
    });
  });
  return { connect, connected };
}

/**
 * A createConnection for the HTTP agent that resolves through the agent's lookup (as net.connect
 * does) and records the address instead of connecting.
 */
function recordingSockets() {
  const sockets: string[] = [];
  const createConnection = (options: { host?: string; lookup?: LookupFunction }) => {
    const socket = new Socket();
    (socket as unknown as { connecting: boolean }).connecting = true; // writes wait, as on a real connecting socket
    const record = (error: Error | null, address?: string) => {
      if (!error) sockets.push(address!);
      setImmediate(() => socket.emit('error', error ?? new Error('recorded, not connected')));
    };
    if (options.lookup) options.lookup(options.host!, {}, (error, address) => record(error, address as string));
    else record(null, options.host);
    return socket;
  };
  return { createConnection, sockets };
}

const blocked: [string, string][] = [
  ['10.1.2.3', 'private'], ['172.16.0.1', 'private'], ['192.168.1.1', 'private'], ['127.0.0.1', 'loopback'],
  ['169.254.169.254', 'link-local'], ['100.64.0.1', 'carrier-grade NAT'], ['0.0.0.0', 'this network'],
  ['224.0.0.1', 'multicast'], ['240.0.0.1', 'reserved'], ['255.255.255.255', 'reserved'], ['198.18.0.1', 'benchmarking'],
  ['192.0.2.10', 'documentation'], ['::1', 'loopback'], ['::', 'unspecified'], ['fe80::1', 'link-local'], ['fc00::1', 'unique local'],
  ['fd12:3456::1', 'unique local'], ['ff02::1', 'multicast'], ['2001:db8::1', 'documentation'],
  ['::ffff:10.0.0.1', 'private'], ['::ffff:7f00:1', 'loopback'], ['::ffff:169.254.169.254', 'link-local'], ['64:ff9b::a9fe:a9fe', 'link-local'],
];

describe('the SSRF guard', () => {
  it.each(blocked)('refuses %s (%s) and never connects', async (ip, reason) => {
    expect(checkAddress(ip)).toMatchObject({ blocked: true, reason: expect.stringContaining(reason) });
    const { connect, connected } = recordingConnect(guardedLookup([], stub({ 'hooks.example.com': [ip] })));
    const { error } = await connect('hooks.example.com');
    expect(error).toMatchObject({ code: 'ESSRF', message: expect.stringContaining(ip) });
    expect(connected).toEqual([]);
  });

  it('lets a public address through to the connect step', async () => {
    const { connect, connected } = recordingConnect(guardedLookup([], stub({ 'hooks.example.com': ['93.184.216.34', '2606:2800:220:1:248:1893:25c8:1946'] })));
    expect(await connect('hooks.example.com')).toEqual({ address: '93.184.216.34' });
    expect(connected).toEqual(['93.184.216.34']);
  });

  it('refuses a name if any of its addresses is blocked', async () => {
    const { connect, connected } = recordingConnect(guardedLookup([], stub({ 'mixed.example.com': ['93.184.216.34', '10.0.0.5'] })));
    expect((await connect('mixed.example.com')).error).toMatchObject({ code: 'ESSRF' });
    expect(connected).toEqual([]);
  });

  it('decides at connect time: a name public at registration and private at delivery is refused', async () => {
    const answers: Record<string, string[]> = { 'rebind.example.com': ['93.184.216.34'] };
    const { connect, connected } = recordingConnect(guardedLookup([], stub(answers)));
    expect((await connect('rebind.example.com')).address).toBe('93.184.216.34');
    answers['rebind.example.com'] = ['169.254.169.254'];
    expect((await connect('rebind.example.com')).error).toMatchObject({ code: 'ESSRF' });
    expect(connected).toEqual(['93.184.216.34']);
  });

  it('admits what the allow-list names (a VPC receiver), and only that', () => {
    expect(checkAddress('10.20.0.7', ['10.20.0.0/16'])).toEqual({ blocked: false });
    expect(checkAddress('10.21.0.7', ['10.20.0.0/16']).blocked).toBe(true);
    expect(checkAddress('::ffff:10.20.0.7', ['10.20.0.0/16'])).toEqual({ blocked: false });
  });

  it('guards the real HTTP client: the socket is never created for a blocked address', async () => {
    const { createConnection, sockets } = recordingSockets();
    const result = await postWebhook({
      url: 'https://metadata.example.com/hook', headers: {}, body: '{}', timeoutMs: 1000, allow: [],
      lookup: guardedLookup([], stub({ 'metadata.example.com': ['169.254.169.254'] })), createConnection,
    });
    expect(result).toMatchObject({ ok: false, errorCode: 'ESSRF' });
    expect(sockets).toEqual([]);
  });

  it('refuses IP-literal URLs before any socket (Node skips lookup for them)', async () => {
    const { createConnection, sockets } = recordingSockets();
    for (const url of ['http://169.254.169.254/latest/meta-data', 'http://[::ffff:10.0.0.1]:8080/', 'https://[fd00::1]/hook']) {
      const result = await postWebhook({ url, headers: {}, body: '{}', timeoutMs: 1000, allow: [], createConnection });
      expect(result).toMatchObject({ ok: false, errorCode: 'ESSRF' });
    }
    expect(sockets).toEqual([]);
  });
});
