/**
 * The statistics through the settings API against the local stack (docs/settings.md
 * "Statistics"): leads posted through the lead endpoint, a page's script and a no-script form, and
 * their deliveries to a real receiver (one endpoint that answers at once, one that fails each
 * first attempt), are counted as the deliveries list shows them; another organization's endpoint
 * is not found.
 */
import { describe, it, expect, afterAll } from '@jest/globals';
import { eventually, newTenant, postLead, runCli, testStack } from '../support/stack.js';
import { Receiver } from '../support/receiver.js';
import { SHOP, postFromPage, send } from '../support/public-forms.js';
import { createApiKey } from '../../../functions/core/tenancy/api-keys.js';
import { settingsClient } from './support.js';

const receiver = new Receiver();
afterAll(() => receiver.stop());

interface EndpointStats { window: string; totals: { delivered: number; failed: number; retrying: number; success_rate: number | null }; buckets: { start: string; delivered: number; failed: number; retrying: number; p50_ms: number | null; p95_ms: number | null }[] }
interface LeadStats { window: string; totals: { leads: number }; buckets: { start: string; by_source: Record<string, number> }[] }

describe('delivery and lead statistics', () => {
  it('count what the deliveries list shows, per endpoint, and the leads per source', async () => {
    await receiver.start();
    const t = await newTenant();
    const admin = await settingsClient(t.organizationId);
    const add = async (path: string, ...behaviours: Parameters<Receiver['script']>[2][]) => {
      const answer = await admin.post('/api/settings/webhooks', { url: `${receiver.url}${path}`, events: ['client.created'] });
      const { endpoint, secret } = answer.json<{ endpoint: { id: string }; secret: string }>();
      receiver.script(path, secret, ...behaviours);
      return endpoint.id;
    };
    const steady = await add('/steady', { status: 204 });
    // Fails the first attempt of each delivery, then takes the retry.
    const flaky = await add('/flaky', { status: 500 }, { status: 204 }, { status: 500 }, { status: 204 }, { status: 500 }, { status: 204 });

    const { deps } = await testStack();
    const { key: pageKey } = await createApiKey(deps, t.organizationId, 'website', { kind: 'publishable', origins: [SHOP] });
    expect((await postLead(t.key, { first_name: 'Ada', email: 'ada@example.com' })).status).toBe(201);
    expect((await postFromPage(pageKey, { first_name: 'Grace', email: 'grace@example.com' }, { origin: SHOP, from: '127.0.0.31' })).status).toBe(201);
    const form = new URLSearchParams({ api_key: pageKey, first_name: 'Alan', email: 'alan@example.com' }).toString();
    expect((await send('POST', { 'Content-Type': 'application/x-www-form-urlencoded', Origin: SHOP }, form, '127.0.0.32')).status).toBe(201);

    const deliveredTo = async (endpointId: string) =>
      (await admin.get(`/api/settings/deliveries?endpoint=${endpointId}&status=delivered`)).json<{ deliveries: unknown[] }>().deliveries.length;
    await eventually(async () => (await deliveredTo(steady)) === 3 && (await deliveredTo(flaky)) === 3, { what: 'every delivery delivered' });

    const stats = (endpointId: string, window = '24h') => admin.get(`/api/settings/webhooks/${endpointId}/stats?window=${window}`);
    const settled = (want: EndpointStats['totals']) => async (endpointId: string) =>
      eventually(async () => {
        const answer = (await stats(endpointId)).json<EndpointStats>();
        return JSON.stringify(answer.totals) === JSON.stringify(want) ? answer : undefined;
      }, { what: `the statistics of ${endpointId} to reach ${JSON.stringify(want)}` });

    const steadyStats = await settled({ delivered: 3, failed: 0, retrying: 0, success_rate: 1 })(steady);
    expect(steadyStats.window).toBe('24h');
    expect(steadyStats.buckets).toHaveLength(24);
    const now = steadyStats.buckets.at(-1)!;
    expect(now).toMatchObject({ delivered: 3, failed: 0, retrying: 0, p50_ms: expect.any(Number), p95_ms: expect.any(Number) });
    expect(steadyStats.buckets.slice(0, -1).every((b) => b.delivered === 0 && b.p50_ms === null)).toBe(true);

    // Three first attempts failed and were retried; each retry delivered.
    await settled({ delivered: 3, failed: 0, retrying: 3, success_rate: 1 })(flaky);
    const week = (await stats(flaky, '7d')).json<EndpointStats>();
    expect(week.buckets).toHaveLength(7);
    expect(week.buckets.at(-1)).toMatchObject({ delivered: 3, retrying: 3 });

    const leads = await eventually(async () => {
      const answer = (await admin.get('/api/settings/leads/stats')).json<LeadStats>();
      return answer.totals.leads === 3 ? answer : undefined;
    }, { what: 'three leads counted' });
    expect(leads.window).toBe('30d');
    expect(leads.buckets).toHaveLength(30);
    expect(leads.buckets.at(-1)!.by_source).toEqual({ lead_endpoint: 1, page_key: 1, no_script_form: 1 });

    // The CLI answers the same figures, and refuses a bad window with a clear message.
    const cli = await runCli(['webhooks', 'stats', steady, '--org', t.organizationId, '--window', '7d'], { json: true });
    expect(cli.code).toBe(0);
    expect(cli.json<EndpointStats>()).toMatchObject({ window: '7d', totals: { delivered: 3, failed: 0, retrying: 0 } });
    const human = await runCli(['webhooks', 'stats', flaky, '--org', t.organizationId], { json: false });
    expect(human.stdout).toContain('Last 24h: 3 delivered, 0 failed, 3 retrying; success rate 100.0%');
    const wrong = await runCli(['webhooks', 'stats', flaky, '--org', t.organizationId, '--window', '1y'], { json: false });
    expect({ code: wrong.code, stderr: wrong.stderr.trim() }).toEqual({ code: 2, stderr: expect.stringContaining('--window must be 24h or 7d') });

    // Bad windows are refused; another organization's endpoint is not found.
    expect((await stats(steady, '1y')).status).toBe(422);
    const other = await settingsClient((await newTenant()).organizationId);
    expect((await other.get(`/api/settings/webhooks/${steady}/stats`)).status).toBe(404);
  });
});
