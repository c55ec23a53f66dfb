/** `crm webhooks add|update|list` with custom headers and a rate limit, against the local stack: set, masked, removed; bad input refused with nothing written. */
import { describe, it, expect } from '@jest/globals';
import { runCli, testStack } from '../support/stack.js';
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
    const malformed = await runCli(['webhooks', 'update', '--org', org, '--endpoint', id, '--header', 'no colon here']);
    expect(malformed.code).toBe(2);
    expect(malformed.stderr).toContain('--header must be "Name: value"');
    const badRate = await runCli(['webhooks', 'update', '--org', org, '--endpoint', id, '--rate-limit', '2.5']);
    expect(badRate.code).toBe(2);
    expect(badRate.stderr).toContain('--rate-limit must be a whole number');
    const tooFast = await runCli(['webhooks', 'update', '--org', org, '--endpoint', id, '--rate-limit', '500']);
    expect(tooFast.code).not.toBe(0);
    expect(tooFast.stderr).toContain('rate_limit_per_second: must be a whole number of deliveries a second from 1 to 100');
    // Nothing of the refused updates was written.
    expect(await getEndpoint(deps, org, id)).toEqual(stored);
  });
});
