/**
 * Signing out every settings link (docs/settings.md "Signing out every link"): from the page's API
 * and from the CLI, every link issued until then gets 401 on its very next request, whoever holds
 * it; a link issued afterwards works; the audit log records who did it.
 */
import { describe, it, expect } from '@jest/globals';
import { eventually, newTenant, runCli } from '../support/stack.js';
import { craftedToken, settingsCall, settingsClient } from './support.js';

type Entries = { entries: { action: string; userId: string }[] };

describe('signing out every settings link', () => {
  it('from the page: every earlier link, the caller\'s included, is refused at once; a new link works; the audit log names who', async () => {
    const { organizationId } = await newTenant({ name: 'Sign out' });
    const dana = await settingsClient(organizationId, 'dana');
    const erin = await settingsClient(organizationId, 'erin'); // an admin who left, or a leaked link
    expect((await erin.get('/api/settings')).status).toBe(200);

    const revoked = await dana.post('/api/settings/links/revoke');
    expect(revoked.status).toBe(200);
    const { revoked_at: revokedAt } = revoked.json<{ revoked_at: string }>();
    for (const client of [dana, erin]) {
      const refused = await client.get('/api/settings/keys');
      expect(refused.status).toBe(401);
      expect(refused.json<{ detail: string }>().detail).toMatch(/signed out/);
    }
    // A token issued later (its iat after the sign-out) works; one issued in the same second as it does not.
    const sameSecond = await craftedToken({ org_id: organizationId, sub: 'dana', iat: Math.floor(Date.parse(revokedAt) / 1000), exp: Math.floor(Date.parse(revokedAt) / 1000) + 600 });
    expect((await settingsCall(sameSecond, 'GET', '/api/settings')).status).toBe(401);
    const fresh = await eventually(async () => {
      const client = await settingsClient(organizationId, 'dana');
      return (await client.get('/api/settings')).status === 200 && client;
    }, { timeoutMs: 10_000, what: 'a link issued after the sign-out to work' });
    const audit = (await fresh.get('/api/settings/audit')).json<Entries>().entries;
    expect(audit.find((e) => e.action === 'settings.links_revoked')).toMatchObject({ userId: 'dana' });
    // Another organization's links are untouched.
    const other = await settingsClient((await newTenant({ name: 'Not signed out' })).organizationId, 'fay');
    expect((await other.get('/api/settings')).status).toBe(200);
  });

  it('from the CLI: crm settings-link revoke --org signs out every earlier link; an unknown organization is an error', async () => {
    const { organizationId } = await newTenant({ name: 'Sign out by CLI' });
    const admin = await settingsClient(organizationId, 'gus');
    expect((await admin.get('/api/settings')).status).toBe(200);
    const cli = await runCli(['settings-link', 'revoke', '--org', organizationId]);
    expect(cli.code).toBe(0);
    expect(cli.json()).toMatchObject({ organizationId, revokedAt: expect.any(String) });
    expect((await admin.get('/api/settings')).status).toBe(401);
    const fresh = await eventually(async () => {
      const client = await settingsClient(organizationId, 'gus');
      return (await client.get('/api/settings')).status === 200 && client;
    }, { timeoutMs: 10_000, what: 'a new link' });
    expect((await fresh.get('/api/settings/audit')).json<Entries>().entries.find((e) => e.action === 'settings.links_revoked')).toMatchObject({ userId: 'operator' });

    const unknown = await runCli(['settings-link', 'revoke', '--org', 'org_doesnotexist'], { json: false });
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toMatch(/No organization org_doesnotexist/);
  });
});
