/**
 * Isolation (docs/webhooks.md "Isolation") end to end, on a local stack of its own (compressed
 * settings): leads posted over HTTP, fanned out from the stream, delivered by the queue pollers.
 * One organization's receiver accepts connections and never answers, another's is healthy. The
 * healthy one gets everything; the hanging one never holds more than its bound of concurrent
 * requests; its circuit opens, operators see it (`crm webhooks list`, `crm deliveries list`), and
 * while open nothing is attempted (no attempt used); when it half-opens one probe goes out, its
 * success closes the circuit and every event arrives, with its webhook-id, none failed. The same
 * scenario with a restart while the circuit is open, and a minute-long circuit, runs on the
 * in-memory delivery core (delivery-core/isolation.test.ts).
 */
import { describe, it, expect, afterAll } from '@jest/globals';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Deps } from '../../../functions/core/platform/deps.js';
import { createOrganization } from '../../../functions/core/tenancy/organizations.js';
import { createApiKey } from '../../../functions/core/tenancy/api-keys.js';
import { addEndpoint, listEndpoints, updateEndpoint } from '../../../functions/core/delivery/endpoints.js';
import { listDeliveries } from '../../../functions/core/delivery/redeliver.js';
import type { LocalStackInfo } from '../../../lib/local/stack-file.js';
import { eventually } from '../support/stack.js';
import { RestartableStack } from '../support/restartable-stack.js';
import { Receiver } from '../support/receiver.js';
import { HangingReceiver, ISOLATION_BOUND, isolationSettings } from '../support/hanging-receiver.js';
import { wafKeyLimitPerMinute } from '../../../functions/front-door/waf.js';

const BOUND = ISOLATION_BOUND;
const settings = {
  ...isolationSettings,
  keyCacheTtlSeconds: 1,
  settingsMaxAgeSeconds: 1,
  // Long enough to see it open and list it with the CLI on a busy machine.
  circuitOpenSeconds: 20,
  circuitMaxOpenSeconds: 40,
};

const dir = mkdtempSync(path.join(tmpdir(), 'crm-isolation-'));
const healthy = new Receiver();

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
  const org = await createOrganization(deps, { name, rateLimitPerMinute: wafKeyLimitPerMinute });
  const { key } = await createApiKey(deps, org.id, 'isolation');
  const { endpoint, secret } = await addEndpoint(deps, org.id, { url: 'http://127.0.0.1:9/placeholder', events: 'client.created' });
  await updateEndpoint(deps, org.id, endpoint.id, { url: url(secret) });
  return { org, key, endpointId: endpoint.id };
}

const postLeads = (info: LocalStackInfo, key: string, n: number, label: string) => Promise.all(Array.from({ length: n }, (_, i) => fetch(`${info.apiUrl}/api/webhook/leads`, {
  method: 'POST', headers: { 'X-API-Key': key, 'Content-Type': 'application/json' }, body: JSON.stringify({ name: `${label} ${i}` }),
}).then((r) => expect(r.status).toBe(201))));

describe('a hanging receiver', () => {
  it('holds at most its bound, delays nobody else, is not attempted while its circuit is open, and gets everything once it answers', async () => {
    await healthy.start();
    await hanging.start();
    const { info, deps } = await start();
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

    expect((await listEndpoints(deps, bad.org.id))[0].circuit).toEqual(opened); // the state is on the endpoint item
    // Operators see it: the endpoints list and the deliveries list name the circuit.
    expect(await crm(['webhooks', 'list', '--org', bad.org.id])).toContain(`open until ${opened.until}`);
    const listed = JSON.parse(await crm(['--json', 'deliveries', 'list', '--org', bad.org.id])) as { circuit: unknown }[];
    expect(listed.map((d) => d.circuit)).toEqual(Array(total).fill(opened));

    // While open: nothing is sent to it and no attempt is used. Attempts in flight when it opened end
    // within the delivery time-out (their outcome recorded then): the count is settled only after
    // that (a slow CLI above used to hide this race).
    const lastSent = Math.max(...hanging.requests.map((r) => r.at));
    await eventually(async () => Date.now() > lastSent + isolationSettings.deliveryTimeoutMs + 1_000, { what: 'the attempts in flight to end' });
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
