/** `crm settings-link`: a working settings link for an organization, signed with the stack's secret. */
import { describe, it, expect } from '@jest/globals';
import { decodeJwt } from 'jose';
import { newTenant, runCli, testStack } from '../support/stack.js';
import { settingsCall } from './support.js';

describe('crm settings-link', () => {
  it('prints a settings page link whose token works on the settings API, as the given user, for the given time', async () => {
    const { organizationId } = await newTenant({ name: 'Link Plumbing' });
    const result = await runCli(['settings-link', '--org', organizationId, '--user', 'ops-7', '--ttl', '10m']);
    expect(result.code).toBe(0);
    const { url, expiresAt } = result.json<{ url: string; expiresAt: string }>();
    const [page, token] = url.split('#token=');
    expect(page).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/settings$/);
    const claims = decodeJwt(token);
    expect(claims).toMatchObject({ org_id: organizationId, sub: 'ops-7', aud: 'crm-settings' });
    expect(claims.exp! - claims.iat!).toBe(600);
    expect(Math.abs(Date.parse(expiresAt) - claims.exp! * 1000)).toBeLessThan(1000);
    const call = await settingsCall(token, 'GET', '/api/settings');
    expect(call.json()).toMatchObject({ organization: { id: organizationId, name: 'Link Plumbing' }, user: { id: 'ops-7' } });

    const human = await runCli(['settings-link', '--org', organizationId], { json: false });
    expect(human.stdout.trim()).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/settings#token=[\w-]+\.[\w-]+\.[\w-]+$/);
    expect(human.stderr).toMatch(/Valid until .* as operator/);
  });

  it.each([
    ['a TTL over 1 h', ['--ttl', '2h'], /at most 1h/],
    ['a TTL that is not a duration', ['--ttl', 'soon'], /15m, 1h or 900s/],
  ])('refuses %s', async (_what, args, message) => {
    const { organizationId } = await newTenant();
    const result = await runCli(['settings-link', '--org', organizationId, ...args], { json: false });
    expect(result.code).not.toBe(0);
    expect(result.stderr).toMatch(message);
  });

  it('npm start wrote a working settings link for the demo organization to the stack file', async () => {
    const { info } = await testStack();
    const [page, token] = info.demo!.settingsUrl!.split('#token=');
    expect(page).toBe(`${info.apiUrl}/settings`);
    const call = await settingsCall(token, 'GET', '/api/settings');
    expect(call.status).toBe(200);
    expect(call.json()).toMatchObject({ organization: { id: info.demo!.organizationId }, user: { id: 'demo-admin' } });
  });

  it('refuses an organization that does not exist', async () => {
    const result = await runCli(['settings-link', '--org', 'org_missing0000'], { json: false });
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/No organization org_missing0000/);
  });
});
