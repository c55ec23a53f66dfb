/**
 * Isolation (DESIGN §16) on a local stack of its own (compressed settings, kept on disk so it can
 * restart): one organization's receiver accepts connections and never answers, another's is
 * healthy. The healthy one gets everything; the hanging one never holds more than its bound of
 * concurrent requests; its circuit opens, and while open nothing is attempted (no attempt used),
 * across a restart of the whole stack; when it half-opens one probe goes out, its success closes
 * the circuit and every event arrives, with its webhook-id, none failed.
 */
import { describe, it, expect, afterAll } from '@jest/globals';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Webhook } from 'standardwebhooks';
import type { Deps } from '../../../functions/core/platform/deps.js';
import { createOrganization } from '../../../functions/core/tenancy/organizations.js';
import { createApiKey } from '../../../functions/core/tenancy/api-keys.js';
import { addEndpoint, listEndpoints, updateEndpoint } from '../../../functions/core/delivery/endpoints.js';
import { listDeliveries } from '../../../functions/core/delivery/redrive.js';
import type { LocalStackInfo } from '../../../lib/local/stack-file.js';
import { eventually } from '../support/stack.js';
import { RestartableStack } from '../support/restartable-stack.js';
import { Receiver } from '../support/receiver.js';
import { edgeKeyLimitPerMinute } from '../../../lib/topology.js';

const BOUND = 2;
const settings = {
  retryScheduleSeconds: [1, 1, 1, 1],
  retryJitter: 0,
  keyCacheTtlSeconds: 1,
  endpointCacheTtlSeconds: 1,
  settingsMaxAgeSeconds: 1,
  deliveryTimeoutMs: 1500,
  slowLaneAfterMs: 300,
  maxInFlightPerEndpoint: BOUND,
  circuitFailureThreshold: 3,
  // Long enough to restart the stack while it is open, on a busy machine (a start takes ~10 s).
  circuitOpenSeconds: 60,
  circuitMaxOpenSeconds: 120,
};

const dir = mkdtempSync(path.join(tmpdir(), 'crm-isolation-'));
const healthy = new Receiver();

