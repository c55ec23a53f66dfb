/**
 * `npm run bench:intake`: lead intake throughput on the local stack, against the ceiling of the
 * store underneath it. In one run: autocannon drives POST /api/webhook/leads (many keys, so the
 * limiter does not dominate), then raw DynamoDB Local PutItem runs at the same concurrency; it
 * prints leads/s, p50/p99 latency, write units per lead (prepaid and postpaid) and the ratio
 * leads/s ÷ puts/s.
 * Flags: --connections N (16), --seconds S (10), --keys K (50).
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import autocannon from 'autocannon';
import { PutCommand } from '@aws-sdk/lib-dynamodb';
import type { ConsumedCapacity } from '@aws-sdk/client-dynamodb';
import { startLocalStack } from '../lib/local/stack.js';
import { depsFromStackFile, type LocalStackInfo } from '../lib/local/stack-file.js';
import { createOrganization } from '../functions/core/tenancy/organizations.js';
import { createApiKey } from '../functions/core/tenancy/api-keys.js';
import { authenticate } from '../functions/core/tenancy/authenticate.js';
import { checkRateLimit, rateLimitFor } from '../functions/core/tenancy/rate-limit.js';
import { createLead } from '../functions/core/intake/create-lead.js';
import { parseLead } from '../functions/core/intake/lead-schema.js';
import { recordRequest } from '../functions/core/tenancy/request-log.js';
import type { Deps } from '../functions/core/platform/deps.js';
import { newId } from '../functions/core/platform/ids.js';
import { wafKeyLimitPerMinute } from '../functions/front-door/waf.js';

const { values } = parseArgs({ options: { connections: { type: 'string', default: '16' }, seconds: { type: 'string', default: '10' }, keys: { type: 'string', default: '50' } } });
const connections = Number(values.connections);
const seconds = Number(values.seconds);
const keyCount = Number(values.keys);

const lead = { name: 'Bench Lead', email: 'bench@example.com', phone: '+1 415 555 0100', service: 'Leaky faucet', notes: 'Under the kitchen sink', utm_source: 'bench' };
/** The n-th distinct person: another e-mail and phone, so no lead is a duplicate of another (docs/leads.md "Duplicates"). */
const person = (n: number) => ({ ...lead, email: `bench${n}@example.com`, phone: `+1 415 555 ${String(1000 + (n % 9000)).padStart(4, '0')}` });
let people = 0;

const WRITES = new Set(['PutItemCommand', 'UpdateItemCommand', 'DeleteItemCommand', 'TransactWriteItemsCommand', 'BatchWriteItemCommand']);

/**
 * Write units of one lead through the same domain calls the handler makes (authentication with its
 * last-used write, the limiter, the lead, the request record), as DynamoDB reports them
 * (ReturnConsumedCapacity INDEXES: table and index units). Reads are left out. Returns the first
 * lead of a fresh key (last-used write, prepaid day opened), the steady state (the next lead, a new
 * person), a lead matching an earlier client (same e-mail, flagged) and a double-submit of it.
 */
async function writeUnitsPerLead(deps: Deps, info: LocalStackInfo, billing: 'none' | 'prepaid'): Promise<{ first: number; steady: number; matched: number; repeated: number; merged: number }> {
  let units = 0;
  const parts = new Map<string, number>();
  // Its own clients, so the middleware below counts only this lead's writes.
  const measured = depsFromStackFile(info, deps.config);
  measured.doc.middlewareStack.add((next, context) => async (args) => {
    if (!WRITES.has(context.commandName ?? '')) return next(args);
    (args.input as Record<string, unknown>).ReturnConsumedCapacity = 'INDEXES';
    const out = await next(args);
    const c = (out.output as { ConsumedCapacity?: ConsumedCapacity | ConsumedCapacity[] }).ConsumedCapacity;
    for (const one of c ? (Array.isArray(c) ? c : [c]) : []) {
      const indexes = Object.values(one.GlobalSecondaryIndexes ?? {}).reduce((n, i) => n + (i.CapacityUnits ?? 0), 0);
      units += (one.Table?.CapacityUnits ?? one.CapacityUnits ?? 0) + indexes;
      const table = `${context.commandName}:${String(one.TableName).replace(/^.*?-/, '')}`;
      parts.set(table, (parts.get(table) ?? 0) + (one.Table?.CapacityUnits ?? one.CapacityUnits ?? 0));
      if (indexes) parts.set(`${table}/index`, (parts.get(`${table}/index`) ?? 0) + indexes);
    }
    return out;
  }, { step: 'initialize', name: 'consumedCapacity' });
  const org = await createOrganization(deps, { name: `Measured ${billing}`, billing, walletMicros: 1_000_000_000, rateLimitPerMinute: wafKeyLimitPerMinute });
  const { key } = await createApiKey(deps, org.id, 'measured');
  const one = async (body: Record<string, unknown>, merge = false) => {
    const before = units;
    parts.clear();
    const found = await authenticate(measured, { 'X-API-Key': key });
    const auth = merge ? { ...found, organization: { ...found.organization, duplicatePolicy: 'merge' as const } } : found;
    await checkRateLimit(measured, auth.key.keyId, rateLimitFor(measured, auth.organization));
    await createLead(measured, auth, parseLead(body), { requestId: 'bench' });
    await recordRequest(measured, { requestId: 'bench', organizationId: auth.organization.id, keyId: auth.key.keyId, method: 'POST', route: '/api/webhook/leads', status: 201, latencyMs: 1 });
    return units - before;
  };
  const first = await one(person(people++));
  const steady = await one(person(people++));
  console.log(`  ${billing === 'prepaid' ? 'prepaid' : 'postpaid'} lead, by write: ${[...parts].map(([k, v]) => `${k} ${v}`).join(', ')}`);
  const again = { ...person(people - 1), notes: 'Back again next week' };
  const matched = await one(again);
  const repeated = await one(again);
  const merged = await one({ ...again, notes: 'And a third time, merged' }, true);
  return { first, steady, matched, repeated, merged };
}

