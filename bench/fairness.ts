/**
 * `npm run bench:fairness`: does one broken receiver delay anybody else (docs/architecture.md#fair-delivery)? On the local
 * stack, 20 organizations with healthy loopback receivers and one whose receiver accepts
 * connections and never answers. Events are written to the clients table in rounds (one per
 * healthy organization per round); phase 1 without the hanging organization's events, phase 2 with
 * them (--hanging N per round), in the same run, after a warm-up (a quarter of the rounds, not
 * measured: the stream and queue pollers and the caches start cold). Prints the healthy organizations' event-to-receipt
 * p50/p99 of each phase and their ratio (target: p99 ratio ≤ 1.2), and what the hanging receiver
 * saw (requests, most at once) and its circuit at the end. Production settings (10 s time-out).
 * Flags: --rounds N (40 per phase), --interval ms between rounds (400), --hanging N (1).
 */
import { mkdtempSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { BatchWriteCommand } from '@aws-sdk/lib-dynamodb';
import { Webhook } from 'standardwebhooks';
import { startLocalStack } from '../lib/local/stack.js';
import { createOrganization } from '../functions/core/tenancy/organizations.js';
import { addEndpoint, listEndpoints } from '../functions/core/delivery/endpoints.js';
import { keys } from '../functions/core/platform/model.js';
import { inBatches } from '../functions/core/platform/batches.js';

const { values } = parseArgs({ options: { rounds: { type: 'string', default: '40' }, interval: { type: 'string', default: '400' }, hanging: { type: 'string', default: '1' } } });
const rounds = Number(values.rounds);
const intervalMs = Number(values.interval);
const hangingPerRound = Number(values.hanging);
const HEALTHY = 20;

const pct = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))];
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function main() {
  const stack = await startLocalStack({ dir: mkdtempSync(path.join(tmpdir(), 'crm-bench-fair-')), inMemory: true, port: 0, seed: false });
  const secrets = new Map<string, string>();
  /** Receipt latencies by phase, healthy receivers only. */
  const latencies: Record<0 | 1 | 2, number[]> = { 0: [], 1: [], 2: [] };
  const phaseOf = new Map<string, 0 | 1 | 2>();
  let rejected = 0;
  const hang = { requests: 0, open: 0, maxOpen: 0 };
  const server = createServer((req, res) => {
    if (req.url === '/hang') {
      hang.requests++;
      hang.open++;
      hang.maxOpen = Math.max(hang.maxOpen, hang.open);
      res.on('close', () => hang.open--);
      return; // accepts, reads nothing, never answers
    }
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      try {
        const event = new Webhook(secrets.get(req.url!)!.slice(6)).verify(body, req.headers as Record<string, string>) as { data: { object: { id: string; created_at: string } } };
        const phase = phaseOf.get(event.data.object.id);
        if (phase !== undefined) latencies[phase].push(Date.now() - Date.parse(event.data.object.created_at));
      } catch {
        rejected++;
      }
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  try {
    const { deps } = stack;
    const healthy: string[] = [];
    for (let i = 0; i < HEALTHY; i++) {
      const org = await createOrganization(deps, { name: `Fair ${i}` });
      const { secret } = await addEndpoint(deps, org.id, { url: `${base}/org${i}`, events: 'client.created' });
      secrets.set(`/org${i}`, secret);
      healthy.push(org.id);
    }
    const stuck = await createOrganization(deps, { name: 'Hanging' });
    await addEndpoint(deps, stuck.id, { url: `${base}/hang`, events: 'client.created' });

    let n = 0;
    const write = async (orgIds: string[], phase: 0 | 1 | 2 | undefined) => {
      const at = new Date().toISOString();
      const items = orgIds.map((organizationId) => {
        const id = `cli_fair${String(n++).padStart(6, '0')}`;
        if (phase !== undefined) phaseOf.set(id, phase);
        return { PutRequest: { Item: { ...keys.client(organizationId, id), entity: 'client', id, organization_id: organizationId, status: 'lead', first_name: 'Fair', sms_consent: false, created_at: at, updated_at: at } } };
      });
      await Promise.all(inBatches(items, 25).map((batch) => deps.doc.send(new BatchWriteCommand({ RequestItems: { [deps.tables.clients]: batch } }))));
    };
    const runPhase = async (phase: 0 | 1 | 2) => {
      const count = phase === 0 ? Math.ceil(rounds / 4) : rounds;
      for (let r = 0; r < count; r++) {
        const started = Date.now();
        await write(healthy, phase);
        if (phase === 2) await write(Array.from({ length: hangingPerRound }, () => stuck.id), undefined);
        await sleep(Math.max(0, intervalMs - (Date.now() - started)));
      }
      const expected = count * HEALTHY;
      const deadline = Date.now() + 120_000;
      while (latencies[phase].length < expected && Date.now() < deadline) await sleep(100);
      if (latencies[phase].length < expected) throw new Error(`phase ${phase}: only ${latencies[phase].length} of ${expected} healthy deliveries arrived`);
    };

    await runPhase(0);
    await runPhase(1);
    await runPhase(2);
    const circuit = (await listEndpoints(deps, stuck.id))[0].circuit;

    const [a, b] = [latencies[1].sort((x, y) => x - y), latencies[2].sort((x, y) => x - y)];
    const ratio = (p: number) => (pct(b, p) / pct(a, p)).toFixed(2);
    console.log(`${HEALTHY} healthy organizations, 1 hanging; ${rounds} rounds per phase every ${intervalMs} ms (${(HEALTHY * 1000 / intervalMs).toFixed(0)} healthy events/s; phase 2 adds ${hangingPerRound} hanging event(s) per round); ${rejected} signatures rejected`);
    console.log(`phase 1, without the hanging receiver: event-to-receipt p50 ${pct(a, 0.5)} ms, p99 ${pct(a, 0.99)} ms (${a.length} deliveries)`);
    console.log(`phase 2, with the hanging receiver:    event-to-receipt p50 ${pct(b, 0.5)} ms, p99 ${pct(b, 0.99)} ms (${b.length} deliveries)`);
    console.log(`ratio with ÷ without: p50 ${ratio(0.5)}, p99 ${ratio(0.99)} (target p99 ≤ 1.2)`);
    console.log(`hanging receiver: ${hang.requests} requests, at most ${hang.maxOpen} at once; its circuit: ${JSON.stringify(circuit)}`);
  } finally {
    server.closeAllConnections();
    server.close();
    await stack.stop();
  }
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
