/**
 * `npm run bench:delivery`: events end to end on the local stack. N client items are written to
 * the clients table; the stream → fan-out → queue → delivery pipeline signs and POSTs them to a
 * receiver on loopback that verifies every request with `standardwebhooks`. In the same run, at
 * the same concurrency, a plain loop of raw PutItem calls (the floor every durable step pays on
 * this machine) and a plain signed-POST loop. Prints deliveries/s ÷ PutItem/s (target ≥ 0.25,
 * docs/benchmarks.md), write-to-receipt p50/p99, and the write units per delivery as DynamoDB
 * reports them (ReturnConsumedCapacity on every call of the pipeline, the CRM's own client write
 * excluded; target ≤ 3, docs/capacity.md; written to bench/measured-units.json for `npm run cost`), and where the time goes: the stream leg, the AWS
 * requests per delivery, and the CPU each delivery and each raw PutItem cost DynamoDB Local and
 * this Node process (the two share the machine's cores). Flags: --events N (500), --orgs N (20).
 */
import { mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { BatchWriteCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { Webhook } from 'standardwebhooks';
import { startLocalStack } from '../lib/local/stack.js';
import { createOrganization } from '../functions/core/tenancy/organizations.js';
import { addEndpoint } from '../functions/core/delivery/endpoints.js';
import { keys } from '../functions/core/platform/model.js';
import { scanAll } from '../functions/core/platform/dynamo-store.js';
import { sign } from '../functions/core/delivery/signing.js';
import { postWebhook } from '../functions/core/delivery/http-client.js';
import { functions } from '../lib/topology.js';
import { recordMeasuredUnits } from './measured-units.js';

const { values } = parseArgs({ options: { events: { type: 'string', default: '500' }, orgs: { type: 'string', default: '20' } } });
const total = Number(values.events);
// Events spread over this many organizations, one endpoint each (10,000 share the service; one
// endpoint alone would measure the per-endpoint in-flight bound of docs/architecture.md#fair-delivery, not the pipeline).
const orgCount = Number(values.orgs);
const source = functions.webhookDelivery.events[0];
// What the local queue poller runs at once: its concurrency × batch size (lib/local/stack.ts).
const concurrency = Math.min(source.kind === 'queue' ? source.maxConcurrency : 1, 4) * (source.kind === 'queue' ? source.batchSize : 1);

const pct = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))];

/**
 * Counts the capacity DynamoDB reports for every call made in this process (the handlers run
 * in-process on the local stack): each request asks for ReturnConsumedCapacity INDEXES, and the
 * answer's units are summed per table, writes and reads apart. Installed on the SDK's client base
 * class, so the handlers' own clients count too.
 */