async function rawPuts(deps: Deps): Promise<{ perSecond: number; p50: number; p99: number }> {
  const latencies: number[] = [];
  const deadline = performance.now() + seconds * 1000;
  await Promise.all(Array.from({ length: connections }, async () => {
    while (performance.now() < deadline) {
      const t = performance.now();
      const id = newId('cli');
      await deps.doc.send(new PutCommand({ TableName: deps.tables.clients, Item: { pk: 'ORG#bench-raw', sk: `CLIENT#${id}`, id, ...lead, status: 'lead', created_at: new Date().toISOString() } }));
      latencies.push(performance.now() - t);
    }
  }));
  latencies.sort((a, b) => a - b);
  return { perSecond: latencies.length / seconds, p50: latencies[Math.floor(latencies.length * 0.5)], p99: latencies[Math.floor(latencies.length * 0.99)] };
}

async function main() {
  const stack = await startLocalStack({ dir: mkdtempSync(path.join(tmpdir(), 'crm-bench-')), inMemory: true, port: 0, seed: false });
  try {
    const { deps } = stack;
    const keys: string[] = [];
    for (let i = 0; i < keyCount; i++) {
      const org = await createOrganization(deps, { name: `Bench ${i}`, billing: 'prepaid', walletMicros: 1_000_000_000, rateLimitPerMinute: wafKeyLimitPerMinute });
      keys.push((await createApiKey(deps, org.id, 'bench')).key);
    }
    let next = 0;
    const url = `${stack.info.apiUrl}/api/webhook/leads`;
    // Warm-up: JIT, key caches, connections.
    // Every request a new person: the same body again would be answered as a double-submit.
    const requests = [{ method: 'POST' as const, setupRequest: (req: object) => ({ ...req, body: JSON.stringify(person(people++)) }) }];
    await autocannon({ url, connections, duration: 2, method: 'POST', requests, headers: { 'content-type': 'application/json' },
      setupClient: (client) => client.setHeaders({ 'content-type': 'application/json', 'x-api-key': keys[next++ % keys.length] }) });
    const result = await autocannon({
      url, connections, duration: seconds, method: 'POST', requests,
      setupClient: (client) => client.setHeaders({ 'content-type': 'application/json', 'x-api-key': keys[next++ % keys.length] }),
    });
    const non201 = result.non2xx + result.errors;
    const raw = await rawPuts(deps);
    const prepaid = await writeUnitsPerLead(deps, stack.info, 'prepaid');
    const postpaid = await writeUnitsPerLead(deps, stack.info, 'none');
    const leadsPerSecond = result.requests.average;
    console.log(`connections ${connections}, ${seconds} s, ${keyCount} keys (one per organization, prepaid)`);
    console.log(`POST /api/webhook/leads: ${leadsPerSecond.toFixed(0)} leads/s, p50 ${result.latency.p50} ms, p99 ${result.latency.p99} ms, ${result.requests.total} requests, ${non201} not 2xx`);
    console.log(`raw DynamoDB Local PutItem: ${raw.perSecond.toFixed(0)} puts/s, p50 ${raw.p50.toFixed(1)} ms, p99 ${raw.p99.toFixed(1)} ms`);
    console.log(`write units per lead (ReturnConsumedCapacity INDEXES): prepaid ${prepaid.steady}, postpaid ${postpaid.steady}; first lead of a fresh key (last-used write, prepaid day opened): prepaid ${prepaid.first}, postpaid ${postpaid.first}`);
    console.log(`  a lead matching an earlier client (flagged): prepaid ${prepaid.matched}, postpaid ${postpaid.matched}; its double-submit (no client written, billed): prepaid ${prepaid.repeated}, postpaid ${postpaid.repeated}`);
    console.log(`  a lead merged into an earlier client (merge policy, secret key): prepaid ${prepaid.merged}, postpaid ${postpaid.merged}`);
    console.log(`ratio leads/s ÷ raw puts/s: ${(leadsPerSecond / raw.perSecond).toFixed(2)}`);
  } finally {
    await stack.stop();
  }
}

await main();
