/**
 * Duplicate leads over HTTP (docs/leads.md "Duplicates"): a double-submit is one client (answered
 * 200 `duplicate: true`, billed as a call), also when both requests race; a later submission with the
 * same e-mail or phone is flagged `possible_duplicate_of` (default) or merged into the earlier client
 * (policy set through the settings API and the CLI); every submission is kept with its consent.
 * The domain cases without HTTP (a merge target full or too large, a postpaid count taken back) run
 * on the in-memory stores: test/unit/intake/duplicates.test.ts, billing.test.ts.
 */
import { describe, it, expect } from '@jest/globals';
import { itemsOf, newTenant, postLead, runCli, testStack } from '../support/stack.js';
import { settingsClient } from '../settings/support.js';
import { dailyUsage, getOrganization } from '../../../functions/core/tenancy/organizations.js';
import { toPublic } from '../../../functions/core/events/public-objects.js';
import { setDuplicatePolicy } from '../../../functions/core/tenancy/organizations.js';
import { SHOP, givenPublishableKey, postFromPage } from '../support/public-forms.js';

const today = () => new Date().toISOString().slice(0, 10);
const clientsOf = async (orgId: string) => itemsOf('clients', orgId, 'CLIENT#');
async function calls(orgId: string): Promise<number> {
  const { deps } = await testStack();
  return (await dailyUsage(deps, orgId, today())).calls;
}
/** Waits out the org cache of warm containers (keyCacheTtlSeconds is 1 s on the test stack). */
const orgCacheExpiry = () => new Promise((r) => setTimeout(r, 1_100));
/** A new organization whose duplicate policy is `merge`, once lead intake's organization cache sees it. */
async function mergingTenant(options?: Parameters<typeof newTenant>[0]) {
  const { deps } = await testStack();
  const t = await newTenant(options);
  await setDuplicatePolicy(deps, t.organizationId, 'merge');
  await orgCacheExpiry();
  return t;
}

