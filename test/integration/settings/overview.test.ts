/** GET /api/settings and the request log as an admin sees them after the organization's first lead. */
import { describe, it, expect } from '@jest/globals';
import { newTenant, postLead, testStack } from '../support/stack.js';
import { settingsClient } from './support.js';

interface Overview {
  organization: { billing: string; walletBalance: number | null; plan: string };
  usage: { today: { calls: number; billed: number }; month: { calls: number; billed: number } };
  baseUrl: string; leadEndpoint: string; curlExamples: { title: string; command: string }[];
}

describe('the settings overview', () => {
  it('shows plan, wallet, usage today and this month, the real base URL and cURL examples without a key', async () => {
    const { info, deps } = await testStack();
    const { organizationId, key, keyId } = await newTenant({ plan: 'pro', billing: 'prepaid', walletMicros: 1_000_000 });
    const admin = await settingsClient(organizationId);
    const before = (await admin.get('/api/settings')).json<Overview>();
    expect(before).toMatchObject({ organization: { plan: 'pro', billing: 'prepaid', walletBalance: 1 }, usage: { today: { calls: 0, billed: 0 }, month: { calls: 0, billed: 0 } } });

    expect((await postLead(key, { name: 'Ada Lovelace', email: 'ada@example.com' })).status).toBe(201);
    const price = deps.config.pricePerCallMicros / 1_000_000;
    const after = (await admin.get('/api/settings')).json<Overview>();
    expect(after.usage).toEqual({ today: { calls: 1, billed: price }, month: { calls: 1, billed: price } });
    expect(after.organization.walletBalance).toBeCloseTo(1 - price, 6);
    expect(after.baseUrl).toBe(info.apiUrl);
    expect(after.leadEndpoint).toBe(`${info.apiUrl}/api/webhook/leads`);
    expect(after.curlExamples.map((e) => e.command).join('\n')).toContain(`${info.apiUrl}/api/webhook/leads`);
    expect(after.curlExamples.every((e) => e.command.includes('$CRM_API_KEY') && !e.command.includes(key))).toBe(true);

    // The request log lists the lead endpoint's calls (not the settings API's own).
    const { requests } = (await admin.get('/api/settings/requests')).json<{ requests: { method: string; path: string; status: number; keyId: string | null }[] }>();
    expect(requests).toEqual([expect.objectContaining({ method: 'POST', path: '/api/webhook/leads', status: 201, keyId })]);
  });

  it('shows a postpaid organization with no wallet', async () => {
    const { organizationId } = await newTenant();
    const overview = (await (await settingsClient(organizationId)).get('/api/settings')).json<Overview>();
    expect(overview.organization).toMatchObject({ billing: 'postpaid', walletBalance: null });
  });
});
