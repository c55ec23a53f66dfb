/**
 * `npm run bench:ratelimit`: how well does the sliding-window limiter hold the line across a
 * minute boundary? One arrival sequence (a steady client plus bursts timed at the boundary) is
 * fed, on a simulated clock, to the real limiter (functions/core/tenancy/rate-limit.ts on DynamoDB Local)
 * and to a fixed-window counter (the same conditional UpdateItem without the previous window).
 * Prints the most requests each admitted in any 60 s window; the fixed window's worst case is 2×.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import { startLocalStack } from '../lib/local/stack.js';
import { checkRateLimit } from '../functions/core/tenancy/rate-limit.js';
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
  } finally {
    await stack.stop();
  }
}

await main();
