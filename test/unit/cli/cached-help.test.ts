/**
 * `crm --help` from the help the bundle printed when it was built (scripts/build-cli.mjs helpFile,
 * bin/crm.mjs): the same text as the bundle's own answer, printed without loading the bundle.
 */
import { describe, it, expect } from '@jest/globals';
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { bundleFile, helpFile } from '../../../scripts/build-cli.mjs';

const crm = (...args: string[]) => execFileSync(process.execPath, args, { encoding: 'utf8', env: { ...process.env, NODE_OPTIONS: '' } });

describe('crm --help', () => {
  it('prints the help the bundle gives, kept when it was built', () => {
    const cached = crm('bin/crm.mjs', '--help'); // builds the bundle (and its help) first if a source is newer
    expect(existsSync(helpFile)).toBe(true);
    expect(cached).toBe(crm(bundleFile, '--help'));
    expect(cached).toContain('webhooks');
    expect(crm('bin/crm.mjs', '-h')).toBe(cached);
  });
});