/** A receiver that accepts and never answers (until healed), counting its concurrent open requests. */
class HangingReceiver {
  open = 0;
  maxOpen = 0;
  healed = false;
  secret = '';
  readonly requests: { at: number; answeredAt?: number; id: string; verified: boolean }[] = [];
  private server!: Server;
  url = '';

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
        const entry: { at: number; answeredAt?: number; id: string; verified: boolean } = { at: Date.now(), id: String(req.headers['webhook-id']), verified };
        this.requests.push(entry);
        if (this.healed) {
          res.writeHead(204).end();
          entry.answeredAt = Date.now();
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
const hanging = new HangingReceiver();

const stack = new RestartableStack(dir, settings);
const start = () => stack.start();
const stop = () => stack.stop();

/** The admin CLI against this test's stack: its stdout. */
const crm = (args: string[]) => new Promise<string>((resolve, reject) => execFile(process.execPath, ['--no-warnings', 'bin/crm.mjs', ...args], {
  env: { ...process.env, NODE_OPTIONS: '', CRM_STACK_FILE: stack.stackFile }, timeout: 60_000,
}, (error, stdout, stderr) => (error ? reject(new Error(`${error.message}\n${stderr}`)) : resolve(stdout))));

afterAll(async () => {
  await stop();
  await healthy.stop();
  await hanging.stop();
  rmSync(dir, { recursive: true, force: true });
});

type Delivery = { id: string; status: string; attempts?: unknown[]; payload: { id: string } };

async function tenant(deps: Deps, name: string, url: (secret: string) => string) {
  const org = await createOrganization(deps, { name, rateLimitPerMinute: edgeKeyLimitPerMinute });
  const { key } = await createApiKey(deps, org.id, 'isolation');
  const { endpoint, secret } = await addEndpoint(deps, org.id, { url: 'http://127.0.0.1:9/placeholder', events: 'client.created' });
  await updateEndpoint(deps, org.id, endpoint.id, { url: url(secret) });
  return { org, key, endpointId: endpoint.id };
}

const postLeads = (info: LocalStackInfo, key: string, n: number, label: string) => Promise.all(Array.from({ length: n }, (_, i) => fetch(`${info.apiUrl}/api/webhook/leads`, {
  method: 'POST', headers: { 'X-API-Key': key, 'Content-Type': 'application/json' }, body: JSON.stringify({ name: `${label} ${i}` }),
}).then((r) => expect(r.status).toBe(201))));

describe('a hanging receiver', () => {
  it('holds at most its bound, delays nobody else, is not attempted while its circuit is open (restart included), and gets everything once it answers', async () => {
    await healthy.start();
    await hanging.start();
    let { info, deps } = await start();
    const good = await tenant(deps, 'Healthy Co', (secret) => healthy.script('/ok', secret, { status: 204 }));
    const bad = await tenant(deps, 'Hanging Co', (secret) => { hanging.secret = secret; return hanging.url; });

    const total = 10;
    await postLeads(info, bad.key, total, 'Hang');
    await postLeads(info, good.key, total, 'Fine');

    // The healthy organization's events all arrive while the other receiver hangs.
    await eventually(async () => healthy.on('/ok').length >= total, { what: 'the healthy deliveries', timeoutMs: 15_000 });
    expect(healthy.on('/ok').every((r) => r.event && !r.verifyError)).toBe(true);

    // The circuit opens after the threshold's failures; the deliveries stay pending, not failed.
    const opened = await eventually(async () => {
      const [endpoint] = await listEndpoints(deps, bad.org.id);
      return endpoint.circuit.state === 'open' ? endpoint.circuit : undefined;
    }, { what: 'the circuit to open', timeoutMs: 30_000, intervalMs: 200 });
    const openUntil = Date.parse(opened.until!);

    // The whole stack restarts while the circuit is open.
    await stop();
    ({ info, deps } = await start());
    expect((await listEndpoints(deps, bad.org.id))[0].circuit).toEqual(opened); // the state is on the endpoint item
    // Operators see it: the endpoints list and the deliveries list name the circuit.
    expect(await crm(['webhooks', 'list', '--org', bad.org.id])).toContain(`open until ${opened.until}`);
    const listed = JSON.parse(await crm(['--json', 'deliveries', 'list', '--org', bad.org.id])) as { circuit: unknown }[];
    expect(listed.map((d) => d.circuit)).toEqual(Array(total).fill(opened));

    // While open: nothing is sent to it and no attempt is used.
    const seenWhileOpen = hanging.requests.length;
    const attemptsWhileOpen = ((await listDeliveries(deps, bad.org.id, { limit: 100 })) as unknown as Delivery[]).map((d) => d.attempts?.length ?? 0);
    await new Promise((r) => setTimeout(r, Math.max(0, openUntil - Date.now() - 1500)));
    expect(hanging.requests.length).toBe(seenWhileOpen);
    const pending = (await listDeliveries(deps, bad.org.id, { limit: 100 })) as unknown as Delivery[];
    expect(pending).toHaveLength(total);
    expect(pending.every((d) => d.status === 'pending')).toBe(true);
    expect(pending.map((d) => d.attempts?.length ?? 0)).toEqual(attemptsWhileOpen);
    expect(attemptsWhileOpen.reduce((a, b) => a + b, 0)).toBeLessThan(total); // most were never attempted

    // The receiver answers again: when the circuit half-opens, one probe goes first; its success closes it.
    hanging.healed = true;
    const delivered = await eventually(async () => {
      const list = (await listDeliveries(deps, bad.org.id, { limit: 100 })) as unknown as Delivery[];
      return list.length === total && list.every((d) => d.status === 'delivered') ? list : undefined;
    }, { what: 'every delivery of the healed receiver', timeoutMs: 45_000, intervalMs: 250 });
    const afterOpen = hanging.requests.slice(seenWhileOpen);
    expect(afterOpen[0].at).toBeGreaterThanOrEqual(openUntil - 50);
    expect(afterOpen.slice(1).every((r) => r.at >= afterOpen[0].answeredAt!)).toBe(true); // the probe alone, then the rest
    expect((await listEndpoints(deps, bad.org.id))[0].circuit).toEqual({ state: 'closed' });

    // Every event arrived signed, with its webhook-id; no delivery used all its attempts.
    expect(new Set(hanging.requests.filter((r) => r.answeredAt && r.verified).map((r) => r.id))).toEqual(new Set(delivered.map((d) => d.payload.id)));
    expect(delivered.every((d) => (d.attempts?.length ?? 0) < 5)).toBe(true);
    // Never more than the bound at once at the hanging receiver (main lane and slow lane together).
    expect(hanging.maxOpen).toBeLessThanOrEqual(BOUND);
    expect(hanging.maxOpen).toBeGreaterThan(0);
  }, 180_000);
});
