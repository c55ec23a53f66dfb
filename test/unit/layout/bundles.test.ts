/**
 * What each function's bundle carries: only a function that sends mail (lib/topology.ts `sendsMail`)
 * bundles nodemailer (docs/notifications.md "Transport"); everything else shares platform/config.ts
 * and must not pull it in through it. Bundled as lib/stacks/crm-function.ts bundles (esbuild, ESM,
 * @aws-sdk/* external), read from esbuild's metafile, nothing written.
 */
import { describe, it, expect } from '@jest/globals';
import { build } from 'esbuild';
import path from 'node:path';
import { functions, type FunctionName } from '../../../lib/topology.js';

/** The node_modules packages a function's bundle takes code from. */
async function bundledPackages(name: FunctionName): Promise<Set<string>> {
  const result = await build({
    entryPoints: [path.join('functions', functions[name].entry, 'handler.ts')],
    bundle: true, platform: 'node', format: 'esm', target: 'node24', mainFields: ['module', 'main'],
    external: ['@aws-sdk/*'], metafile: true, write: false, outfile: 'out/index.mjs', logLevel: 'silent',
  });
  const packages = new Set<string>();
  for (const input of Object.keys(result.metafile.inputs)) {
    const match = /node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(input);
    if (match) packages.add(match[1]!);
  }
  return packages;
}

describe('nodemailer', () => {
  const names = Object.keys(functions) as FunctionName[];
  it.each(names)('is in the %s bundle only if it sends mail', async (name) => {
    const sendsMail = (functions[name] as { sendsMail?: true }).sendsMail === true;
    expect((await bundledPackages(name)).has('nodemailer')).toBe(sendsMail);
  });
});
