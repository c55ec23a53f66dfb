/**
 * GET /api/settings: the organization as its admin sees it (plan, billing, wallet), its usage today
 * and this month, the API's base URL and copy-paste cURL examples (with a placeholder, never a key).
 */
import type { Deps } from '../platform/deps.js';
import type { Organization } from '../platform/model.js';
import { revocationSeconds } from '../tenancy/authenticate.js';
import { usageByDay } from '../tenancy/organizations.js';

const MICROS_PER_USD = 1_000_000;
/** Exact: a call costs fractions of a cent (pricePerCallMicros), so no rounding to cents here. */
const usd = (micros: number) => micros / MICROS_PER_USD;

export interface Usage { calls: number; billed: number }

/**
 * Lead calls and billed USD of today and of this month (UTC): closed days' usage items and a
 * prepaid organization's open day on its own item (wallet-store.ts usageByDay).
 */
export async function usageOf(deps: Deps, organizationId: string): Promise<{ today: Usage; month: Usage }> {
  const today = new Date(deps.now()).toISOString().slice(0, 10);
  const month = today.slice(0, 7);
  const days = await usageByDay(deps, organizationId, `${month}-01`, `${month}-31`);
  const t = days.find((d) => d.day === today) ?? { calls: 0, billedMicros: 0 };
  const m = days.reduce((a, d) => ({ calls: a.calls + d.calls, micros: a.micros + d.billedMicros }), { calls: 0, micros: 0 });
  return { today: { calls: t.calls, billed: usd(t.billedMicros) }, month: { calls: m.calls, billed: usd(m.micros) } };
}

/**
 * Copy-paste commands that work as pasted in bash, zsh and sh (dash), on Linux and macOS: the
 * idempotency key comes from /dev/urandom through od and tr (POSIX), not uuidgen (missing on many
 * machines, and an empty key then). The key is read from $CRM_API_KEY, never written here.
 */
export function curlExamples(baseUrl: string): { title: string; command: string }[] {
  const url = `${baseUrl}/api/webhook/leads`;
  return [
    { title: 'Check your key', command: `curl -s ${url} -H "X-API-Key: $CRM_API_KEY"` },
    {
      title: 'Send a lead',
      command: [
        `curl -s ${url} \\`,
        '  -H "Authorization: Bearer $CRM_API_KEY" \\',
        '  -H "Content-Type: application/json" \\',
        `  -H "Idempotency-Key: lead-$(od -An -N8 -tx1 /dev/urandom | tr -d ' \\n')" \\`,
        `  -d '{"name":"Ada Lovelace","email":"ada@example.com","phone":"+1 415 555 0100","service":"Leaky faucet"}'`,
      ].join('\n'),
    },
  ];
}

export async function settingsOverview(deps: Deps, org: Organization, baseUrl: string, userId: string) {
  return {
    organization: {
      id: org.id,
      name: org.name,
      plan: org.plan,
      billing: org.billing === 'prepaid' ? 'prepaid' : 'postpaid',
      walletBalance: org.billing === 'prepaid' ? org.walletMicros / MICROS_PER_USD : null,
      currency: 'USD',
      // docs/leads.md "Duplicates": what a lead matching an existing client does.
      duplicatePolicy: org.duplicatePolicy ?? 'flag',
    },
    usage: await usageOf(deps, org.id),
    baseUrl,
    leadEndpoint: `${baseUrl}/api/webhook/leads`,
    curlExamples: curlExamples(baseUrl),
    /** How long a revoked key may still be accepted: warm containers cache key lookups this long (authenticate.ts). */
    revocationSeconds: revocationSeconds(deps.config),
    user: { id: userId },
  };
}
