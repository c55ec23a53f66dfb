/**
 * `npm run bench:cli`: how long the `crm` CLI takes to answer, in a fresh process each run, as an
 * operator types it (docs/benchmarks.md "The CLI's start"):
 * - `npx crm --help`: npm's own start, then node_modules/.bin/crm (bin/crm.mjs running the bundle);
 * - `npx crm deliveries show <id>` (or `deliveries list --org <id>` where the CLI has no `show`),
 *   against a local stack this bench starts (loopback only), one delivery recorded;
 * - `node bin/crm.mjs --help` (the bundle without npm) and the sources through tsx (as it ran
 *   before the bundle), alternating so load affects all alike.
 * Prints the median wall and CPU time of each. Target: `npx crm …` ≤ 1 s wall on a quiet 2-core machine.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { startLocalStack } from '../lib/local/stack.js';
import { addEndpoint } from '../functions/core/delivery/endpoints.js';
import { recordDelivery } from '../functions/core/delivery/queue.js';
import { buildProgram } from '../lib/cli/program.js';

const RUNS = Number(process.env.RUNS ?? 7);
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
type Run = { wall: number; cpu: number };

// Not spawnSync: the local stack's DynamoDB proxy runs in this process's event loop.
function run(command: string, args: string[], env: Record<string, string> = {}): Promise<Run> {
  const started = performance.now();
  return new Promise((resolve, reject) => {
    execFile('/usr/bin/time', ['-f', '%U %S', command, ...args], { env: { ...process.env, NODE_OPTIONS: '', ...env } }, (error, _stdout, stderr) => {
      const wall = performance.now() - started;
      if (error) return reject(new Error(`${command} ${args.join(' ')} failed: ${stderr}`));
      const [user, system] = stderr.trim().split('\n').at(-1)!.split(' ').map(Number);
      resolve({ wall, cpu: (user + system) * 1000 });
    });
  });
}

const dir = mkdtempSync(path.join(tmpdir(), 'crm-bench-cli-'));
const stack = await startLocalStack({ dir, inMemory: true, port: 0, seed: true });
try {
  const { deps, stackFile, info } = stack;
  const organizationId = info.demo!.organizationId;
  const { endpoint } = await addEndpoint(deps, organizationId, { url: 'http://127.0.0.1:9/bench', events: 'all', enabled: false });
  const event = { id: `evt_bench_${Date.now()}`, type: 'client.created', api_version: '2026-01-01', timestamp: new Date().toISOString(), organization_id: organizationId, data: { object: { id: 'cli_bench' } } };
  const message = await recordDelivery(deps, event as never, { ...endpoint, secrets: [] } as never);
  const deliveryId = message?.deliveryId ?? `${event.id}`;
  const hasShow = buildProgram().commands.find((c) => c.name() === 'deliveries')!.commands.some((c) => c.name() === 'show');
  const deliveriesArgs = hasShow ? ['deliveries', 'show', deliveryId] : ['deliveries', 'list', '--org', organizationId, '--limit', '1'];
  const env = { CRM_STACK_FILE: stackFile };
  process.stderr.write(`stack up; measuring ${deliveriesArgs.join(' ')}\n`);

  const rows: [string, () => Promise<Run>][] = [
    ['npx crm --help', () => run('npx', ['crm', '--help'])],
    [`npx crm ${deliveriesArgs.slice(0, 2).join(' ')} …`, () => run('npx', ['crm', ...deliveriesArgs], env)],
    ['node bin/crm.mjs --help', () => run(process.execPath, ['bin/crm.mjs', '--help'])],
    ['sources through tsx --help', () => run(process.execPath, ['--import', 'tsx', 'bin/crm.ts', '--help'])],
  ];
  await run(process.execPath, ['bin/crm.mjs', '--help']); // builds the bundle if a source changed
  const results = rows.map(() => [] as Run[]);
  for (let i = 0; i < RUNS; i++) for (const [n, [, measure]] of rows.entries()) results[n].push(await measure());
  console.log(`crm start, median of ${RUNS} fresh processes each`);
  rows.forEach(([name], n) => {
    const xs = results[n];
    console.log(`${name.padEnd(36)} wall ${median(xs.map((x) => x.wall)).toFixed(0).padStart(5)} ms   cpu ${median(xs.map((x) => x.cpu)).toFixed(0).padStart(5)} ms`);
  });
} finally {
  await stack.stop();
  rmSync(dir, { recursive: true, force: true });
}