const capacity = { counting: false, write: new Map<string, number>(), read: new Map<string, number>(), indexes: new Map<string, number>() };
type Consumed = { TableName?: string; CapacityUnits?: number; WriteCapacityUnits?: number; ReadCapacityUnits?: number; GlobalSecondaryIndexes?: Record<string, { CapacityUnits?: number }> };
/** AWS requests made while counting, per service (the handlers' and pollers' clients included). */
const calls = new Map<string, number>();
function countCapacity(): void {
  const proto = Object.getPrototypeOf(DynamoDBClient.prototype) as { send: (this: { config?: { serviceId?: string } }, command: { input?: Record<string, unknown>; constructor: { name: string } }, ...rest: unknown[]) => Promise<unknown> };
  const send = proto.send;
  proto.send = function (command, ...rest) {
    if (capacity.counting) calls.set(this.config?.serviceId ?? '?', (calls.get(this.config?.serviceId ?? '?') ?? 0) + 1);
    if (!capacity.counting || this.config?.serviceId !== 'DynamoDB' || !command.input || /Stream|Describe|Create|List/.test(command.constructor.name)) return send.call(this, command, ...rest);
    command.input.ReturnConsumedCapacity = 'INDEXES';
    return send.call(this, command, ...rest).then((out) => {
      const consumed = (out as { ConsumedCapacity?: Consumed | Consumed[] }).ConsumedCapacity;
      const isWrite = /Put|Update|Delete|BatchWrite|TransactWrite/.test(command.constructor.name);
      for (const c of [consumed ?? []].flat()) {
        const units = (isWrite ? c.WriteCapacityUnits : c.ReadCapacityUnits) ?? c.CapacityUnits ?? 0;
        const tally = isWrite ? capacity.write : capacity.read;
        // The statistics' counters (their own partition, written by the deliveryStatistics function
        // per stream batch): apart, so the delivery path's units are read on their own.
        const counters = String((command.input?.Key as { pk?: unknown } | undefined)?.pk ?? '').startsWith('STATS#');
        const table = `${c.TableName ?? '?'}${counters ? ' (statistics)' : ''}`;
        tally.set(table, (tally.get(table) ?? 0) + units);
        for (const [index, used] of Object.entries(c.GlobalSecondaryIndexes ?? {})) {
          const name = `${c.TableName}/${index}${isWrite ? '' : ' (read)'}`;
          capacity.indexes.set(name, (capacity.indexes.get(name) ?? 0) + (used.CapacityUnits ?? 0));
        }
      }
      return out;
    });
  };
}

/** CPU seconds used so far by this bench's DynamoDB Local (a descendant of this process; from /proc) and by this Node process. */
function cpuNow(): { java: number; node: number } {
  const procs = new Map<number, { ppid: number; cpu: number; cmdline: string }>();
  for (const pid of readdirSync('/proc').filter((d) => /^\d+$/.test(d))) {
    try {
      const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
      procs.set(Number(pid), { ppid: Number(fields[1]), cpu: (Number(fields[11]) + Number(fields[12])) / 100, cmdline: readFileSync(`/proc/${pid}/cmdline`, 'utf8') });
    } catch { /* gone */ }
  }
  const ours = (pid: number): boolean => {
    for (let p = procs.get(pid)?.ppid; p && p > 1; p = procs.get(p)?.ppid) if (p === process.pid) return true;
    return false;
  };
  const java = [...procs].filter(([pid, p]) => p.cmdline.includes('DynamoDBLocal.jar') && ours(pid)).reduce((sum, [, p]) => sum + p.cpu, 0);
  const { user, system } = process.cpuUsage();
  return { java, node: (user + system) / 1e6 };
}

