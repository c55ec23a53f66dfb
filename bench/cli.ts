/**
 * `npm run bench:cli`: how long `crm --help` takes to answer, in a fresh Node process each run,
 * from the bundle (bin/crm.mjs, as `npx crm` runs it) and from the sources through tsx (as it ran
 * before the bundle), alternating so load affects both alike. Prints the median wall and CPU time
 * of each and their ratio. Target: ≤ 1 s wall on a quiet 2-core machine (docs/benchmarks.md).
 */
import { spawnSync } from 'node:child_process';

const RUNS = Number(process.env.RUNS ?? 7);
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

function run(args: string[]): { wall: number; cpu: number } {
  const started = performance.now();
  const out = spawnSync('/usr/bin/time', ['-f', '%U %S', process.execPath, ...args, '--help'], { encoding: 'utf8', env: { ...process.env, NODE_OPTIONS: '' } });
  const wall = performance.now() - started;
  if (out.status !== 0) throw new Error(`crm --help failed: ${out.stderr}`);
  const [user, system] = out.stderr.trim().split('\n').at(-1)!.split(' ').map(Number);
  return { wall, cpu: (user + system) * 1000 };
}

const bundle: { wall: number; cpu: number }[] = [];
const sources: { wall: number; cpu: number }[] = [];
run(['bin/crm.mjs']); // builds the bundle if a source changed
for (let i = 0; i < RUNS; i++) {
  bundle.push(run(['bin/crm.mjs']));
  sources.push(run(['--import', 'tsx', 'bin/crm.ts']));
}
const line = (name: string, xs: { wall: number; cpu: number }[]) =>
  `${name.padEnd(28)} wall ${median(xs.map((x) => x.wall)).toFixed(0).padStart(5)} ms   cpu ${median(xs.map((x) => x.cpu)).toFixed(0).padStart(5)} ms`;
console.log(`crm --help, median of ${RUNS} fresh processes each`);
console.log(line('bundle (bin/crm.mjs)', bundle));
console.log(line('sources through tsx (before)', sources));
console.log(`ratio (tsx / bundle): wall ${(median(sources.map((x) => x.wall)) / median(bundle.map((x) => x.wall))).toFixed(2)}, cpu ${(median(sources.map((x) => x.cpu)) / median(bundle.map((x) => x.cpu))).toFixed(2)}`);
