/**
 * `npm run bench:coldstart`: the cold start of each synthesized bundle. Runs `cdk synth` (or takes
 * `--cdk-out <dir>`), puts each bundle in a task folder where only the runtime's @aws-sdk/*
 * resolves (test/artifact/lambda-harness.ts), then imports it in a fresh Node process, RUNS times,
 * alternating with an import of just the @aws-sdk packages that bundle imports. It prints the
 * bundle size and the median init time of each, and their difference: the bundle's own init.
 * Both run with the function's NODE_OPTIONS from the template (as Lambda does).
 * Targets: ≤ 360 KB (250 before the X-Ray SDK the Powertools Tracer needs, docs/benchmarks.md) and
 * ≤ 100 ms of own init for every function.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import {
  bareImports, linkRuntimeModules, readTemplate, synthesize, synthesizedFunctions, taskFolder,
} from '../test/artifact/lambda-harness.js';

const RUNS = Number(process.env.RUNS ?? 11);
const TARGET_KB = 360;
const TARGET_MS = 100;

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

/** Wall and CPU milliseconds a fresh Node process spends importing `file` (module evaluation included). */
function importMs(file: string, cwd: string, nodeOptions: string): { wall: number; cpu: number } {
  const code = `const c = process.cpuUsage(); const t = performance.now(); await import(${JSON.stringify(pathToFileURL(file).href)});`
    + ' const u = process.cpuUsage(c); process.stdout.write(JSON.stringify({ wall: performance.now() - t, cpu: (u.user + u.system) / 1000 }));';
  const run = spawnSync(process.execPath, ['--input-type=module', '-e', code], { cwd, env: { NODE_OPTIONS: nodeOptions, AWS_REGION: 'us-east-1' }, encoding: 'utf8' });
  if (run.status !== 0) throw new Error(`import of ${file} failed:\n${run.stderr}`);
  return JSON.parse(run.stdout);
}

async function main(): Promise<void> {
  const arg = process.argv.indexOf('--cdk-out');
  const work = mkdtempSync(path.join(tmpdir(), 'crm-coldstart-'));
  try {
    const cdkOut = arg > 0 ? path.resolve(process.argv[arg + 1]) : path.join(work, 'cdk.out');
    if (arg < 0) {
      process.stdout.write('cdk synth (bundling)…\n');
      await synthesize(cdkOut);
    }
    const runtimeDir = path.join(work, 'runtime');
    linkRuntimeModules(runtimeDir);
    const rows: string[][] = [];
    let missed = false;
    for (const fn of synthesizedFunctions(cdkOut, readTemplate(cdkOut))) {
      const task = taskFolder(runtimeDir, fn);
      const bundle = path.join(task, 'index.mjs');
      // The baseline loads what the bundle loads at init: its static SDK imports (a lazy import() loads later).
      const sdk = bareImports(readFileSync(bundle, 'utf8'), { onlyStatic: true });
      const sdkOnly = path.join(task, 'sdk-only.mjs');
      writeFileSync(sdkOnly, sdk.map((s) => `import ${JSON.stringify(s)};`).join('\n') + '\n');
      const nodeOptions = String(fn.environment.NODE_OPTIONS ?? '');
      const bundleRuns: { wall: number; cpu: number }[] = [];
      const sdkRuns: { wall: number; cpu: number }[] = [];
      for (let i = 0; i < RUNS; i++) {
        bundleRuns.push(importMs(bundle, task, nodeOptions));
        sdkRuns.push(importMs(sdkOnly, task, nodeOptions));
      }
      const m = (runs: { wall: number; cpu: number }[], k: 'wall' | 'cpu') => median(runs.map((r) => r[k]));
      const kb = statSync(bundle).size / 1024;
      const own = m(bundleRuns, 'wall') - m(sdkRuns, 'wall');
      const ok = kb <= TARGET_KB && own <= TARGET_MS;
      missed ||= !ok;
      rows.push([
        fn.name, kb.toFixed(0), m(bundleRuns, 'wall').toFixed(0), m(sdkRuns, 'wall').toFixed(0), own.toFixed(0),
        (m(bundleRuns, 'cpu') - m(sdkRuns, 'cpu')).toFixed(0), ok ? 'yes' : 'NO', sdk.join(' '),
      ]);
    }
    // CPU time varies less than wall time on a shared machine; the target is on wall time.
    const head = ['function', 'bundle KB', 'init ms', 'SDK-only ms', 'own init ms', 'own CPU ms', 'on target', 'SDK packages loaded at init'];
    const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)));
    const line = (r: string[]) => r.map((c, i) => c.padEnd(widths[i])).join('  ');
    process.stdout.write(`\nNode ${process.version}, median of ${RUNS} fresh processes each; targets ≤ ${TARGET_KB} KB, ≤ ${TARGET_MS} ms own init\n`);
    process.stdout.write([line(head), ...rows.map(line)].join('\n') + '\n');
    if (missed) process.exitCode = 1;
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

await main();
