/**
 * `npm run bench:ratelimit`: does the limiter (functions/core/tenancy/rate-limit.ts, closed 10 s
 * sub-windows) ever admit more than its limit in a 60 s span? Adversarial arrival patterns are
 * replayed on a simulated clock through the real limiter on DynamoDB Local; for each it prints the
 * most admitted in any 60 s (target ≤ the limit), DynamoDB requests per check (target ≤ 1.1), and
 * for a caller at exactly the limit's rate the fraction admitted (target ≥ 0.95). Then the
 * per-client-address window of publishable keys (the same algorithm): its cost per check.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { startLocalStack } from '../lib/local/stack.js';
import { checkAddressRateLimit, checkRateLimit, reserveDailyCall } from '../functions/core/tenancy/rate-limit.js';
import type { Deps } from '../functions/core/platform/deps.js';

const LIMIT = 100;
const MINUTE = 60_000;
const T0 = Math.ceil(Date.now() / MINUTE) * MINUTE + 10 * MINUTE; // a minute boundary in the future

/** Seeded, so runs replay the same arrivals (mulberry32). */
function random(seed: number): () => number {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
const every = (from: number, to: number, step: number) => Array.from({ length: Math.ceil((to - from) / step) }, (_, i) => from + i * step);

/** Arrival times in ms after T0 (a minute boundary); each array element is a batch sent at once. */
const patterns: Record<string, number[][]> = {
  // 1/s for 3 minutes plus 150 requests either side of two minute boundaries and of two sub-window boundaries.
  'boundary bursts': (() => {
    const times = every(500, 180_000, 1000);
    for (const b of [MINUTE, 2 * MINUTE, 70_000, 130_000]) times.push(...every(b - 1_500, b - 1, 10), ...every(b, b + 1_500, 10));
    return times.sort((a, b) => a - b).map((t) => [t]);
  })(),
  // As fast as it may (every 100 ms), starting in the last quarter, and in the last second, of a minute.
  'greedy from :45': every(45_000, 225_000, 100).map((t) => [t]),
  'greedy from :59': every(59_000, 239_000, 100).map((t) => [t]),
  // 3 × the limit's rate, at uniformly random times over 4 minutes.
  'uniform random': (() => {
    const r = random(42);
    return Array.from({ length: 3 * LIMIT * 4 }, () => Math.floor(r() * 4 * MINUTE)).sort((a, b) => a - b).map((t) => [t]);
  })(),
  // 20 callers on one key, each request of a tick sent concurrently: 100 req/s for 2 minutes.
  '20 concurrent callers': every(30_000, 150_000, 200).map((t) => Array.from({ length: 20 }, () => t)),
};

function maxInAnyWindow(admitted: number[], windowMs = MINUTE): number {
  let best = 0;
  for (let lo = 0, hi = 0; hi < admitted.length; hi++) {
    while (admitted[hi] - admitted[lo] >= windowMs) lo++;
    best = Math.max(best, hi - lo + 1);
  }
  return best;
}

/** Every DynamoDB request sent through the stack's document client, by operation (reset per measurement). */
const m = { operations: {} as Record<string, number>, units: { read: 0, write: 0 } };
type Consumed = { ReadCapacityUnits?: number; WriteCapacityUnits?: number; CapacityUnits?: number };
function meter(deps: Deps): void {
  deps.doc.middlewareStack.add((next, context) => async (args) => {
    const name = ((context as { commandName?: string }).commandName ?? 'unknown').replace(/Command$/, '');
    m.operations[name] = (m.operations[name] ?? 0) + 1;
    // Capacity as DynamoDB reports it: a refused conditional write is still 1 write unit.
    (args.input as { ReturnConsumedCapacity?: string }).ReturnConsumedCapacity = 'TOTAL';
    const count = (c: Consumed | Consumed[] | undefined) => {
      for (const one of [c ?? []].flat()) {
        if (name === 'BatchGetItem') m.units.read += one.ReadCapacityUnits ?? one.CapacityUnits ?? 0;
        else m.units.write += one.WriteCapacityUnits ?? one.CapacityUnits ?? 0;
      }
    };
    try {
      const out = await next(args);
      count((out.output as { ConsumedCapacity?: Consumed | Consumed[] }).ConsumedCapacity);
      return out;
    } catch (error) {
      if ((error as { name?: string }).name === 'ConditionalCheckFailedException') m.units.write += 1;
      throw error;
    }
  }, { step: 'initialize', name: 'benchMeter' });
}
const total = (ops: Record<string, number>) => Object.values(ops).reduce((a, b) => a + b, 0);
const perCheck = (ops: Record<string, number>, n: number) =>
  `${(total(ops) / n).toFixed(3)} (${Object.entries(ops).sort().map(([k, v]) => `${k} ${(v / n).toFixed(3)}`).join(', ')}); units per check: write ${(m.units.write / n).toFixed(3)}, read ${(m.units.read / n).toFixed(3)}`;

async function replay(base: Deps, key: string, batches: number[][], offset: number): Promise<{ admitted: number[]; checks: number; operations: Record<string, number> }> {
  let clock = 0;
  const deps: Deps = { ...base, now: () => T0 + offset + clock };
  m.operations = {};
  m.units = { read: 0, write: 0 };
  const admitted: number[] = [];
  let checks = 0;
  for (const batch of batches) {
    clock = batch[0];
    const results = await Promise.all(batch.map(() => checkRateLimit(deps, key, LIMIT)));
    checks += batch.length;
    for (const r of results) if (r.allowed) admitted.push(clock);
  }
  return { admitted, checks, operations: m.operations };
}

/** The per-address window's cost per check (first-time visitors, each a new address, and one repeat visitor), and the daily cap's. */
async function perAddressCost(base: Deps): Promise<void> {
  let clock = 20_000;
  const deps: Deps = { ...base, now: () => T0 + 30 * MINUTE + clock };
  const measure = async (n: number, check: () => Promise<unknown>) => {
    m.operations = {};
    m.units = { read: 0, write: 0 };
    for (let i = 0; i < n; i++) await check();
    return perCheck(m.operations, n);
  };
  console.log('per-address window of a publishable key (limit 5/min per address), DynamoDB requests per check:');
  const COLD = 200;
  // Spread over one sub-window: a first check in its first SETTLE_MS also closes the previous one.
  let i = 0;
  const cold = await measure(COLD, async () => {
    await checkAddressRateLimit(deps, 'bench-pub', `198.51.${Math.floor(i / 250)}.${i++ % 250}`, 5);
    clock += 50;
  });
  console.log(`  ${COLD} first-time addresses (spread over a sub-window): ${cold}`);
  clock = 30_500;
  const REPEAT = 10;
  let admitted = 0;
  const repeat = await measure(REPEAT, async () => {
    if ((await checkAddressRateLimit(deps, 'bench-pub', '203.0.113.9', 5)).allowed) admitted += 1;
  });
  console.log(`  one address, ${REPEAT} checks in a second (${admitted} admitted; refusals of a full sub-window cost nothing): ${repeat}`);
  const CAPPED = 50;
  const cap = await measure(CAPPED, () => reserveDailyCall(deps, 'bench-pub', 1_000));
  console.log(`daily cap of a publishable key, per reservation: ${cap}`);
}

async function main() {
  const stack = await startLocalStack({ dir: mkdtempSync(path.join(tmpdir(), 'crm-bench-')), inMemory: true, port: 0, seed: false });
  try {
    meter(stack.deps);
    console.log(`limit ${LIMIT} per 60 s; simulated clock, real limiter on DynamoDB Local`);
    console.log('pattern                 requests  admitted  most in any 60 s  DynamoDB requests per check');
    let offset = 0;
    let worst = 0;
    for (const [name, batches] of Object.entries(patterns)) {
      const started = performance.now();
      const { admitted, checks, operations } = await replay(stack.deps, `bench-${offset}`, batches, offset);
      const most = maxInAnyWindow(admitted);
      worst = Math.max(worst, most);
      const ms = (performance.now() - started) / checks;
      console.log(`${name.padEnd(24)}${String(checks).padStart(8)}${String(admitted.length).padStart(10)}${String(most).padStart(18)}  ${perCheck(operations, checks)}; ${ms.toFixed(2)} ms per check`);
      offset += 10 * MINUTE;
    }
    // Exactly the limit's rate: one request every 60 s / limit, for 5 minutes.
    const steady = every(0, 5 * MINUTE, MINUTE / LIMIT).map((t) => [t + 123]);
    const { admitted, checks, operations } = await replay(stack.deps, 'bench-steady', steady, offset);
    console.log(`${'at the limit\'s rate'.padEnd(24)}${String(checks).padStart(8)}${String(admitted.length).padStart(10)}${String(maxInAnyWindow(admitted)).padStart(18)}  ${perCheck(operations, checks)}`);
    console.log(`most admitted in any 60 s over every pattern: ${worst} (limit ${LIMIT}); a caller at exactly the limit's rate gets ${(admitted.length / checks).toFixed(3)} of its requests admitted`);
    await perAddressCost(stack.deps);
  } finally {
    await stack.stop();
  }
}

await main();
