/**
 * Who may use the settings API (docs/settings.md#security-model): a valid session token of the organization,
 * nothing else. Expired, tampered, wrong-audience, wrong-issuer, over-long or missing tokens and API
 * keys get 401 problem+json; a session token gets 401 on the lead endpoint.
 */
import { describe, it, expect } from '@jest/globals';
import { newTenant, testStack } from '../support/stack.js';
import { craftedToken, settingsCall } from './support.js';
import { sessionToken } from '../support/settings-links.js';

const expectProblem401 = (call: { status: number; headers: Headers; json: () => Record<string, unknown> }, detail: RegExp) => {
  expect(call.status).toBe(401);
  expect(call.headers.get('content-type')).toBe('application/problem+json');
  expect(call.json()).toMatchObject({ status: 401, title: 'Unauthorized', detail: expect.stringMatching(detail) });
};

describe('session tokens on the settings API', () => {
  it('a valid token of the organization reads its settings, as its user', async () => {
    const { organizationId } = await newTenant({ name: 'Token Plumbing' });
    const call = await settingsCall(await sessionToken(organizationId, 'user-42'), 'GET', '/api/settings');
    expect(call.status).toBe(200);
    expect(call.json()).toMatchObject({ organization: { id: organizationId, name: 'Token Plumbing' }, user: { id: 'user-42' } });
  });

  it.each([
    ['no token', async () => undefined, /session token is required/],
    ['an expired token', async (org: string) => craftedToken({ org_id: org, iat: Math.floor(Date.now() / 1000) - 1200, exp: Math.floor(Date.now() / 1000) - 60 }), /expired/],
    ['a token for another audience', async (org: string) => craftedToken({ org_id: org, aud: 'crm-api' }), /not valid/],
    ['a token from another issuer', async (org: string) => craftedToken({ org_id: org, iss: 'someone-else' }), /not valid/],
    ['a token signed with another secret', async (org: string) => craftedToken({ org_id: org }, 'x'.repeat(64)), /not valid/],
    ['a token minted for longer than 1 h', async (org: string) => craftedToken({ org_id: org, exp: Math.floor(Date.now() / 1000) + 7200 }), /not valid/],
    ['a token without an organization', async () => craftedToken({}), /not valid/],
    ['a tampered token (organization changed, signature kept)', async (org: string) => {
      const [header, , signature] = (await sessionToken(org)).split('.');
      const payload = Buffer.from(JSON.stringify({ org_id: 'org_other', sub: 'admin-1', aud: 'crm-settings', iss: 'crm', iat: Math.floor(Date.now() / 1000), exp: Math.floor(Date.now() / 1000) + 600 })).toString('base64url');
      return `${header}.${payload}.${signature}`;
    }, /not valid/],
    ['an unsigned token (alg none)', async (org: string) => {
      const enc = (o: object) => Buffer.from(JSON.stringify(o)).toString('base64url');
      return `${enc({ alg: 'none', typ: 'JWT' })}.${enc({ org_id: org, sub: 'a', aud: 'crm-settings', iss: 'crm', iat: Math.floor(Date.now() / 1000), exp: Math.floor(Date.now() / 1000) + 600 })}.`;
    }, /not valid/],
  ])('%s → 401 problem+json', async (_what, make, detail) => {
    const { organizationId } = await newTenant();
    expectProblem401(await settingsCall(await make(organizationId), 'GET', '/api/settings/keys'), detail);
  });

  it('an API key never authorizes the settings API, in either header', async () => {
    const { key } = await newTenant();
    expectProblem401(await settingsCall(undefined, 'GET', '/api/settings/keys', undefined, { 'X-API-Key': key }), /API keys do not authorize/);
    expectProblem401(await settingsCall(key, 'GET', '/api/settings/keys'), /not valid/);
    expectProblem401(await settingsCall(key, 'POST', '/api/settings/keys', { name: 'sneaky' }), /not valid/);
  });

  it('a session token never authorizes the lead endpoint', async () => {
    const { organizationId } = await newTenant();
    const token = await sessionToken(organizationId);
    const { api } = await testStack();
    for (const headers of [{ Authorization: `Bearer ${token}` }, { 'X-API-Key': token }] as Record<string, string>[]) {
      const response = await api('/api/webhook/leads', { headers });
      expect(response.status).toBe(401);
      expect(response.headers.get('content-type')).toBe('application/problem+json');
    }
  });

  it('a token of an organization that does not exist gets 401', async () => {
    expectProblem401(await settingsCall(await sessionToken('org_doesNotExist1'), 'GET', '/api/settings'), /not valid/);
  });
});
