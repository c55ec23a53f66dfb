#!/usr/bin/env node
// `npx crm` entry: runs the CLI's bundle (scripts/build-cli.mjs, in node_modules/.cache/crm-cli),
// rebuilt first when a source file is newer than it; without esbuild (a production install), tsx
// runs the TypeScript as it is.
import { existsSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
// Node built-ins only at the top of it (esbuild is imported when a build runs): cheap to load here.
import { buildCli, bundleFile as bundle, helpFile, metaFile as meta, root } from '../scripts/build-cli.mjs';

// The AWS SDK warns that it will need Node 22 from 2027; that is not the admin's concern here.
const emitWarning = process.emitWarning;
process.emitWarning = (warning, ...rest) =>
  String(warning?.name ?? rest[0]?.type ?? rest[0]).includes('NodeVersionSupportWarning') || String(warning).includes('NodeVersionSupportWarning')
    ? undefined
    : emitWarning.call(process, warning, ...rest);


/** Whether the bundle holds the current sources: none of its inputs changed after it was built. */
function fresh() {
  if (!existsSync(bundle) || !existsSync(meta)) return false;
  try {
    const { builtAt, inputs } = JSON.parse(readFileSync(meta, 'utf8'));
    return inputs.every((input) => statSync(path.join(root, input)).mtimeMs <= builtAt);
  } catch {
    return false; // an input gone or renamed: rebuild
  }
}

let built = fresh();
if (!built) {
  try {
    await buildCli();
    built = true;
  } catch {
    built = false; // no esbuild here: run the sources through tsx
  }
}
const args = process.argv.slice(2);
if (built && args.length === 1 && (args[0] === '--help' || args[0] === '-h') && existsSync(helpFile)) {
  // The help the bundle printed when it was built (scripts/build-cli.mjs): no SDK loaded for it.
  process.stdout.write(readFileSync(helpFile));
} else if (built) {
  await import(pathToFileURL(bundle).href);
} else {
  const { register } = await import('tsx/esm/api');
  register();
  await import('./crm.ts');
}