describe('duplicate leads', () => {
  it('answers a double-submit as the same client: 200 duplicate, one client, both calls billed', async () => {
    for (const billing of ['none', 'prepaid'] as const) {
      const t = await newTenant({ billing, walletMicros: 1_000_000 });
      const lead = { name: 'Dana Double', email: 'Dana@Example.com', notes: 'leaky tap' };
      const first = await postLead(t.key, lead);
      expect(first.status).toBe(201);
      const created = await first.json() as { id: string; submission_count: number };
      expect(created.submission_count).toBe(1);
      // Same body in another key order and spelling that normalizes the same.
      const again = await postLead(t.key, { notes: 'leaky tap', email: 'dana@example.com', name: 'Dana Double' });
      expect(again.status).toBe(200);
      expect(await again.json()).toEqual({ id: created.id, organization_id: t.organizationId, duplicate: true });
      expect((await clientsOf(t.organizationId)).length).toBe(1);
      expect(await calls(t.organizationId)).toBe(2);
      if (billing === 'prepaid') expect((await getOrganization((await testStack()).deps, t.organizationId))!.walletMicros).toBe(1_000_000 - 2 * 3000);
    }
  });

  it('creates one client when the two submissions of a double-click race', async () => {
    for (const billing of ['none', 'prepaid'] as const) {
      const t = await newTenant({ billing, walletMicros: 1_000_000 });
      const lead = { name: 'Rita Race', phone: '+1 415 555 0142' };
      const answers = await Promise.all([postLead(t.key, lead), postLead(t.key, lead), postLead(t.key, lead)]);
      expect(answers.map((a) => a.status).sort()).toEqual([200, 200, 201]);
      const bodies = await Promise.all(answers.map((a) => a.json() as Promise<{ id: string }>));
      expect(new Set(bodies.map((b) => b.id)).size).toBe(1);
      expect((await clientsOf(t.organizationId)).length).toBe(1);
      expect(await calls(t.organizationId)).toBe(3);
    }
  });

  it('flags a later submission with the same e-mail (default policy) and keeps its consent', async () => {
    const t = await newTenant();
    const first = await (await postLead(t.key, { name: 'Fay Flag', email: 'fay@example.com' })).json() as { id: string };
    const later = await postLead(t.key, { name: 'Fay Flag', email: 'FAY@example.com', phone: '+1 415 555 0177', sms_consent: true, sms_consent_source: 'quote form, step 2' });
    expect(later.status).toBe(201);
    const second = await later.json() as { id: string; possible_duplicate_of: string; sms_consent: boolean };
    expect(second.id).not.toBe(first.id);
    expect(second.possible_duplicate_of).toBe(first.id);
    expect(second.sms_consent).toBe(true);
    const stored = (await clientsOf(t.organizationId)).find((c) => c.id === second.id)!;
    expect(stored.sms_consent_proof).toMatchObject({ source: 'quote form, step 2', key_id: t.keyId });
    // A new client is its own first submission: nothing listed twice.
    expect(stored).not.toHaveProperty('submissions');
    // The event payload carries the link.
    expect(toPublic('client', stored)).toMatchObject({ possible_duplicate_of: first.id, submission_count: 1 });
    expect(toPublic('client', stored)).not.toHaveProperty('submissions');
  });

  it('flags a later submission with the same phone when neither has an e-mail', async () => {
    const t = await newTenant();
    const first = await (await postLead(t.key, { name: 'Pat Phone', phone: '(415) 555-0190' })).json() as { id: string };
    const later = await (await postLead(t.key, { name: 'Pat P.', phone: '+14155550190' })).json() as { possible_duplicate_of?: string };
    expect(later.possible_duplicate_of).toBe(first.id);
  });

  it('matches clients the CRM writes (CLI: create, then an e-mail change moves the key) by a hashed key, never the raw contact', async () => {
    const t = await newTenant();
    const created = await runCli(['clients', 'create', '--org', t.organizationId, '--name', 'Cora Crm', '--email', 'Cora@Example.com']);
    expect(created.code).toBe(0);
    const crmClient = created.json<{ id: string; matchKey: string }>();
    expect(crmClient.matchKey).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(crmClient.matchKey).not.toContain('cora');
    const flagged = await (await postLead(t.key, { name: 'Cora Crm', email: 'cora@example.com' })).json() as { possible_duplicate_of?: string };
    expect(flagged.possible_duplicate_of).toBe(crmClient.id);
    expect((await runCli(['clients', 'update', '--org', t.organizationId, '--client', crmClient.id, '--email', 'cora.new@example.com'])).code).toBe(0);
    const oldMail = await (await postLead(t.key, { name: 'Cora Old', email: 'cora@example.com' })).json() as { possible_duplicate_of?: string };
    // The lead of the first post now holds the old e-mail's key; the CRM client does not.
    expect(oldMail.possible_duplicate_of).not.toBe(crmClient.id);
    const newMail = await (await postLead(t.key, { name: 'Cora New', email: 'cora.new@example.com' })).json() as { possible_duplicate_of?: string };
    expect(newMail.possible_duplicate_of).toBe(crmClient.id);
  });

  it('merges under the merge policy (CLI): empty fields filled, later consent recorded in its submission, no consent proof overwritten', async () => {
    const t = await newTenant({ billing: 'prepaid', walletMicros: 1_000_000 });
    const set = await runCli(['org', 'set-duplicates', '--org', t.organizationId, '--policy', 'merge']);
    expect(set.code).toBe(0);
    expect(set.json()).toEqual({ id: t.organizationId, duplicatePolicy: 'merge' });
    await orgCacheExpiry();
    const first = await (await postLead(t.key, { name: 'Mo Merge', email: 'mo@example.com', phone: '+1 415 555 0100', service: 'Boiler', sms_consent: true, sms_consent_source: 'first form' })).json() as { id: string };
    const later = await postLead(t.key, { name: 'Maurice Merge', email: 'mo@example.com', phone: '+1 415 555 0123', service: 'Sink', notes: 'kitchen', sms_consent: true, sms_consent_source: 'landing page checkbox' });
    expect(later.status).toBe(200);
    expect(await later.json()).toEqual({ id: first.id, organization_id: t.organizationId, merged: true });
    const [stored, ...others] = await clientsOf(t.organizationId);
    expect(others).toEqual([]);
    // Filled where empty, kept where set; the first consent proof stands.
    expect(stored).toMatchObject({ first_name: 'Mo', last_name: 'Merge', service: 'Boiler', notes: 'kitchen', phone: '+14155550100', sms_consent: true, submission_count: 2 });
    expect(stored.sms_consent_proof).toMatchObject({ source: 'first form', key_id: t.keyId });
    // The later submission keeps what was asked for and its own consent.
    expect(stored.submissions).toEqual([
      expect.objectContaining({ sms_consent: true, sms_consent_source: 'landing page checkbox', service: 'Sink', notes: 'kitchen', key_id: t.keyId }),
    ]);
    // The team is told, as for a new lead.
    expect(stored.notification).toMatchObject({ type: 'lead.returning', title: 'Returning lead: Maurice Merge' });
    // A third submission without consent does not take it back.
    expect((await postLead(t.key, { name: 'Mo', email: 'mo@example.com', sms_consent: false })).status).toBe(200);
    const [after] = await clientsOf(t.organizationId);
    expect(after).toMatchObject({ sms_consent: true, submission_count: 3 });
    expect(await calls(t.organizationId)).toBe(3);
  });

  it('never turns a client\'s "no" into consent by merge: the later consent is recorded in its submission only', async () => {
    const t = await mergingTenant();
    const first = await (await postLead(t.key, { name: 'Nia No', email: 'nia@example.com' })).json() as { id: string };
    const later = await postLead(t.key, { name: 'Nia No', email: 'nia@example.com', phone: '+1 415 555 0199', sms_consent: true, sms_consent_source: 'forged?' });
    expect(later.status).toBe(200);
    const [stored] = await clientsOf(t.organizationId);
    expect(stored).toMatchObject({ id: first.id, sms_consent: false, submission_count: 2 });
    expect(stored).not.toHaveProperty('sms_consent_proof');
    expect(stored.submissions).toEqual([expect.objectContaining({ sms_consent: true, sms_consent_source: 'forged?' })]);
  });

  it('never merges by phone alone: flags, and the earlier client keeps its e-mail and match key', async () => {
    const t = await mergingTenant();
    const victim = await (await postLead(t.key, { name: 'Vic Tim', phone: '+1 415 555 0166' })).json() as { id: string };
    const before = (await clientsOf(t.organizationId))[0];
    const later = await postLead(t.key, { name: 'Eve Il', phone: '(415) 555-0166', email: 'attacker@evil.example', sms_consent: true, sms_consent_source: 'x' });
    expect(later.status).toBe(201);
    expect(await later.json()).toMatchObject({ possible_duplicate_of: victim.id });
    const stored = (await clientsOf(t.organizationId)).find((c) => c.id === victim.id)!;
    expect(stored).toEqual(before);
  });

  it('never merges a page\'s lead nor tells the page of a match: created, flagged internally, answered as a new lead', async () => {
    const { deps } = await testStack();
    const page = await givenPublishableKey();
    await setDuplicatePolicy(deps, page.organizationId, 'merge');
    await orgCacheExpiry();
    const first = await postFromPage(page.key, { name: 'Kim Known', email: 'kim@example.com' }, { origin: SHOP, from: '127.0.0.31' });
    const stranger = await postFromPage(page.key, { name: 'Kim Known', email: 'kim.new@example.com', phone: '+1 415 555 0154' }, { origin: SHOP, from: '127.0.0.32' });
    const known = await postFromPage(page.key, { name: 'Kim Known', email: 'kim@example.com', phone: '+1 415 555 0155' }, { origin: SHOP, from: '127.0.0.33' });
    expect([first.status, stranger.status, known.status]).toEqual([201, 201, 201]);
    // The same shape whether the e-mail was known or not.
    expect(Object.keys(known.json()).sort()).toEqual(Object.keys(stranger.json()).sort());
    const stored = await clientsOf(page.organizationId);
    expect(stored).toHaveLength(3);
    const earlier = stored.find((c) => c.id === first.json().id)!;
    expect(earlier).not.toHaveProperty('phone');
    expect(stored.find((c) => c.id === known.json().id)!.possible_duplicate_of).toBe(earlier.id);
    // A page's double-submit is answered as a new lead too (an id of its own, nothing more said: page-answers.test.ts).
    const again = await postFromPage(page.key, { name: 'Kim Known', email: 'kim@example.com', phone: '+1 415 555 0155' }, { origin: SHOP, from: '127.0.0.33' });
    expect(again.status).toBe(201);
    expect(again.json()).toMatchObject({ email: 'kim@example.com' });
    expect(again.json().id).not.toBe(known.json().id);
    expect(again.json()).not.toHaveProperty('duplicate');
    expect(await clientsOf(page.organizationId)).toHaveLength(3);
  });

  it('sets the policy through the settings API, shows it in the overview and refuses an unknown one', async () => {
    const t = await newTenant();
    const admin = await settingsClient(t.organizationId);
    expect((await admin.get('/api/settings')).json<{ organization: { duplicatePolicy: string } }>().organization.duplicatePolicy).toBe('flag');
    const bad = await admin.patch('/api/settings', { duplicate_policy: 'delete' });
    expect(bad.status).toBe(422);
    const set = await admin.patch('/api/settings', { duplicate_policy: 'merge' });
    expect(set.status).toBe(200);
    expect(set.json<{ organization: { duplicatePolicy: string } }>().organization.duplicatePolicy).toBe('merge');
    await orgCacheExpiry();
    const first = await (await postLead(t.key, { name: 'Sam Settings', email: 'sam@example.com' })).json() as { id: string };
    const later = await postLead(t.key, { name: 'Sam Settings', email: 'sam@example.com', notes: 'second visit' });
    expect(await later.json()).toMatchObject({ id: first.id, merged: true });
  });


  it('bounds what a merged submission stores (User-Agent, consent source, notes) in bytes', async () => {
    const t = await mergingTenant();
    await postLead(t.key, { name: 'Ursula Agent', email: 'ua@example.com' });
    const res = await postLead(t.key, { name: 'Ursula Agent', email: 'ua@example.com', phone: '+1 415 555 0198', notes: 'é'.repeat(4000), sms_consent: true, sms_consent_source: 'ü'.repeat(500) }, { 'User-Agent': 'A'.repeat(9000) });
    expect(res.status).toBe(200);
    const [stored] = await clientsOf(t.organizationId);
    const [submission] = stored.submissions as Record<string, string>[];
    expect(submission.user_agent).toBe('A'.repeat(200));
    expect(Buffer.byteLength(submission.sms_consent_source)).toBeLessThanOrEqual(200);
    expect(submission.notes).toBe('é'.repeat(150));
    expect(Buffer.byteLength(JSON.stringify(submission))).toBeLessThan(1024);
  });

  it('does not tell a page (publishable key) which earlier client a lead may duplicate, but still flags it', async () => {
    const page = await givenPublishableKey();
    const first = await postFromPage(page.key, { name: 'Pia Page', email: 'pia@example.com' }, { origin: SHOP, from: '127.0.0.21' });
    expect(first.status).toBe(201);
    const later = await postFromPage(page.key, { name: 'Pia Page', email: 'pia@example.com', notes: 'again' }, { origin: SHOP, from: '127.0.0.22' });
    expect(later.status).toBe(201);
    expect(later.json()).not.toHaveProperty('possible_duplicate_of');
    const stored = (await clientsOf(page.organizationId)).find((c) => c.id === later.json().id)!;
    expect(stored.possible_duplicate_of).toBe(first.json().id);
  });


});
