/**
 * `npm run bench:flood`: does one organization's bulk import delay anybody else's webhooks
 * (docs/capacity.md "Fan-out lanes", docs/decisions.md "Fair delivery queues")? On the local
 * stack, with production settings: ten organizations send leads over HTTP (one each per second,
 * within their keys' rate limit) with a healthy loopback receiver each; one more organization's CRM
 * writes --import clients (5,000) straight into the clients table with BatchWriteItem, as the CRM
 * application does, its receiver healthy too. In one run:
 *
 * 1. alone: the ten organizations' leads for --rounds seconds (30: 300 leads, so that p99 is not
 *    just the second slowest, as it was of 150), after a warm-up round, not measured;
 * 2. flood: the same leads while the import is written and delivered, until its last delivery
 *    (one sender of the ten shares the importer's fan-out lane, as one in ten does on average);
 * 3. throughput: --throughput clients (1,000) over 20 fresh organizations written at once, as
 *    bench:delivery does: the pipeline's deliveries/s on this machine, now.
 *
 * Prints the ten organizations' lead event → receipt p50/p99 alone and during the import and their
 * ratio (targets: p99 during the import ≤ 2 s, ratio ≤ 3), the import's drain rate and its ratio to
 * phase 3's rate (target ≥ 1: the import drains no slower than the pipeline's plain throughput),
 * and where a lead waits: before its delivery is recorded (stream and fan-out) or after (queue and delivery).
 * Every receipt is verified with `standardwebhooks`.
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
import { createApiKey } from '../functions/core/tenancy/api-keys.js';
import { addEndpoint } from '../functions/core/delivery/endpoints.js';
import { keys } from '../functions/core/platform/model.js';
import { inBatches } from '../functions/core/platform/batches.js';
import { laneOf } from '../lib/local/stream-poller.js';
import { functions } from '../lib/topology.js';

const { values } = parseArgs({ options: {
  import: { type: 'string', default: '5000' }, rounds: { type: 'string', default: '30' }, throughput: { type: 'string', default: '1000' },
} });
const importCount = Number(values.import);
const rounds = Number(values.rounds);
const throughputCount = Number(values.throughput);
const SENDERS = 10;

const pct = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))];
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const s = (ms: number) => `${(ms / 1000).toFixed(2)} s`;
const progress = (what: string) => process.stderr.write(`[${new Date().toISOString().slice(11, 19)}] ${what}\n`);

async function main() {
  const stack = await startLocalStack({ dir: mkdtempSync(path.join(tmpdir(), 'crm-bench-flood-')), inMemory: true, port: 0, seed: false });
  const { deps } = stack;
  const secrets = new Map<string, string>();
  /** Client id → what it is for: a phase's lead, an imported client, a throughput client. */
  const kindOf = new Map<string, 'alone' | 'flood' | 'import' | 'throughput' | 'warm'>();
  const latencies = { alone: [] as number[], flood: [] as number[] };
  /** Lead latencies during the import of the senders whose fan-out lane is the importer's. */
  const coLaned: number[] = [];
  /** And of the senders in lanes of their own. */
  const ownLane: number[] = [];
  const coLanedRoutes = new Set<string>();
  const received = { import: [] as number[], throughput: [] as number[] };
  let rejected = 0;
  /** The leads whose webhook arrived (the stage breakdown below reads only those). */
  const leadsReceived = new Set<string>();
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      const at = Date.now();
      try {
        const event = new Webhook(secrets.get(req.url!)!.slice(6)).verify(body, req.headers as Record<string, string>) as { data: { object: { id: string; created_at: string } } };
        const kind = kindOf.get(event.data.object.id);
        if (kind === 'alone' || kind === 'flood') latencies[kind].push(at - Date.parse(event.data.object.created_at));
        if (kind === 'alone' || kind === 'flood') leadsReceived.add(event.data.object.id);
        if (kind === 'flood') (coLanedRoutes.has(req.url!) ? coLaned : ownLane).push(at - Date.parse(event.data.object.created_at));
        else if (kind === 'import' || kind === 'throughput') received[kind].push(at);
      } catch {
        rejected++;
      }
      res.writeHead(204).end();
    });
  });
  server.keepAliveTimeout = 30_000;
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const endpointFor = async (organizationId: string, route: string) => {
    const { secret } = await addEndpoint(deps, organizationId, { url: `${base}/${route}`, events: 'client.created' });
    secrets.set(`/${route}`, secret);
  };

  try {
    const importer = await createOrganization(deps, { name: 'Importer' });
    await endpointFor(importer.id, 'importer');
    // Which organizations share the importer's fan-out lane (the stream poller's hash of the partition key, as Lambda's).
    const source = functions.eventFanout.events[0];
    const factor = source.kind === 'stream' ? source.parallelizationFactor : 1;
    const laneOfOrg = (id: string) => laneOf(JSON.stringify({ S: keys.client(id, 'x').pk }), factor);
    // Exactly one sender shares it (one in ten on average), so every run measures both kinds.
    const senders: { organizationId: string; key: string }[] = [];
    while (senders.length < SENDERS) {
      const org = await createOrganization(deps, { name: `Sender ${senders.length}` });
      if ((laneOfOrg(org.id) === laneOfOrg(importer.id)) !== (senders.length === 0)) continue; // an organization left unused
      await endpointFor(org.id, `sender${senders.length}`);
      if (senders.length === 0) coLanedRoutes.add('/sender0');
      senders.push({ organizationId: org.id, key: (await createApiKey(deps, org.id, 'bench')).key });
    }

    let failedLeads = 0;
    let leadNumber = 0;
    const sendRound = (kind: 'alone' | 'flood' | 'warm') => Promise.all(senders.map(async ({ key }) => {
      const res = await fetch(`${stack.info.apiUrl}/api/webhook/leads`, {
        method: 'POST', headers: { 'content-type': 'application/json', 'x-api-key': key }, body: JSON.stringify({ name: 'Flood Bench', email: `flood${leadNumber++}@example.com` }), // each lead a new person (a repeat is a duplicate: 200)
      });
      const out = await res.json() as { id?: string; client?: { id: string } };
      const id = out.client?.id ?? out.id;
      if (res.status !== 201 || !id) failedLeads++;
      else kindOf.set(id, kind);
    }));
    const waitFor = async (what: string, done: () => boolean, ms = 180_000) => {
      const deadline = Date.now() + ms;
      progress(`waiting for ${what}`);
      while (!done()) {
        if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}: ${JSON.stringify({ alone: latencies.alone.length, flood: latencies.flood.length, import: received.import.length, throughput: received.throughput.length })}`);
        await sleep(50);
      }
    };
    const leadsIn = (kind: 'alone' | 'flood') => [...kindOf.values()].filter((k) => k === kind).length;
    /** Rounds one second apart (each sender's key: 60 a minute, under its limit of 100). */
    const leadRounds = async (kind: 'alone' | 'flood' | 'warm', until: (round: number) => boolean) => {
      for (let r = 0; !until(r); r++) {
        const started = Date.now();
        await sendRound(kind);
        await sleep(Math.max(0, 1000 - (Date.now() - started)));
      }
    };

    // Warm-up: pollers, caches and connections start cold.
    await leadRounds('warm', (r) => r >= 2);
    await sleep(2000);
    // 1. alone
    await leadRounds('alone', (r) => r >= rounds);
    await waitFor('the leads alone', () => latencies.alone.length >= leadsIn('alone'));

    // 2. the import, and the same leads meanwhile until its last delivery
    let n = 0;
    const clientItems = (organizationId: string, count: number, kind: 'import' | 'throughput') => Array.from({ length: count }, () => {
      const id = `cli_flood${String(n++).padStart(7, '0')}`;
      kindOf.set(id, kind);
      const at = new Date().toISOString();
      return { PutRequest: { Item: { ...keys.client(organizationId, id), entity: 'client', id, organization_id: organizationId, status: 'lead', first_name: 'Imported', sms_consent: false, created_at: at, updated_at: at } } };
    });
    const writeAll = async (items: ReturnType<typeof clientItems>) => {
      // Four BatchWriteItem calls at a time, as a CRM's import job would; unprocessed items are retried.
      const batches = inBatches(items, 25);
      await Promise.all(Array.from({ length: 4 }, async () => {
        for (let batch = batches.shift(); batch; batch = batches.shift()) {
          let request = { [deps.tables.clients]: batch } as Record<string, typeof batch>;
          while (Object.keys(request).length > 0) {
            const out = await deps.doc.send(new BatchWriteCommand({ RequestItems: request }));
            request = (out.UnprocessedItems ?? {}) as typeof request;
          }
        }
      }));
    };
    const importStarted = Date.now();
    let importWritten = 0;
    const importing = writeAll(clientItems(importer.id, importCount, 'import')).then(() => (importWritten = Date.now()));
    const floodDeadline = Date.now() + 300_000;
    await leadRounds('flood', () => {
      if (Date.now() > floodDeadline) throw new Error(`the import did not drain in 5 minutes: ${received.import.length} of ${importCount} delivered`);
      return received.import.length >= importCount;
    });
    await importing;
    await waitFor('the leads during the import', () => latencies.flood.length >= leadsIn('flood'));
    const importDrained = Math.max(...received.import);
    // The fan-out's lag on the import: when each imported client's delivery was recorded (the fan-out's write) after the client's.
    const { queryAll } = await import('../functions/core/platform/dynamo-store.js');
    const records = await queryAll(deps, { TableName: deps.tables.deliveries, KeyConditionExpression: 'pk = :pk AND begins_with(sk, :d)', ExpressionAttributeValues: { ':pk': keys.client(importer.id, 'x').pk, ':d': keys.deliveryPrefix } });
    const fanoutDone = records.map((r) => Date.parse(r.createdAt as string)).sort((x, y) => x - y);

    // 3. plain throughput, 20 fresh organizations
    const others: string[] = [];
    for (let i = 0; i < 20; i++) {
      const org = await createOrganization(deps, { name: `Throughput ${i}` });
      await endpointFor(org.id, `throughput${i}`);
      others.push(org.id);
    }
    await sleep(1000);
    const items = Array.from({ length: throughputCount }, (_, i) => clientItems(others[i % others.length], 1, 'throughput')[0]);
    const throughputStarted = Date.now();
    await writeAll(items);
    await waitFor('the throughput deliveries', () => received.throughput.length >= throughputCount);
    const throughputRate = throughputCount / ((Math.max(...received.throughput) - throughputStarted) / 1000);

    const stages = await stageBreakdown(deps, senders.map((x) => x.organizationId), kindOf, leadsReceived);
    const [a, b] = [latencies.alone.sort((x, y) => x - y), latencies.flood.sort((x, y) => x - y)];
    const drainRate = importCount / ((importDrained - importStarted) / 1000);
    console.log(`${SENDERS} organizations sending one lead each per second; one organization importing ${importCount} clients (written in ${s(importWritten - importStarted)}); ${rejected} signatures rejected, ${failedLeads} leads refused`);
    console.log(`alone:            lead event → receipt p50 ${pct(a, 0.5)} ms, p99 ${pct(a, 0.99)} ms (${a.length} deliveries)`);
    console.log(`during the import: lead event → receipt p50 ${pct(b, 0.5)} ms, p99 ${pct(b, 0.99)} ms (${b.length} deliveries; target p99 ≤ 2000 ms)`);
    const c = coLaned.sort((x, y) => x - y);
    console.log(`  of which the ${coLanedRoutes.size} sender(s) sharing the importer's fan-out lane (of ${factor}): p50 ${c.length ? pct(c, 0.5) : '-'} ms, p99 ${c.length ? pct(c, 0.99) : '-'} ms (${c.length} deliveries)`);
    const o = ownLane.sort((x, y) => x - y);
    console.log(`  and the ${SENDERS - coLanedRoutes.size} in lanes the import does not use: p50 ${pct(o, 0.5)} ms, p99 ${pct(o, 0.99)} ms (${o.length} deliveries)`);
    console.log(`import fan-out: all ${fanoutDone.length} recorded ${s(fanoutDone.at(-1)! - importStarted)} after the import began (written in ${s(importWritten - importStarted)})`);
    console.log(`ratio during ÷ alone: p50 ${(pct(b, 0.5) / pct(a, 0.5)).toFixed(2)}, p99 ${(pct(b, 0.99) / pct(a, 0.99)).toFixed(2)} (target p99 ≤ 3)`);
    console.log('where a lead waits (ms; the fan-out records its delivery, the delivery function sends it):');
    for (const line of stages) console.log(`  ${line}`);
    console.log(`import drained in ${s(importDrained - importStarted)}: ${drainRate.toFixed(0)} deliveries/s; plain throughput now (${throughputCount} events, 20 organizations): ${throughputRate.toFixed(0)} deliveries/s; drain ÷ throughput ${(drainRate / throughputRate).toFixed(2)}`);
  } finally {
    server.closeAllConnections();
    server.close();
    await stack.stop();
  }
}

