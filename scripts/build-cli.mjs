/**
 * Bundles the `crm` CLI (bin/crm.ts, the project code and the packages it imports) into
 * node_modules/.cache/crm-cli/crm.mjs, so `npx crm` starts without compiling TypeScript, or
 * resolving and reading a few hundred package files, on every run (docs/operations.md "The CLI",
 * docs/decisions.md "The CLI's start"). Run by `npm ci` (the `prepare` script) and again by bin/crm.mjs
 * whenever a source file is newer than the bundle. In node_modules, not in the tree: a bundle in a
 * folder a commit can carry would run code that is not in the sources (node_modules is what
 * `npm ci` makes, trusted as the packages are). Without esbuild (`npm ci --omit=dev`) it builds
 * nothing and says so; bin/crm.mjs then runs the sources through tsx. Plain JavaScript.
 */
import { execFileSync } from 'node:child_process';
import { lstatSync, mkdirSync, renameSync, rmSync, symlinkSync, unlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const root = fileURLToPath(new URL('..', import.meta.url));
export const bundleFile = path.join(root, 'node_modules', '.cache', 'crm-cli', 'crm.mjs');
export const metaFile = path.join(root, 'node_modules', '.cache', 'crm-cli', 'crm.meta.json');
/** `crm --help` as the bundle answers it, kept beside it: bin/crm.mjs prints it without loading the bundle. */
export const helpFile = path.join(root, 'node_modules', '.cache', 'crm-cli', 'crm.help.txt');
/** `npx crm` runs this link (docs/decisions.md "The CLI's start"). */
export const binLink = path.join(root, 'node_modules', '.bin', 'crm');

/**
 * Links node_modules/.bin/crm to bin/crm.mjs. Not package.json's `bin`: for a bin of the project
 * itself, npx installs the project into its own cache and walks its whole node_modules on every run
 * (≈ 0.6 s of CPU); a link in node_modules/.bin it runs at once. (`.npmrc` says `yes=false`: where
 * the link is missing, npx refuses rather than install a registry package named crm.)
 */
export function linkBin() {
  try {
    if (lstatSync(binLink).isSymbolicLink()) return;
    unlinkSync(binLink);
  } catch (error) {
    if (error?.code !== 'ENOENT') throw error;
  }
  mkdirSync(path.dirname(binLink), { recursive: true });
  symlinkSync(path.relative(path.dirname(binLink), path.join(root, 'bin', 'crm.mjs')), binLink);
}

/** Builds the bundle; written beside and renamed into place, so a CLI starting meanwhile never reads half a file. */
export async function buildCli() {
  const { build } = await import('esbuild');
  const builtAt = Date.now();
  const out = await build({
    absWorkingDir: root, entryPoints: ['bin/crm.ts'], bundle: true, platform: 'node', format: 'esm', target: 'node20',
    // As the Lambda bundles (lib/stacks/crm-function.ts): ESM, with a require for CommonJS packages.
    mainFields: ['module', 'main'], banner: { js: "import { createRequire } from 'node:module'; const require = createRequire(import.meta.url);" },
    metafile: true, write: false, logLevel: 'error', outfile: bundleFile,
  });
  mkdirSync(path.dirname(bundleFile), { recursive: true });
  const tmp = `${bundleFile}.${process.pid}.tmp`;
  writeFileSync(tmp, out.outputFiles[0].contents);
  renameSync(tmp, bundleFile);
  // The top-level help depends on nothing but the sources: asked once here, not on every `--help`.
  rmSync(helpFile, { force: true });
  try {
    const help = execFileSync(process.execPath, [bundleFile, '--help'], { env: { ...process.env, NODE_OPTIONS: '' }, stdio: ['ignore', 'pipe', 'ignore'] });
    writeFileSync(`${helpFile}.${process.pid}.tmp`, help);
    renameSync(`${helpFile}.${process.pid}.tmp`, helpFile);
  } catch {
    // no cached help: `--help` loads the bundle as every other command does
  }
  writeFileSync(metaFile, JSON.stringify({ builtAt, inputs: Object.keys(out.metafile.inputs) }));
  linkBin(); // a checkout that pulled this after its `npm ci`: linked at its first rebuild
}

if (process.argv[1] && fileURLToPath(import.meta.url) === path.resolve(process.argv[1])) {
  linkBin();
  try {
    await buildCli();
  } catch (error) {
    if (error?.code !== 'ERR_MODULE_NOT_FOUND') throw error;
    console.warn('crm: esbuild is not installed (a production install): the CLI runs its sources through tsx.');
  }
}
