/**
 * A webhook receiver on 127.0.0.1 for tests: every request is verified with the `standardwebhooks`
 * library; each path answers with a scripted sequence of behaviours (status, delay, redirect).
 */
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll } from '@jest/globals';

/** How an echoing receiver sends the request's headers back (a JSON object of them, then encoded). */
export type Echo = 'raw' | 'json' | 'url' | 'base64';
export type Behaviour = {
  status: number; headers?: Record<string, string>; delayMs?: number; body?: string;
  /** Answer the request's headers in this encoding, after `pad` dots, and its authorization header JSON-escaped in `x-echo`. */
  echo?: Echo; pad?: number;
} | 'hang';

const echoed = (headers: IncomingHttpHeaders, echo: Echo): string => {
  const all = JSON.stringify(headers);
  if (echo === 'raw') return Object.entries(headers).map(([k, v]) => `${k}: ${String(v)}`).join('\n');
  if (echo === 'url') return new URLSearchParams(Object.entries(headers).map(([k, v]): [string, string] => [k, String(v)])).toString();
  if (echo === 'base64') return Buffer.from(all).toString('base64');
  return all;
};

export interface Received {
  path: string;
  at: number;
  headers: IncomingHttpHeaders;
  body: string;
  /** The payload if the signature verified with the path's secret, else undefined. */
  event?: { id: string; type: string; organization_id: string; data: { object: Record<string, unknown>; previous?: Record<string, unknown> } };
  verifyError?: string;
}

export class Receiver {
  readonly received: Received[] = [];
  private scripts = new Map<string, Behaviour[]>();
  private secrets = new Map<string, string>();
  private server!: Server;
  private hanging = new Set<() => void>();
  url = '';

  async start(): Promise<this> {
    this.server = createServer((req, res) => {
      let body = '';
      req.on('data', (c) => (body += c));
      req.on('end', () => {
        const path = req.url ?? '/';
        const secret = this.secrets.get(path);
        const entry: Received = { path, at: Date.now(), headers: req.headers, body };
        if (secret) {
          try {
            entry.event = new Webhook(secret.replace(/^whsec_/, '')).verify(body, req.headers as Record<string, string>) as Received['event'];
          } catch (error) {
            entry.verifyError = (error as Error).message;
          }
        }
        this.received.push(entry);
        const script = this.scripts.get(path) ?? [];
        const behaviour: Behaviour = script.length > 1 ? script.shift()! : script[0] ?? { status: 204 };
        if (behaviour === 'hang') {
          const release = () => res.destroy();
          this.hanging.add(release);
          return;
        }
        const { echo, pad = 0 } = behaviour;
        const headers = echo ? { ...behaviour.headers, 'x-echo': JSON.stringify(String(req.headers.authorization ?? '')) } : behaviour.headers;
        const answer = echo ? `${'.'.repeat(pad)}${echoed(req.headers, echo)}` : behaviour.body ?? '';
        setTimeout(() => res.writeHead(behaviour.status, headers).end(answer), behaviour.delayMs ?? 0);
      });
    });
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    return this;
  }

  /** Answers on `path` with these behaviours in turn; the last one repeats. */
  script(path: string, secret: string, ...behaviours: Behaviour[]): string {
    this.secrets.set(path, secret);
    this.scripts.set(path, behaviours.length ? behaviours : [{ status: 204 }]);
    return this.url + path;
  }

  on(path: string): Received[] {
    return this.received.filter((r) => r.path === path);
  }

  async stop(): Promise<void> {
    for (const release of this.hanging) release();
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

/** A receiver for the test file: started before its tests, stopped after them. */
export function receiverForFile(): Receiver {
  const receiver = new Receiver();
  beforeAll(async () => { await receiver.start(); });
  afterAll(async () => { await receiver.stop(); });
  return receiver;
}
