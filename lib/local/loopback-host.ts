/**
 * DNS rebinding guard for the local listeners. They listen on 127.0.0.1 only, but a page in the
 * developer's browser can point its own name at 127.0.0.1 and then read or write them as
 * "same origin". Its requests still carry that name in Host, so every local listener refuses a
 * Host that is not a loopback name with the listener's own port.
 */
import type { Server as NetServer, AddressInfo } from 'node:net';
import { forbidden } from '../../functions/core/platform/errors.js';

/**
 * Starts `server` on 127.0.0.1 only (never every interface) at `port` (0: a free one) and returns
 * the port it got; a taken port is a clear error naming how to choose another.
 */
export async function listenOnLoopback(server: NetServer, port: number, howToChoose = 'choose another'): Promise<number> {
  await new Promise<void>((resolve, reject) => {
    server.once('error', (error: NodeJS.ErrnoException) =>
      reject(error.code === 'EADDRINUSE' ? new Error(`Port ${port} on 127.0.0.1 is in use; ${howToChoose}.`) : error),
    );
    server.listen(port, '127.0.0.1', () => resolve());
  });
  return (server.address() as AddressInfo).port;
}

/** True when `host` (a Host header) is `127.0.0.1:<port>`, `localhost:<port>` or `[::1]:<port>`. */
export function isLoopbackHost(host: string | undefined, port: number): boolean {
  if (!host) return false;
  const value = host.trim().toLowerCase();
  return value === `127.0.0.1:${port}` || value === `localhost:${port}` || value === `[::1]:${port}`;
}

/** The value of the Host header in the head of an HTTP/1 request (raw bytes), or undefined. */
export function hostOfRequestHead(head: string): string | undefined {
  const match = /\r\nhost:[ \t]*([^\r\n]*)/i.exec(head);
  return match?.[1].trim();
}

export const foreignHostMessage = 'This local service answers only requests addressed to 127.0.0.1, localhost or [::1] with its port (DNS rebinding guard).';

/** A complete HTTP/1.1 403 answer for a foreign Host, for listeners that are not HTTP servers. */
export const foreignHostResponse = `HTTP/1.1 403 Forbidden\r\nContent-Type: text/plain\r\nContent-Length: ${foreignHostMessage.length + 1}\r\nConnection: close\r\n\r\n${foreignHostMessage}\n`;

/** The local API's answer to a foreign Host: problem+json like every other answer of the API. */
export const foreignHostProblem = (requestId: string): string => JSON.stringify(forbidden(foreignHostMessage).toProblem(requestId));
