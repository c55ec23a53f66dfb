/**
 * Duplicate leads over HTTP (docs/leads.md "Duplicates"): a double-submit is one client (answered
 * 200 `duplicate: true`, billed as a call), also when both requests race; a later submission with the
 * same e-mail or phone is flagged `possible_duplicate_of` (default) or merged into the earlier client
 * (policy set through the settings API and the CLI); every submission is kept with its consent.
 */
import { describe, it, expect } from '@jest/globals';
import { itemsOf, newTenant, ownDeps, postLead, runCli, testStack } from '../support/stack.js';
import { createLead } from '../../../functions/core/intake/create-lead.js';
import { parseLead } from '../../../functions/core/intake/lead-schema.js';
import { requireOrganization } from '../../../functions/core/tenancy/organizations.js';
import { settingsClient } from '../settings/support.js';
import { dailyUsage, getOrganization } from '../../../functions/core/tenancy/organizations.js';
import { toPublic } from '../../../functions/core/events/public-objects.js';
import { setDuplicatePolicy } from '../../../functions/core/tenancy/organizations.js';
import { MAX_LISTED_SUBMISSIONS } from '../../../functions/core/intake/create-lead.js';
import { keys } from '../../../functions/core/platform/model.js';
import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { SHOP, givenPublishableKey, postFromPage } from '../support/public-forms.js';

const today = () => new Date().toISOString().slice(0, 10);
const clientsOf = async (orgId: string) => itemsOf('clients', orgId, 'CLIENT#');
async function calls(orgId: string): Promise<number> {
  const { deps } = await testStack();
  return (await dailyUsage(deps, orgId, today())).calls;
}
/** Waits out the org cache of warm containers (keyCacheTtlSeconds is 1 s on the test stack). */
const orgCacheExpiry = () => new Promise((r) => setTimeout(r, 1_100));

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
    expect(stored.submissions).toEqual([expect.objectContaining({ source: 'api', key_id: t.keyId, sms_consent: true, sms_consent_source: 'quote form, step 2' })]);
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

  it('merges under the merge policy (CLI): empty fields filled, later consent recorded, every submission kept, one client', async () => {
    const t = await newTenant({ billing: 'prepaid', walletMicros: 1_000_000 });
    const set = await runCli(['org', 'set-duplicates', '--org', t.organizationId, '--policy', 'merge']);
    expect(set.code).toBe(0);
    expect(set.json()).toEqual({ id: t.organizationId, duplicatePolicy: 'merge' });
    await orgCacheExpiry();
    const first = await (await postLead(t.key, { name: 'Mo Merge', email: 'mo@example.com', service: 'Boiler' })).json() as { id: string };
    const later = await postLead(t.key, { name: 'Maurice Merge', email: 'mo@example.com', phone: '+1 415 555 0123', service: 'Sink', sms_consent: true, sms_consent_source: 'landing page checkbox' });
    expect(later.status).toBe(200);
    expect(await later.json()).toEqual({ id: first.id, organization_id: t.organizationId, merged: true });
    const [stored, ...others] = await clientsOf(t.organizationId);
    expect(others).toEqual([]);
    // Filled where empty, kept where set.
    expect(stored).toMatchObject({ first_name: 'Mo', last_name: 'Merge', service: 'Boiler', phone: '+14155550123', sms_consent: true, submission_count: 2 });
    expect(stored.sms_consent_proof).toMatchObject({ source: 'landing page checkbox', key_id: t.keyId });
    expect(stored.submissions).toEqual([
      expect.objectContaining({ sms_consent: false, key_id: t.keyId }),
      expect.objectContaining({ sms_consent: true, sms_consent_source: 'landing page checkbox', key_id: t.keyId }),
    ]);
    // A third submission without consent does not take it back.
    expect((await postLead(t.key, { name: 'Mo', email: 'mo@example.com', sms_consent: false })).status).toBe(200);
    const [after] = await clientsOf(t.organizationId);
    expect(after).toMatchObject({ sms_consent: true, submission_count: 3 });
    expect(await calls(t.organizationId)).toBe(3);
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

  it('keeps merging into a client whose submission list is full: counted, not listed, consent still recorded', async () => {
    const { deps } = await testStack();
    for (const billing of ['none', 'prepaid'] as const) {
      const t = await newTenant({ billing, walletMicros: 1_000_000 });
      await setDuplicatePolicy(deps, t.organizationId, 'merge');
      await orgCacheExpiry();
      const first = await (await postLead(t.key, { name: 'Full List', email: 'full@example.com' })).json() as { id: string };
      const listed = Array.from({ length: MAX_LISTED_SUBMISSIONS }, (_, i) => ({ at: `2026-01-01T00:00:${String(i % 60).padStart(2, '0')}.000Z`, source: 'api', key_id: t.keyId, request_id: `r${i}`, sms_consent: false }));
      await deps.doc.send(new UpdateCommand({ TableName: deps.tables.clients, Key: keys.client(t.organizationId, first.id), UpdateExpression: 'SET submissions = :s, submission_count = :n', ExpressionAttributeValues: { ':s': listed, ':n': MAX_LISTED_SUBMISSIONS } }));
      const later = await postLead(t.key, { name: 'Full List', email: 'full@example.com', phone: '+1 415 555 0111', sms_consent: true, sms_consent_source: 'form' });
      expect(later.status).toBe(200);
      const [stored, ...others] = await clientsOf(t.organizationId);
      expect(others).toEqual([]);
      expect(stored).toMatchObject({ submission_count: MAX_LISTED_SUBMISSIONS + 1, sms_consent: true, phone: '+14155550111' });
      expect(stored.submissions).toHaveLength(MAX_LISTED_SUBMISSIONS);
      expect(await calls(t.organizationId)).toBe(2);
    }
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

  it('takes back the usage count of a postpaid lead whose client write failed, and its retry creates the client', async () => {
    const t = await newTenant();
    const deps = await ownDeps();
    const auth = { organization: await requireOrganization(deps, t.organizationId), key: { keyId: t.keyId, name: 'test' } };
    const lead = parseLead({ name: 'Frida Fail', email: 'frida@example.com' });
    deps.doc.middlewareStack.add((next, context) => async (args) => {
      if (context.commandName === 'PutItemCommand' && (args.input as { TableName?: string }).TableName === deps.tables.clients) throw Object.assign(new Error('injected'), { name: 'InternalServerError' });
      return next(args);
    }, { step: 'initialize', name: 'failClientPut' });
    await expect(createLead(deps, auth, lead, { requestId: 'r1' })).rejects.toThrow('injected');
    expect(await calls(t.organizationId)).toBe(0);
    expect(await clientsOf(t.organizationId)).toEqual([]);
    // The client's retry within 10 minutes meets the guard of a client that was never written: created, not a duplicate.
    const retry = await postLead(t.key, { name: 'Frida Fail', email: 'frida@example.com' });
    expect(retry.status).toBe(201);
    expect((await clientsOf(t.organizationId)).length).toBe(1);
    expect(await calls(t.organizationId)).toBe(1);
  });
});
