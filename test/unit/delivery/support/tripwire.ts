/**
 * A tripwire for the "loopback only" rule: while installed, every TCP connect in this process
 * (net, http, https, tls all end in net.Socket#connect) is checked, and one whose address is not
 * loopback is destroyed before it is attempted and recorded in `refused`. The SSRF tests would
 * then fail loudly instead of reaching the network, even if the code under test were broken.
 */
import dns from 'node:dns';
import net, { BlockList, type LookupFunction } from 'node:net';

const loopback = new BlockList();
loopback.addSubnet('127.0.0.0', 8, 'ipv4');
loopback.addAddress('::1', 'ipv6');
const isLoopback = (ip: string) => loopback.check(ip, net.isIP(ip) === 6 ? 'ipv6' : 'ipv4');

export interface Tripwire { connected: string[]; refused: string[]; uninstall(): void }

export function installTripwire(): Tripwire {
  const original = net.Socket.prototype.connect;
  const tripwire: Tripwire = { connected: [], refused: [], uninstall: () => { net.Socket.prototype.connect = original; } };
  const refuse = (address: string) => {
    tripwire.refused.push(address);
    return Object.assign(new Error(`tripwire: a test tried to connect to ${address}`), { code: 'ETRIPWIRE' });
  };
  net.Socket.prototype.connect = function connect(this: net.Socket, ...args: unknown[]) {
    const first = Array.isArray(args[0]) ? (args[0] as unknown[])[0] : args[0];
    const options = (typeof first === 'object' && first !== null ? first : { port: first, host: args[1] }) as { path?: string; host?: string; lookup?: LookupFunction };
    if (options.path) return original.apply(this, args as Parameters<typeof original>);
    const host = options.host ?? 'localhost';
    if (net.isIP(host)) {
      if (!isLoopback(host)) {
        const error = refuse(host);
        process.nextTick(() => this.destroy(error));
        return this;
      }
      tripwire.connected.push(host);
    } else {
      // A name: judge what it resolves to, i.e. what net would connect to.
      const inner: LookupFunction = options.lookup ?? (dns.lookup as unknown as LookupFunction);
      options.lookup = (hostname, lookupOptions, callback) => inner(hostname, lookupOptions, (error, address, family) => {
        if (error) return callback(error, address, family);
        const addresses = Array.isArray(address) ? address.map((a) => a.address) : [address];
        const outside = addresses.find((a) => !isLoopback(a));
        if (outside) return callback(refuse(outside), Array.isArray(address) ? [] : '', 0);
        tripwire.connected.push(...addresses);
        callback(null, address, family);
      });
    }
    return original.apply(this, args as Parameters<typeof original>);
  } as typeof original;
  return tripwire;
}
