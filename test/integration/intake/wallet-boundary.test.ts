/**
 * The prepaid wallet's exact boundary (docs/decisions.md "Lead write cost"): a wallet
 * that covers a call's whole price pays for it, to the last micro-dollar; one that covers only part
 * of it refuses it with 402 and nothing is written (no partial debit, no client, no usage). And
 * leads arriving together on a wallet that covers exactly 7 calls: exactly 7 created.
 */
import { describe, it, expect } from '@jest/globals';
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { itemsOf, newTenant, postLead, testStack, type Tenant } from '../support/stack.js';
import { keys } from '../../../functions/core/platform/model.js';
import { listNotifications } from '../../../functions/core/crm/notifications.js';
import { dailyUsage } from '../../../functions/core/tenancy/organizations.js';
import { wafKeyLimitPerMinute } from '../../../functions/front-door/waf.js';

async function writesOf(tenant: Tenant) {
  const { deps } = await testStack();
  const org = await deps.doc.send(new GetCommand({ TableName: deps.tables.organizations, Key: keys.org(tenant.organizationId), ConsistentRead: true }));
  return {
    clients: (await itemsOf('clients', tenant.organizationId)).length,
    notifications: (await listNotifications(deps, tenant.organizationId, { limit: Infinity })).length,
    usage: await dailyUsage(deps, tenant.organizationId, new Date().toISOString().slice(0, 10)),
    wallet: Number(org.Item?.walletMicros),
  };
}

const prepaid = (walletMicros: number) => newTenant({ billing: 'prepaid', walletMicros, rateLimitPerMinute: wafKeyLimitPerMinute });

describe('the prepaid wallet boundary', () => {
  it('a wallet holding exactly the price pays for one call and is left at 0; the next call is a 402', async () => {
    const { deps } = await testStack();
    const price = deps.config.pricePerCallMicros;
    expect(price).toBeGreaterThan(1);
    const t = await prepaid(price);
    expect((await postLead(t.key, { name: 'Exactly Paid' })).status).toBe(201);
    expect(await writesOf(t)).toEqual({ clients: 1, notifications: 1, usage: { calls: 1, billedMicros: price }, wallet: 0 });
    const refused = await postLead(t.key, { name: 'Nothing Left' });
    expect(refused.status).toBe(402);
    expect(refused.headers.get('content-type')).toBe('application/problem+json');
    expect(await writesOf(t)).toEqual({ clients: 1, notifications: 1, usage: { calls: 1, billedMicros: price }, wallet: 0 });
  });

  // The first paid lead of a day opens the day on the organization item; from then on the
  // debit's condition alone guards the wallet, so each case pays one call first.
  it.each([
    // Other parts of the price, and a new organization's first call: test/unit/intake/billing.test.ts.
    ['one micro-dollar short of the price', (price: number) => price - 1],
  ])('a wallet left with %s refuses the call it cannot pay in full with 402, and debits nothing for it', async (_what, partFor) => {
    const { deps } = await testStack();
    const price = deps.config.pricePerCallMicros;
    const part = partFor(price);
    const t = await prepaid(price + part);
    expect((await postLead(t.key, { name: 'Paid In Full' })).status).toBe(201);
    const before = await writesOf(t);
    expect(before).toEqual({ clients: 1, notifications: 1, usage: { calls: 1, billedMicros: price }, wallet: part });
    const refused = await postLead(t.key, { name: 'Partly Covered' });
    expect(refused.status).toBe(402);
    expect(await writesOf(t)).toEqual(before);
  });


  it('20 leads arriving together on a wallet covering exactly 7: exactly 7 created, 13 refused with 402, the wallet at 0', async () => {
    const { deps } = await testStack();
    const price = deps.config.pricePerCallMicros;
    const t = await prepaid(7 * price);
    const answers = await Promise.all(Array.from({ length: 20 }, (_, i) => postLead(t.key, { name: `Together ${i}` })));
    const statuses = answers.map((a) => a.status);
    expect(statuses.filter((s) => s === 201)).toHaveLength(7);
    expect(statuses.filter((s) => s === 402)).toHaveLength(13);
    expect(await writesOf(t)).toEqual({ clients: 7, notifications: 7, usage: { calls: 7, billedMicros: 7 * price }, wallet: 0 });
  });
});
