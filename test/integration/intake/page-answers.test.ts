/**
 * What a publishable key (a page) learns from its answers (docs/leads.md "Duplicates",
 * "Idempotency"): nothing of earlier submissions. A repeat is answered as a new lead with an id of
 * its own (never the earlier client's, whose time part dates the first submission), and no page
 * replays an answer stored for a secret key's Idempotency-Key.
 */
import { describe, it, expect } from '@jest/globals';
import { itemsOf, postLead, testStack } from '../support/stack.js';
import { SHOP, givenPublishableKey, postFromPage } from '../support/public-forms.js';
import { createApiKey } from '../../../functions/core/tenancy/api-keys.js';
import { setDuplicatePolicy } from '../../../functions/core/tenancy/organizations.js';
import { randomUUID } from 'node:crypto';

const clientsOf = (orgId: string) => itemsOf('clients', orgId, 'CLIENT#');
/** Until the clock has moved past `ms` (a later id's time part): a condition, not a fixed wait. */
async function after(ms: number): Promise<void> {
  while (Date.now() <= ms) await new Promise((r) => setImmediate(r));
}

describe('a page key learns nothing of earlier submissions', () => {
  it('the same body twice: two 201s of the same shape, each with an id of its own and the time of its own request; one client stored', async () => {
    const page = await givenPublishableKey();
    const lead = { name: 'Pat Page', email: `pat.${randomUUID()}@example.com`, phone: '+1 415 555 0166' };
    const first = await postFromPage(page.key, lead, { origin: SHOP, from: '127.0.0.41' });
    await after(Date.parse(first.json<{ created_at: string }>().created_at));
    const again = await postFromPage(page.key, lead, { origin: SHOP, from: '127.0.0.41' });
    expect([first.status, again.status]).toEqual([201, 201]);
    const [one, two] = [first.json<{ id: string; created_at: string }>(), again.json<{ id: string; created_at: string }>()];
    expect(two.id).not.toBe(one.id);
    expect(Object.keys(two).sort()).toEqual(Object.keys(one).sort());
    expect(Date.parse(two.created_at)).toBeGreaterThan(Date.parse(one.created_at));
    // Time-ordered ids: the answer's id sorts after the first, as a new client's would.
    expect(two.id > one.id).toBe(true);
    expect(again.json()).not.toHaveProperty('duplicate');
    const stored = await clientsOf(page.organizationId);
    expect(stored.map((c) => c.id)).toEqual([one.id]);
  });

  it('an Idempotency-Key a secret key used (its lead merged) is not replayed to a page: the page gets a new lead\'s answer', async () => {
    const { deps } = await testStack();
    const page = await givenPublishableKey();
    const server = await createApiKey(deps, page.organizationId, 'server');
    // Before either key's first request: nothing has cached the organization yet.
    await setDuplicatePolicy(deps, page.organizationId, 'merge');
    const email = `kim.${randomUUID()}@example.com`;
    expect((await postLead(server.key, { name: 'Kim Known', email })).status).toBe(201);
    const idempotencyKey = 'form-submission-8813'; // a guessable, sequential key, as an integrator might use
    const lead = { name: 'Kim Known', email, notes: 'second visit' };
    const merged = await postLead(server.key, lead, { 'Idempotency-Key': idempotencyKey });
    expect(merged.status).toBe(200);
    expect(await merged.json()).toMatchObject({ merged: true });

    const fromPage = await postFromPage(page.key, lead, { origin: SHOP, from: '127.0.0.42', headers: { 'Idempotency-Key': idempotencyKey } });
    expect(fromPage.status).toBe(201);
    expect(fromPage.headers['idempotent-replayed']).toBeUndefined();
    expect(fromPage.json()).not.toHaveProperty('merged');
    // The page's own retry replays the page's own answer, without saying so (another visitor of the page may have sent it).
    const retried = await postFromPage(page.key, lead, { origin: SHOP, from: '127.0.0.42', headers: { 'Idempotency-Key': idempotencyKey } });
    expect(retried.status).toBe(201);
    expect(retried.headers['idempotent-replayed']).toBeUndefined();
    expect(retried.json<{ id: string }>().id).toBe(fromPage.json<{ id: string }>().id);
    // And the secret key's retry still replays its own.
    const serverRetry = await postLead(server.key, lead, { 'Idempotency-Key': idempotencyKey });
    expect(serverRetry.status).toBe(200);
    expect(serverRetry.headers.get('idempotent-replayed')).toBe('true');
  });
});