/**
 * Splits each sender's lead event → receipt in two, read from its delivery record: event → recorded
 * (the stream read and the fan-out, until the record's `createdAt`) and recorded → sent (the queue
 * and the delivery function, until its attempt's end, then received at once on loopback); alone and
 * during the import, for the sender sharing the importer's fan-out lane and the others.
 */
async function stageBreakdown(deps: Awaited<ReturnType<typeof startLocalStack>>['deps'], organizations: string[], kindOf: Map<string, string>, received: Set<string>): Promise<string[]> {
  const { queryAll } = await import('../functions/core/platform/dynamo-store.js');
  const rows = new Map<string, { recorded: number[]; sent: number[] }>();
  for (const [n, organizationId] of organizations.entries()) {
    const items = await queryAll(deps, { TableName: deps.tables.deliveries, KeyConditionExpression: 'pk = :pk', ExpressionAttributeValues: { ':pk': keys.client(organizationId, 'x').pk } });
    // The payload (the lead's client) is on the event item, once per event.
    const clientOf = new Map(items.filter((i) => String(i.sk).startsWith('EVENT#')).map((i) => [i.eventId as string, (i.payload as { data: { object: { id: string; created_at: string } } }).data.object]));
    for (const record of items.filter((i) => String(i.sk).startsWith(keys.deliveryPrefix))) {
      const client = clientOf.get(record.eventId as string);
      const kind = client && kindOf.get(client.id);
      const attempt = (record.attempts as { at: string }[])[0];
      if (!client || (kind !== 'alone' && kind !== 'flood') || !attempt || !received.has(client.id)) continue;
      const row = `${kind === 'alone' ? 'alone' : 'during the import'}, ${n === 0 ? 'the sender in the importer\'s lane' : 'the 9 others'}`;
      if (!rows.has(row)) rows.set(row, { recorded: [], sent: [] });
      rows.get(row)!.recorded.push(Date.parse(record.createdAt as string) - Date.parse(client.created_at));
      rows.get(row)!.sent.push(Date.parse(attempt.at) - Date.parse(record.createdAt as string));
    }
  }
  const fig = (xs: number[]) => (xs.sort((x, y) => x - y), `p50 ${pct(xs, 0.5)} p99 ${pct(xs, 0.99)}`);
  return [...rows.entries()].sort().map(([row, { recorded, sent }]) => `${row}: event → recorded ${fig(recorded)}; recorded → sent ${fig(sent)} (${recorded.length})`);
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
