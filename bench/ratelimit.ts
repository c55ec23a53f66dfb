/**
 * `npm run bench:ratelimit`: how well does the sliding-window limiter hold the line across a
 * minute boundary? One arrival sequence (a steady client plus bursts timed at the boundary) is
 * fed, on a simulated clock, to the real limiter (functions/core/tenancy/rate-limit.ts on DynamoDB Local)
 * and to a fixed-window counter (the same conditional UpdateItem without the previous window).
 * Prints the most requests each admitted in any 60 s window; the fixed window's worst case is 2×.
 * Then the per-client-address window of publishable keys (DESIGN §15): DynamoDB operations and
 * consumed capacity per check, for visitors seen for the first time and for a repeat visitor.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import { startLocalStack } from '../lib/local/stack.js';
import { checkAddressRateLimit, checkRateLimit } from '../functions/core/tenancy/rate-limit.js';
import type { Deps } from '../functions/core/platform/deps.js';

const LIMIT = 100;
const T0 = Math.ceil(Date.now() / 60_000) * 60_000 + 10 * 60_000; // a minute boundary in the future

/** Arrival times (ms since T0): 3 minutes of 1 req/s, plus 150-request bursts on both sides of each boundary. */
function arrivals(): number[] {
  const times: number[] = [];
  for (let s = 0; s < 180; s++) times.push(s * 1000 + 500);
  for (const boundary of [60_000, 120_000]) {
    for (let i = 0; i < 150; i++) times.push(boundary - 2_000 + i * 10); // 58.0 s … 59.5 s
    for (let i = 0; i < 150; i++) times.push(boundary + 100 + i * 10); // 60.1 s … 61.6 s
  }
  return times.sort((a, b) => a - b);
}

function maxInAnyWindow(admitted: number[], windowMs = 60_000): number {
  let best = 0;
  for (let lo = 0, hi = 0; hi < admitted.length; hi++) {
    while (admitted[hi] - admitted[lo] >= windowMs) lo++;
    best = Math.max(best, hi - lo + 1);
  }
  return best;
}

async function fixedWindow(deps: Deps, key: string, now: number): Promise<boolean> {
  try {
    await deps.doc.send(new UpdateCommand({
      TableName: deps.tables.rateWindows,
      Key: { pk: `FIXED#${key}#${Math.floor(now / 60_000)}` },
      UpdateExpression: 'ADD #c :one',
      ConditionExpression: 'attribute_not_exists(#c) OR #c < :limit',
      ExpressionAttributeNames: { '#c': 'count' },
      ExpressionAttributeValues: { ':one': 1, ':limit': LIMIT },
    }));
    return true;
  } catch (error) {
    if (error instanceof ConditionalCheckFailedException) return false;
    throw error;
  }
}

interface Meter { operations: Record<string, number>; readUnits: number; writeUnits: number }

/**
 * Counts every DynamoDB call sent through `deps.doc` and the capacity it consumed (asked with
 * ReturnConsumedCapacity). A write refused by its condition returns no output but is billed one
 * write unit per KB on DynamoDB (its item here is under 1 KB): counted as 1.
 */
function meter(deps: Deps): Meter {
  const m: Meter = { operations: {}, readUnits: 0, writeUnits: 0 };
  deps.doc.middlewareStack.add((next, context) => async (args) => {
    const name = (context as { commandName?: string }).commandName ?? 'unknown';
    m.operations[name] = (m.operations[name] ?? 0) + 1;
    (args.input as Record<string, unknown>).ReturnConsumedCapacity = 'TOTAL';
    try {
      const out = await next(args);
      const used = (out.output as { ConsumedCapacity?: { CapacityUnits?: number; ReadCapacityUnits?: number; WriteCapacityUnits?: number } }).ConsumedCapacity;
      const units = used?.CapacityUnits ?? 0;
      if (name.startsWith('Get')) m.readUnits += units;
      else m.writeUnits += units;
      return out;
    } catch (error) {
      if (error instanceof ConditionalCheckFailedException) m.writeUnits += 1;
      throw error;
    }
  }, { step: 'initialize', name: 'benchMeter' });
  return m;
}

/** The per-address window's cost per check: first-time visitors (each a new address) and one repeat visitor. */
async function perAddressCost(base: Deps): Promise<void> {
  const minute = T0 + 30 * 60_000;
  const deps: Deps = { ...base, now: () => minute + 20_000 };
  const m = meter(deps);
  const COLD = 200;
  for (let i = 0; i < COLD; i++) await checkAddressRateLimit(deps, 'bench-pub', `198.51.${Math.floor(i / 250)}.${i % 250}`, 5);
  const cold = { ...m, operations: { ...m.operations } };
  const REPEAT = 10;
  Object.assign(m, { operations: {}, readUnits: 0, writeUnits: 0 });
  let admitted = 0;
  for (let i = 0; i < REPEAT; i++) if ((await checkAddressRateLimit(deps, 'bench-pub', '203.0.113.9', 5)).allowed) admitted += 1;
  const describe = (what: string, n: number, x: Meter) => {
    const ops = Object.values(x.operations).reduce((a, b) => a + b, 0);
    const list = Object.entries(x.operations).map(([k, v]) => `${k.replace(/Command$/, '')} ${(v / n).toFixed(2)}`).join(', ');
    console.log(`  ${what}: ${(ops / n).toFixed(2)} operations per check (${list}); ${(x.readUnits / n).toFixed(2)} RCU + ${(x.writeUnits / n).toFixed(2)} WCU per check`);
  };
  console.log('per-address window of a publishable key (limit 5/min per address), DynamoDB Local, capacity as reported (eventually consistent reads):');
  describe(`${COLD} first-time addresses`, COLD, cold);
  describe(`one address, ${REPEAT} checks in a minute (${admitted} admitted)`, REPEAT, m);
  console.log('  on top of the key\'s own window (1 UpdateItem per request; its GetItem once a minute per container).');
}

async function main() {
  const stack = await startLocalStack({ dir: mkdtempSync(path.join(tmpdir(), 'crm-bench-')), inMemory: true, port: 0, seed: false });
  try {
    const times = arrivals();
    let clock = 0;
    const deps: Deps = { ...stack.deps, now: () => T0 + clock };
    const sliding: number[] = [];
    const fixed: number[] = [];
    const started = performance.now();
    for (const t of times) {
      clock = t;
      if ((await checkRateLimit(deps, 'bench-sliding', LIMIT)).allowed) sliding.push(t);
      if (await fixedWindow(deps, 'bench-fixed', T0 + t)) fixed.push(t);
    }
    const elapsed = performance.now() - started;
    const s = maxInAnyWindow(sliding);
    const f = maxInAnyWindow(fixed);
    console.log(`limit ${LIMIT}/min; ${times.length} requests over 3 simulated minutes, bursts straddling two minute boundaries`);
    console.log(`most admitted in any 60 s window: sliding window ${s} (${(s / LIMIT).toFixed(2)}× the limit), fixed window ${f} (${(f / LIMIT).toFixed(2)}×)`);
    console.log(`admitted in all: sliding ${sliding.length}, fixed ${fixed.length}; ${(elapsed / times.length / 2).toFixed(2)} ms per limiter call on DynamoDB Local`);
    await perAddressCost(stack.deps);
  } finally {
    await stack.stop();
  }
}

await main();
