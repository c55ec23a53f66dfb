/**
 * Bundles the `crm` CLI (bin/crm.ts and the project code it imports; packages stay imports) into
 * dist/cli/crm.mjs, so `npx crm` starts without compiling TypeScript on every run (docs/operations.md
 * "The CLI"). Run by `npm ci` (the `prepare` script) and again by bin/crm.mjs whenever a source file
 * is newer than the bundle. Plain JavaScript: it runs before anything else is built.
 */
import { build } from 'esbuild';
import { mkdirSync, renameSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const root = fileURLToPath(new URL('..', import.meta.url));
export const bundleFile = path.join(root, 'dist', 'cli', 'crm.mjs');
export const metaFile = path.join(root, 'dist', 'cli', 'crm.meta.json');

/** Builds the bundle; written beside and renamed into place, so a CLI starting meanwhile never reads half a file. */
export async function buildCli() {
  const builtAt = Date.now();
  const out = await build({
    absWorkingDir: root, entryPoints: ['bin/crm.ts'], bundle: true, platform: 'node', format: 'esm', target: 'node20',
    packages: 'external', metafile: true, write: false, logLevel: 'error', outfile: bundleFile,
  });
  mkdirSync(path.dirname(bundleFile), { recursive: true });
  const tmp = `${bundleFile}.${process.pid}.tmp`;
  writeFileSync(tmp, out.outputFiles[0].contents);
  renameSync(tmp, bundleFile);
  writeFileSync(metaFile, JSON.stringify({ builtAt, inputs: Object.keys(out.metafile.inputs) }));
}

if (process.argv[1] && fileURLToPath(import.meta.url) === path.resolve(process.argv[1])) await buildCli();
