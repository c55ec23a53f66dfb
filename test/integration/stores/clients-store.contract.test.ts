/**
 * The clients store's contract (functions/core/intake/clients-store.ts) on DynamoDB Local and the
 * in-memory twin: a lead's put that finds its own item, the merge's outcomes (merged, gone, full by
 * its list or by DynamoDB's 400 KB), the `match` index read newest first and only for the
 * organization, the existence check, a projected read, and the CRM's writes.
 */
import { describe, it, expect } from '@jest/globals';
import { keys } from '../../../functions/core/platform/model.js';
import { newId, newTimeOrderedId } from '../../../functions/core/platform/ids.js';
import { matchHash } from '../../../functions/core/platform/match-key.js';
import { clientsStore, type ClientItem, type MergedSubmission } from '../../../functions/core/intake/clients-store.js';
import { implementations } from './support/implementations.js';

const aClient = (organizationId: string, fields: Record<string, unknown> = {}, at = Date.now()): ClientItem => {
  const id = newTimeOrderedId('cli', at);
  return { ...keys.client(organizationId, id), entity: 'client', id, organization_id: organizationId, status: 'lead', source: 'api', first_name: 'Cleo', submission_count: 1, ...fields };
};
const aMerge = (fill: Record<string, unknown> = {}, maxListed = 20): MergedSubmission => ({
  fill, submission: { at: '2030-01-15T12:00:00.000Z', source: 'api', key_id: 'key_1', request_id: 'req-2', sms_consent: false },
  notification: { id: 'ntf_1', type: 'lead.returning', title: 'Returning lead: Cleo', createdAt: '2030-01-15T12:00:00.000Z' }, at: '2030-01-15T12:00:00.000Z', maxListed,
});

describe.each(implementations)('the clients store on %s', (_name, implementation) => {
  const org = () => newId('org', 12);

  it('puts a new client once: an item already under its id is the lead\'s own (`existed`), left as it was', async () => {
    const impl = await implementation();
    const store = clientsStore(impl.deps);
    const orgId = org();
    const client = aClient(orgId);
    expect(await store.putOnce(client)).toBe('written');
    expect(await store.putOnce({ ...client, first_name: 'Other' })).toBe('existed');
    expect(await impl.read('clients', client)).toEqual(client);
    expect(await store.clientExists(orgId, client.id)).toBe(true);
    expect(await store.clientExists(orgId, 'cli_missing')).toBe(false);
  });

  it('merges a submission: empty fields filled, set ones kept, the list and the count grown, the notification replaced', async () => {
    const impl = await implementation();
    const store = clientsStore(impl.deps);
    const orgId = org();
    const client = aClient(orgId, { email: 'cleo@example.com' });
    await store.putOnce(client);
    expect(await store.mergeOnce(orgId, client.id, aMerge({ first_name: 'Cleopatra', phone: '+14155550100' }))).toBe('merged');
    expect(await impl.read('clients', client)).toEqual({
      ...client, first_name: 'Cleo', phone: '+14155550100', submission_count: 2, updated_at: '2030-01-15T12:00:00.000Z',
      submissions: [aMerge().submission], notification: aMerge().notification,
    });
  });

  it('answers `gone` for a deleted client and `full` for a full list or an item that would pass 400 KB, writing nothing', async () => {
    const impl = await implementation();
    const store = clientsStore(impl.deps);
    const orgId = org();
    expect(await store.mergeOnce(orgId, 'cli_gone', aMerge())).toBe('gone');
    expect(await impl.read('clients', keys.client(orgId, 'cli_gone'))).toBeUndefined();
    const listed = aClient(orgId, { submissions: [aMerge().submission, aMerge().submission] });
    await store.putOnce(listed);
    expect(await store.mergeOnce(orgId, listed.id, aMerge({}, 2))).toBe('full');
    expect(await impl.read('clients', listed)).toEqual(listed);
    const large = aClient(orgId, { padding: 'x'.repeat(409_000) });
    await store.putOnce(large);
    expect(await store.mergeOnce(orgId, large.id, aMerge({ notes: 'y'.repeat(2_000) }))).toBe('full');
  });

  it('finds the newest client under the first match key that has one, only in its organization', async () => {
    const impl = await implementation();
    const store = clientsStore(impl.deps);
    const [orgId, otherOrg] = [org(), org()];
    const byEmail = matchHash(orgId, 'email', 'cleo@example.com');
    const byPhone = matchHash(orgId, 'phone', '+14155550100');
    const older = aClient(orgId, { matchKey: byEmail }, Date.parse('2030-01-01T00:00:00Z'));
    const newer = aClient(orgId, { matchKey: byEmail }, Date.parse('2030-01-02T00:00:00Z'));
    const phoned = aClient(orgId, { matchKey: byPhone });
    for (const c of [older, newer, phoned]) await store.putOnce(c);
    expect(await store.findEarlier(orgId, [{ via: 'email', matchKey: byEmail }, { via: 'phone', matchKey: byPhone }])).toEqual({ id: newer.id, via: 'email' });
    expect(await store.findEarlier(orgId, [{ via: 'email', matchKey: matchHash(orgId, 'email', 'nobody@example.com') }, { via: 'phone', matchKey: byPhone }])).toEqual({ id: phoned.id, via: 'phone' });
    // A key planted under another organization's partition is not that organization's match.
    await store.putOnce(aClient(otherOrg, { matchKey: matchHash(orgId, 'email', 'planted@example.com') }));
    expect(await store.findEarlier(orgId, [{ via: 'email', matchKey: matchHash(orgId, 'email', 'planted@example.com') }])).toBeUndefined();
    expect(await store.findEarlier(orgId, [])).toBeUndefined();
  });

  it('reads a client whole or only the fields asked for', async () => {
    const impl = await implementation();
    const store = clientsStore(impl.deps);
    const orgId = org();
    const client = aClient(orgId, { email: 'cleo@example.com', notes: 'private' });
    await store.putOnce(client);
    expect(await store.getClient(orgId, client.id, { consistent: true })).toEqual(client);
    expect(await store.getClient(orgId, client.id, { fields: ['id', 'first_name', 'absent'] })).toEqual({ id: client.id, first_name: 'Cleo' });
    expect(await store.getClient(orgId, 'cli_missing')).toBeUndefined();
  });

  it('writes the CRM\'s clients: created once, updated (set and removed) while they exist, deleted', async () => {
    const impl = await implementation();
    const store = clientsStore(impl.deps);
    const orgId = org();
    const client = aClient(orgId, { source: 'crm', matchKey: 'k1', email: 'cleo@example.com' });
    expect(await store.createClient(client)).toBe(true);
    expect(await store.createClient(client)).toBe(false);
    expect(await store.updateClient(orgId, client.id, { set: { email: undefined, notes: 'n', updated_at: 'u' }, remove: ['matchKey'] })).toEqual(
      { ...Object.fromEntries(Object.entries(client).filter(([k]) => k !== 'matchKey')), notes: 'n', updated_at: 'u' },
    );
    expect(await store.updateClient(orgId, 'cli_missing', { set: { notes: 'n' } })).toBeUndefined();
    expect(await impl.read('clients', keys.client(orgId, 'cli_missing'))).toBeUndefined();
    expect(await store.deleteClient(orgId, client.id)).toMatchObject({ id: client.id, notes: 'n' });
    expect(await store.deleteClient(orgId, client.id)).toBeUndefined();
  });
});
