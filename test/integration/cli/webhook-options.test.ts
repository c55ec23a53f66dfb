/** `crm webhooks add|update|list` with custom headers and a rate limit, against the local stack: set, masked, removed; bad input refused with nothing written. */
import { describe, it, expect } from '@jest/globals';
import { runCli, testStack } from '../support/stack.js';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { getEndpoint } from '../../../functions/core/delivery/endpoints.js';

describe('crm webhooks: custom headers and rate limit', () => {
  it('adds with a header and a limit, updates them, lists them masked, and refuses bad ones naming them', async () => {
    const { deps } = await testStack();
    const { id: org } = (await runCli(['org', 'create', '--name', 'CLI Headers'])).json<{ id: string }>();
    const added = await runCli(['webhooks', 'add', '--org', org, '--url', 'http://127.0.0.1:9/hooks', '--header', 'Authorization: Bearer rk_cli_0123456789abcdef', '--rate-limit', '5']);
    expect(added.code).toBe(0);
    const { id } = added.json<{ id: string }>();
    expect(added.json()).toMatchObject({ headers: { authorization: '••••cdef' }, rateLimitPerSecond: 5 });

    const updated = await runCli(['webhooks', 'update', '--org', org, '--endpoint', id, '--header', 'X-Tenant: acme', '--remove-header', 'Authorization', '--rate-limit', 'none']);
    expect(updated.code).toBe(0);
    expect(updated.json()).toMatchObject({ headers: { 'x-tenant': '••••' } });
    expect(updated.json<{ rateLimitPerSecond?: number }>().rateLimitPerSecond).toBeUndefined();
    const stored = await getEndpoint(deps, org, id);
    expect(stored).toMatchObject({ headers: { 'x-tenant': 'acme' } });
    expect(stored?.rateLimitPerSecond).toBeUndefined();

    const table = await runCli(['webhooks', 'list', '--org', org], { json: false });
    expect(table.stdout).toContain('x-tenant: ••••');
    expect(table.stdout).not.toContain('acme');

    const reserved = await runCli(['webhooks', 'update', '--org', org, '--endpoint', id, '--header', 'Webhook-Id: forged', '--rate-limit', '3']);
    expect(reserved.code).not.toBe(0);
    expect(reserved.stderr).toContain('headers.Webhook-Id: "webhook-id" is reserved');
    const malformed = await runCli(['webhooks', 'update', '--org', org, '--endpoint', id, '--header', 'X-Unset']);
    expect(malformed.code).toBe(2);
    expect(malformed.stderr).toContain('--header X-Unset: no value: set CRM_HEADER_X_UNSET in the environment, or use --headers-file');
    const badRate = await runCli(['webhooks', 'update', '--org', org, '--endpoint', id, '--rate-limit', '2.5']);
    expect(badRate.code).toBe(2);
    expect(badRate.stderr).toContain('--rate-limit must be a whole number');
    const tooFast = await runCli(['webhooks', 'update', '--org', org, '--endpoint', id, '--rate-limit', '500']);
    expect(tooFast.code).not.toBe(0);
    expect(tooFast.stderr).toContain('rate_limit_per_second: must be a whole number of deliveries a second from 1 to 100');
    // Nothing of the refused updates was written.
    expect(await getEndpoint(deps, org, id)).toEqual(stored);
  }, 240_000); // nine CLI processes, each seconds on a loaded machine

  it('takes header values from the environment or a file, never from argv; a value on the command line is warned about in the help', async () => {
    const { deps } = await testStack();
    const { id: org } = (await runCli(['org', 'create', '--name', 'CLI Header Secrets'])).json<{ id: string }>();
    const token = 'Bearer rk_env_fedcba9876543210';
    const args = ['webhooks', 'add', '--org', org, '--url', 'http://127.0.0.1:9/hooks', '--header', 'Authorization'];
    const added = await runCli(args, { env: { CRM_HEADER_AUTHORIZATION: token } });
    expect(added.code).toBe(0);
    expect(args.join(' ')).not.toContain('rk_env');
    expect(added.stdout + added.stderr).not.toContain('rk_env');
    const { id } = added.json<{ id: string }>();
    expect((await getEndpoint(deps, org, id))?.headers).toEqual({ authorization: token });

    const dir = await mkdtemp(join(tmpdir(), 'crm-headers-'));
    const file = join(dir, 'headers');
    await writeFile(file, '# the receiver gateway\nX-Api-Key: key_from_file_0123\n\nX-Tenant-Id : acme-42\n', { mode: 0o600 });
    const updated = await runCli(['webhooks', 'update', '--org', org, '--endpoint', id, '--headers-file', file]);
    expect(updated.code).toBe(0);
    expect((await getEndpoint(deps, org, id))?.headers).toEqual({ authorization: token, 'x-api-key': 'key_from_file_0123', 'x-tenant-id': 'acme-42' });

    // A bad line is named by its number, never echoed (it may be a value); nothing is written.
    await writeFile(file, 'X-Ok: fine\njust-a-secret-value\n');
    const bad = await runCli(['webhooks', 'update', '--org', org, '--endpoint', id, '--headers-file', file]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('line 2 is not "Name: value"');
    expect(bad.stderr).not.toContain('just-a-secret-value');
    expect(Object.keys((await getEndpoint(deps, org, id))!.headers ?? {})).not.toContain('x-ok');
    await rm(dir, { recursive: true, force: true });

    const help = await runCli(['webhooks', 'update', '--help'], { json: false });
    expect(help.stdout).toContain('CRM_HEADER_<NAME>');
    expect(help.stdout.replace(/\s+/g, ' ')).toContain('process list and shell history');
    expect(help.stdout).toContain('--headers-file');
  }, 240_000); // six CLI processes
});
