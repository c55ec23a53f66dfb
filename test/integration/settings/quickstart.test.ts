/**
 * The settings page's cURL examples (GET /api/settings curlExamples) work as pasted: each is run
 * by bash, zsh and sh (dash here) with CRM_API_KEY set as the page's `export` line sets it, against
 * the local stack. The lead example sends a non-empty, different Idempotency-Key each time: the
 * first shell's lead is created (201), the next shells' identical lead is answered as a duplicate of
 * it (200, docs/leads.md "Duplicates"), where a repeated key would have replayed the first 201.
 */
import { describe, it, expect } from '@jest/globals';
import { execFileSync } from 'node:child_process';
import { itemsOf, newTenant } from '../support/stack.js';
import { settingsClient } from './support.js';

const shells = ['bash', 'zsh', 'sh'];

describe('the quick start commands', () => {
  it('check the key and create a lead in bash, zsh and sh, without uuidgen', async () => {
    const tenant = await newTenant({ name: 'Quickstart Plumbing' });
    const admin = await settingsClient(tenant.organizationId);
    const { curlExamples } = (await admin.get('/api/settings')).json<{ curlExamples: { title: string; command: string }[] }>();
    const [check, send] = curlExamples;
    expect(send.command).not.toContain('uuidgen');
    for (const [i, shell] of shells.entries()) {
      // The export line next to a new key, then the command as pasted.
      const run = (command: string) => execFileSync(shell, ['-c', `export CRM_API_KEY='${tenant.key}'\n${command} -o /dev/null -w '%{http_code}'`], { encoding: 'utf8', timeout: 15_000 });
      expect({ shell, check: run(check.command) }).toEqual({ shell, check: '200' });
      expect({ shell, send: run(send.command) }).toEqual({ shell, send: i === 0 ? '201' : '200' });
    }
    // One client: the same example lead, each time under a new key.
    const clients = await itemsOf('clients', tenant.organizationId, 'CLIENT#');
    expect(clients).toHaveLength(1);
  }, 60_000);
});
