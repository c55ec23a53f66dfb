/**
 * A receiver that accepts connections and never answers until healed, counting its concurrent
 * open requests; every request is verified with `standardwebhooks`. `clock`: the time it records
 * (the in-memory delivery core's simulated one, or the real one).
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';
import { testSettings } from '../global-setup.js';

const pick = <T extends object, K extends keyof T>(from: T, ...names: K[]) => Object.fromEntries(names.map((n) => [n, from[n]])) as Pick<T, K>;

/** The bound on attempts in flight to one endpoint in the isolation scenarios. */
export const ISOLATION_BOUND = 2;
/** The delivery settings the isolation scenarios run with (compressed retries, a short main-lane budget, a circuit after 3 failures). */
export const isolationSettings = {
  ...pick(testSettings, 'retryScheduleSeconds', 'retryJitter', 'deliveryTimeoutMs'),
  endpointCacheTtlSeconds: 1, slowLaneAfterMs: 300, maxInFlightPerEndpoint: ISOLATION_BOUND, circuitFailureThreshold: 3,
};

export interface HangingRequest { at: number; answeredAt?: number; id: string; verified: boolean }

export class HangingReceiver {
  open = 0;
  maxOpen = 0;
  healed = false;
  secret = '';
  readonly requests: HangingRequest[] = [];
  private server!: Server;
  url = '';

  constructor(private readonly clock: () => number = Date.now) {}

  async start(): Promise<this> {
    this.server = createServer((req, res) => {
      this.open++;
      this.maxOpen = Math.max(this.maxOpen, this.open);
      res.on('close', () => this.open--);
      let body = '';
      req.on('data', (c) => (body += c));
      req.on('end', () => {
        let verified = false;
        try {
          new Webhook(this.secret.replace(/^whsec_/, '')).verify(body, req.headers as Record<string, string>);
          verified = true;
        } catch { /* counted as unverified */ }
        const entry: HangingRequest = { at: this.clock(), id: String(req.headers['webhook-id']), verified };
        this.requests.push(entry);
        if (this.healed) {
          res.writeHead(204).end();
          entry.answeredAt = this.clock();
        }
      });
    });
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/hang`;
    return this;
  }

  async stop(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}
