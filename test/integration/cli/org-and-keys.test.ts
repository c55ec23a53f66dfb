/** The `crm` CLI against the local stack, as an admin runs it: organizations and key lifecycle. */
import { describe, it, expect } from '@jest/globals';
import { runCli, testStack } from '../support/stack.js';

describe('crm org and crm keys', () => {
  it('creates an organization and a key, printing the key exactly once', async () => {
    const org = await runCli(['org', 'create', '--name', 'CLI Plumbing', '--plan', 'pro', '--billing', 'prepaid', '--wallet', '12.5']);
    expect(org.code).toBe(0);
    const { id, walletMicros } = org.json<{ id: string; walletMicros: number }>();
    expect(walletMicros).toBe(12_500_000);

    const created = await runCli(['keys', 'create', '--org', id, '--name', 'website']);
    expect(created.code).toBe(0);
    const { key, keyId } = created.json<{ key: string; keyId: string }>();
    expect(key).toMatch(/^crm_live_[0-9A-Za-z]{32}$/);

    const list = await runCli(['keys', 'list', '--org', id]);
    expect(list.code).toBe(0);
    expect(list.stdout).not.toContain(key);
    expect(list.json()).toEqual([expect.objectContaining({ keyId, name: 'website', status: 'active' })]);

    const table = await runCli(['keys', 'list', '--org', id], { json: false });
    expect(table.stdout).toContain(keyId);
    expect(table.stdout).not.toContain(key);

    // The printed key works against the API.
    const { api } = await testStack();
    expect((await api('/api/webhook/leads', { headers: { 'X-API-Key': key } })).status).toBe(200);
  });

  it('rotates with --grace 0, which refuses the old key at once', async () => {
    const { id } = (await runCli(['org', 'create', '--name', 'Rotating Co'])).json<{ id: string }>();
    const { key: oldKey, keyId } = (await runCli(['keys', 'create', '--org', id, '--name', 'zapier'])).json<{ key: string; keyId: string }>();
    const rotated = await runCli(['keys', 'rotate', '--org', id, '--key', keyId, '--grace', '0']);
    expect(rotated.code).toBe(0);
    const { key: newKey } = rotated.json<{ key: string }>();
    expect(newKey).not.toBe(oldKey);
    const { api } = await testStack();
    expect((await api('/api/webhook/leads', { headers: { 'X-API-Key': oldKey } })).status).toBe(401);
    expect((await api('/api/webhook/leads', { headers: { 'X-API-Key': newKey } })).status).toBe(200);
  });

  it.each([
    ['an unknown organization', ['keys', 'create', '--org', 'org_doesNotExist', '--name', 'x'], /org_doesNotExist/],
    ['a missing required flag', ['keys', 'create', '--name', 'x'], /--org/],
    ['a bad wallet amount', ['org', 'create', '--name', 'X', '--billing', 'prepaid', '--wallet', 'lots'], /wallet/i],
    ['an unknown key', ['keys', 'revoke', '--org', 'org_doesNotExist', '--key', 'key_nope'], /not found|unknown|org_doesNotExist/i],
  ])('fails clearly on %s, with a non-zero exit and no stack trace', async (_what, args, message) => {
    const result = await runCli(args as string[], { json: false });
    expect(result.code).not.toBe(0);
    expect(result.stderr).toMatch(message as RegExp);
    expect(result.stderr).not.toMatch(/\n\s+at /);
  });
});

describe('crm logs and crm notifications', () => {
  it('lists the request log (no key in it) and the team notification of a new lead', async () => {
    const { id } = (await runCli(['org', 'create', '--name', 'Audited Co'])).json<{ id: string }>();
    const { key, keyId } = (await runCli(['keys', 'create', '--org', id, '--name', 'form'])).json<{ key: string; keyId: string }>();
    const { api } = await testStack();
    const lead = await api('/api/webhook/leads', { method: 'POST', headers: { 'X-API-Key': key, 'Content-Type': 'application/json' }, body: '{"name":"Logged Lead"}' });
    const { id: clientId } = (await lead.json()) as { id: string };
    await api('/api/webhook/leads', { method: 'POST', headers: { 'X-API-Key': key, 'Content-Type': 'application/json' }, body: '{}' });

    const logs = await runCli(['logs', '--org', id]);
    expect(logs.code).toBe(0);
    expect(logs.stdout).not.toContain(key);
    expect(logs.json()).toEqual([
      expect.objectContaining({ keyId, method: 'POST', status: 422, route: '/api/webhook/leads', latencyMs: expect.any(Number) }),
      // The created lead's row is its client (docs/settings.md "Request log"): its request, key and link.
      expect.objectContaining({ keyId, method: 'POST', status: 201, requestId: lead.headers.get('x-request-id'), clientId }),
    ]);

    const notifications = await runCli(['notifications', '--org', id]);
    expect(notifications.json()).toEqual([expect.objectContaining({ type: 'lead.created', title: 'New lead: Logged Lead', clientId: expect.stringMatching(/^cli_/) })]);
  });
});