async function main() {
  countCapacity();
  const stack = await startLocalStack({ dir: mkdtempSync(path.join(tmpdir(), 'crm-bench-')), inMemory: true, port: 0, seed: false });
  const secrets = new Map<string, string>();
  const latencies: number[] = [];
  let verified = 0;
  let rejected = 0;
  let onDone: () => void = () => undefined;
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      try {
        const event = new Webhook(secrets.get(req.url!)!.slice(6)).verify(body, req.headers as Record<string, string>) as { data: { object: { created_at: string } } };
        verified++;
        if (req.url!.startsWith('/pipeline')) latencies.push(Date.now() - Date.parse(event.data.object.created_at));
      } catch {
        rejected++;
      }
      res.writeHead(204).end();
      if (req.url!.startsWith('/pipeline') && latencies.length === total) onDone();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  try {
    const { deps } = stack;
    const orgs: string[] = [];
    for (let n = 0; n < orgCount; n++) {
      const org = await createOrganization(deps, { name: `Bench Deliveries ${n}` });
      secrets.set(`/pipeline/${n}`, (await addEndpoint(deps, org.id, { url: `${base}/pipeline/${n}`, events: 'client.created' })).secret);
      orgs.push(org.id);
    }
    secrets.set('/plain', secrets.get('/pipeline/0')!);
    const secret = secrets.get('/plain')!;

    const done = new Promise<void>((r) => (onDone = r));
    capacity.counting = true;
    const started = Date.now();
    const cpuStart = cpuNow();
    // The CRM's writes arrive as fast as DynamoDB takes them (all batches at once): the pipeline's
    // rate is measured, not the bench's own write loop (sequential, it capped the input at ~150/s).
    await Promise.all(Array.from({ length: Math.ceil(total / 25) }, (_, b) => b * 25).map((i) => {
      const at = new Date().toISOString();
      return deps.doc.send(new BatchWriteCommand({ RequestItems: { [deps.tables.clients]: Array.from({ length: Math.min(25, total - i) }, (_, n) => {
        const id = `cli_bench${String(i + n).padStart(6, '0')}`;
        const org = { id: orgs[(i + n) % orgs.length] };
        return { PutRequest: { Item: { ...keys.client(org.id, id), entity: 'client', id, organization_id: org.id, status: 'lead', first_name: 'Bench', sms_consent: false, created_at: at, updated_at: at } } };
      }) } }));
    }));
    const written = Date.now();
    await done;
    const pipelineSeconds = (Date.now() - started) / 1000;
    const cpuPipeline = cpuNow();
    // Deliveries whose record update is still under way when the last POST lands: let them finish.
    await new Promise((r) => setTimeout(r, 1000));
    capacity.counting = false;
    const sum = (m: Map<string, number>, skip: string) => [...m].filter(([t]) => t !== skip && !t.endsWith(' (statistics)')).reduce((a, [, v]) => a + v, 0);
    const writeUnits = sum(capacity.write, deps.tables.clients);
    const statisticsUnits = capacity.write.get(`${deps.tables.deliveries} (statistics)`) ?? 0;
    const readUnits = sum(capacity.read, deps.tables.clients);
    // Where the time goes: write → delivery recorded by the fan-out (the stream leg), from the stored records.
    const stored = await scanAll(deps, { TableName: deps.tables.deliveries });
    const writtenAt = new Map(stored.filter((i) => i.entity === 'event').map((i) => [i.eventId as string, Date.parse((i.payload as { data: { object: { created_at: string } } }).data.object.created_at)]));
    const fanoutLag = stored.filter((i) => i.entity === 'delivery' && writtenAt.has(i.eventId as string)).map((i) => Date.parse(i.createdAt as string) - writtenAt.get(i.eventId as string)!).sort((a, b) => a - b);

    // The floor: raw PutItem calls of a delivery-sized item, at the same concurrency.
    let nextPut = 0;
    const item = { entity: 'bench', status: 'pending', payload: 'x'.repeat(400), createdAt: new Date().toISOString() };
    const putStarted = Date.now();
    const cpuPutStart = cpuNow();
    await Promise.all(Array.from({ length: concurrency }, async () => {
      while (nextPut < total) {
        const n = nextPut++;
        await deps.doc.send(new PutCommand({ TableName: deps.tables.requestLog, Item: { pk: 'BENCH#put', sk: String(n), ...item } }));
      }
    }));
    const putSeconds = (Date.now() - putStarted) / 1000;
    const cpuPut = cpuNow();
    latencies.sort((a, b) => a - b);

    // The same work without the pipeline: sign and POST at the same concurrency.
    const body = JSON.stringify({ id: 'evt_plain', type: 'client.created', data: { object: { created_at: new Date().toISOString() } } });
    let next = 0;
    const plainStarted = Date.now();
    await Promise.all(Array.from({ length: concurrency }, async () => {
      while (next < total) {
        next++;
        const headers = sign({ id: `evt_plain${next}`, timestamp: Math.floor(Date.now() / 1000), body, secrets: [secret] });
        const result = await postWebhook({ url: `${base}/plain`, headers, body, timeoutMs: 10_000, allow: ['127.0.0.0/8'] });
        if (!result.ok) throw new Error(`plain POST failed: ${result.error}`);
      }
    }));
    const plainSeconds = (Date.now() - plainStarted) / 1000;

    console.log(`${total} events over ${orgCount} organizations, delivery concurrency ${concurrency}; ${verified} requests verified, ${rejected} rejected`);
    console.log(`input: ${total} client writes in ${written - started} ms (BatchWriteItem, all at once)`);
    console.log(`pipeline (table write → stream → fan-out → SQS → signed POST): ${(total / pipelineSeconds).toFixed(0)} deliveries/s, write-to-receipt p50 ${pct(latencies, 0.5)} ms, p99 ${pct(latencies, 0.99)} ms`);
    const batches = new Set(stored.filter((i) => i.entity === 'delivery').map((i) => i.createdAt)).size;
    console.log(`  of which write → delivery recorded (stream + fan-out): p50 ${pct(fanoutLag, 0.5)} ms, p99 ${pct(fanoutLag, 0.99)} ms, in ${batches} fan-out batches`);
    const perItem = (a: number, b: number) => ((1000 * (b - a)) / total).toFixed(2);
    console.log(`  CPU per delivery: DynamoDB Local ${perItem(cpuStart.java, cpuPipeline.java)} ms, Node (emulated SQS, pollers, handlers, receiver) ${perItem(cpuStart.node, cpuPipeline.node)} ms`);
    console.log(`  CPU per raw PutItem: DynamoDB Local ${perItem(cpuPutStart.java, cpuPut.java)} ms, Node ${perItem(cpuPutStart.node, cpuPut.node)} ms`);
    calls.set('DynamoDB', (calls.get('DynamoDB') ?? 0) - Math.ceil(total / 25)); // the bench's own input writes
    console.log(`  requests per delivery: ${[...calls].sort((a, b) => b[1] - a[1]).map(([service, n]) => `${service} ${(n / total).toFixed(2)}`).join(', ')}`);
    console.log(`raw PutItem loop: ${(total / putSeconds).toFixed(0)} puts/s`);
    console.log(`plain signed-POST loop: ${(total / plainSeconds).toFixed(0)} POSTs/s`);
    console.log(`ratio deliveries/s ÷ PutItem/s: ${(putSeconds / pipelineSeconds).toFixed(2)} (target ≥ 0.25)`);
    console.log(`ratio pipeline ÷ plain POST: ${(plainSeconds / pipelineSeconds).toFixed(2)}`);
    console.log(`write units per delivery: ${(writeUnits / total).toFixed(2)} (target ≤ 3); read units per delivery: ${(readUnits / total).toFixed(2)}`);
    // The local stream poller hands records over as they come; Lambda gathers a minute of them
    // (batchingWindowSeconds), so on AWS the counters are written far less often (docs/capacity.md "Statistics").
    console.log(`  statistics' counters, apart: ${(statisticsUnits / total).toFixed(2)} write units per delivery here (one per endpoint and stream batch; on AWS once a minute per endpoint)`);
    console.log(`  write units by table: ${[...capacity.write].map(([t, v]) => `${t.replace(/^.*?-/, '')} ${v}`).join(', ')}; of which indexes: ${[...capacity.indexes].map(([t, v]) => `${t.replace(/^.*?-/, '')} ${v}`).join(', ')}`);
    // Tables by their topology name (the stack's prefix dropped), the CRM's own client writes and the index reads left out.
    const perDelivery = (m: Map<string, number>) => Object.fromEntries([...m].filter(([t]) => t !== deps.tables.clients && !t.endsWith('(read)')).map(([t, v]) => [t.split('-').pop(), v / total]));
    recordMeasuredUnits('delivery', {
      writeUnits: { value: writeUnits / total, byTable: perDelivery(capacity.write), byIndex: perDelivery(capacity.indexes) },
      readUnits: { value: readUnits / total }, sqsRequests: { value: (calls.get('SQS') ?? 0) / total },
      by: `npm run bench:delivery (${total} events, ${orgCount} organizations)`,
    });
  } finally {
    server.closeAllConnections();
    server.close();
    await stack.stop();
  }
}

await main();
