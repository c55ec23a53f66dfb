/**
 * `npm run bench:intake`: lead intake throughput on the local stack, against the ceiling of the
 * store underneath it. In one run: autocannon drives POST /api/webhook/leads (many keys, so the
 * limiter does not dominate), then raw DynamoDB Local PutItem runs at the same concurrency; it
 * prints leads/s, p50/p99 latency, write units per lead (prepaid and postpaid) and the ratio
 * leads/s ÷ puts/s, and what re-reading a found key every keyRevocationSeconds costs (revocationCost).
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
import { authenticate, clearAuthCache } from '../functions/core/tenancy/authenticate.js';
import { checkRateLimit, rateLimitFor } from '../functions/core/tenancy/rate-limit.js';
import { createLead } from '../functions/core/intake/create-lead.js';
import { parseLead } from '../functions/core/intake/lead-schema.js';
import { recordRequest } from '../functions/core/tenancy/request-log.js';
import type { Deps } from '../functions/core/platform/deps.js';
import { newId } from '../functions/core/platform/ids.js';
import { wafKeyLimitPerMinute } from '../functions/front-door/waf.js';
import { recordMeasuredUnits } from './measured-units.js';

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
 * last-used write, the limiter, the lead, the request record unless the lead created a client), as DynamoDB reports them
 * (ReturnConsumedCapacity INDEXES: table and index units). Reads are left out. Returns the first
 * lead of a fresh key (last-used write, prepaid day opened), the steady state (the next lead, a new
 * person), a lead matching an earlier client (same e-mail, flagged) and a double-submit of it.
 */
async function writeUnitsPerLead(deps: Deps, info: LocalStackInfo, billing: 'none' | 'prepaid'): Promise<{ first: string; steady: string; matched: string; repeated: string; merged: string }> {
  let units = 0;
  // By AWS's rules: the same, except that an index entry of a transactional write is billed as a
  // standard write (DynamoDB Local charges it double, like the item).
  let awsUnits = 0;
  const parts = new Map<string, number>();
  // Its own clients, so the middleware below counts only this lead's writes.
  // On a clock that stays inside one 10 s sub-window, 3 s after its start: a container's first check
  // after a boundary also closes the sub-window that ended (1 unit per key per 10 s), printed apart.
  let tick = 0;
  const start = Math.floor(Date.now() / 10_000) * 10_000 + 3_000;
  const measured = { ...depsFromStackFile(info, deps.config), now: () => start + tick++ };
  measured.doc.middlewareStack.add((next, context) => async (args) => {
    if (!WRITES.has(context.commandName ?? '')) return next(args);
    (args.input as Record<string, unknown>).ReturnConsumedCapacity = 'INDEXES';
    const out = await next(args);
    const c = (out.output as { ConsumedCapacity?: ConsumedCapacity | ConsumedCapacity[] }).ConsumedCapacity;
    for (const one of c ? (Array.isArray(c) ? c : [c]) : []) {
      const indexes = Object.values(one.GlobalSecondaryIndexes ?? {}).reduce((n, i) => n + (i.CapacityUnits ?? 0), 0);
      units += (one.Table?.CapacityUnits ?? one.CapacityUnits ?? 0) + indexes;
      awsUnits += (one.Table?.CapacityUnits ?? one.CapacityUnits ?? 0) + (context.commandName === 'TransactWriteItemsCommand' ? indexes / 2 : indexes);
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
    const awsBefore = awsUnits;
    parts.clear();
    const found = await authenticate(measured, { 'X-API-Key': key });
    const auth = merge ? { ...found, organization: { ...found.organization, duplicatePolicy: 'merge' as const } } : found;
    await checkRateLimit(measured, auth.key.keyId, rateLimitFor(measured, auth.organization));
    const outcome = await createLead(measured, auth, parseLead(body), { requestId: 'bench' });
    // As the HTTP adapter does: a created lead's client is its request's row (docs/settings.md "Request log").
    const created = outcome.kind === 'created';
    await recordRequest(measured, {
      requestId: 'bench', organizationId: auth.organization.id, keyId: auth.key.keyId, method: 'POST', route: '/api/webhook/leads',
      status: created ? 201 : 200, latencyMs: 1, ...(created ? { recordedOnClient: 201 } : {}),
    });
    const local = units - before;
    const aws = awsUnits - awsBefore;
    return aws === local ? `${local}` : `${local} (${aws} by AWS's rules)`;
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

/**
 * What trusting a found key for keyRevocationSeconds (5 s) instead of keyCacheTtlSeconds (30 s)
 * costs (docs/api-keys.md "How fast revocation takes effect"): one warm container serving one key at
 * RATE requests/s for SIMULATED seconds of a fake clock, through the real authentication against
 * DynamoDB Local: key reads per 1,000 requests and the mean time of one authentication. The two
 * settings alternate (twice each) so the machine's load falls on both alike.
 */
async function revocationCost(deps: Deps, info: LocalStackInfo): Promise<Record<'before' | 'after', { readsPer1000: number; meanMicros: number }>> {
  const RATE = 20;
  const SIMULATED = 300;
  let keyReads = 0;
  const measured = depsFromStackFile(info, deps.config);
  measured.doc.middlewareStack.add((next, context) => async (args) => {
    const key = (args.input as { Key?: { pk?: string } }).Key;
    if (context.commandName === 'GetItemCommand' && String(key?.pk ?? '').startsWith('APIKEY#')) keyReads += 1;
    return next(args);
  }, { step: 'initialize', name: 'keyReads' });
  const org = await createOrganization(deps, { name: 'Revocation cost', rateLimitPerMinute: wafKeyLimitPerMinute });
  const { key } = await createApiKey(deps, org.id, 'revocation');
  const totals = { before: { reads: 0, micros: 0, n: 0 }, after: { reads: 0, micros: 0, n: 0 } };
  for (const which of ['before', 'after', 'before', 'after'] as const) {
    clearAuthCache();
    let now = Date.now();
    const settings = { ...deps.config, keyCacheTtlSeconds: 30, keyRevocationSeconds: which === 'before' ? 30 : 5 };
    const container = { ...measured, settings, now: () => now };
    const readsBefore = keyReads;
    const started = performance.now();
    for (let i = 0; i < RATE * SIMULATED; i++) {
      await authenticate(container, { 'X-API-Key': key });
      now += 1000 / RATE;
    }
    totals[which].micros += (performance.now() - started) * 1000;
    totals[which].reads += keyReads - readsBefore;
    totals[which].n += RATE * SIMULATED;
  }
  const figures = (t: { reads: number; micros: number; n: number }) => ({ readsPer1000: (t.reads / t.n) * 1000, meanMicros: t.micros / t.n });
  return { before: figures(totals.before), after: figures(totals.after) };
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
    const units = { prepaid: parseFloat(prepaid.steady), postpaid: parseFloat(postpaid.steady) };
    recordMeasuredUnits('lead', { writeUnits: { value: Math.max(units.prepaid, units.postpaid), ...units }, by: `npm run bench:intake (${keyCount} keys)` });
    const revocation = await revocationCost(deps, stack.info);
    const line = (f: { readsPer1000: number; meanMicros: number }) => `${f.readsPer1000.toFixed(2)} key reads per 1,000 requests, ${f.meanMicros.toFixed(0)} µs per authentication`;
    console.log(`key trust (one key, 20 requests/s, one container): 30 s (before): ${line(revocation.before)}; 5 s (keyRevocationSeconds): ${line(revocation.after)}`);
  } finally {
    await stack.stop();
  }
}

await main();
