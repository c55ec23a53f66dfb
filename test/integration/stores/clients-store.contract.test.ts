/**
 * The clients store's contract (functions/core/intake/clients-store.ts) on DynamoDB Local and the
 * in-memory twin: a lead's put that finds its own item, the merge's outcomes (merged, gone, full by
 * its list or by DynamoDB's 400 KB), the `match` index read newest first and only for the
 * organization, the existence check, a projected read, the CRM's writes, and the newest-first pages
 * of a named selection (filtered, projected, bounded by pages, saying where they stopped).
 */
import { describe, it, expect } from '@jest/globals';
import { keys } from '../../../functions/core/platform/model.js';
import { newId, newTimeOrderedId } from '../../../functions/core/platform/ids.js';
import { matchHash } from '../../../functions/core/platform/match-key.js';
import { clientsStore, SELECTED_FIELDS, type ClientItem, type ClientSelection, type MergedSubmission } from '../../../functions/core/intake/clients-store.js';
import { implementations } from './support/implementations.js';

const aClient = (organizationId: string, fields: Record<string, unknown> = {}, at = Date.now()): ClientItem => {
  const id = newTimeOrderedId('cli', at);
  return { ...keys.client(organizationId, id), entity: 'client', id, organization_id: organizationId, status: 'lead', source: 'api', first_name: 'Cleo', submission_count: 1, ...fields };
};
const aMerge = (fill: Record<string, unknown> = {}, maxListed = 20): MergedSubmission => ({
  fill, submission: { at: '2030-01-15T12:00:00.000Z', source: 'api', key_id: 'key_1', request_id: 'req-2', sms_consent: false },
  notification: { id: 'ntf_1', type: 'lead.returning', title: 'Returning lead: Cleo', createdAt: '2030-01-15T12:00:00.000Z' }, at: '2030-01-15T12:00:00.000Z', maxListed,
});

/** A client as a selection reads it: only its selected fields it has. */
const selected = (item: Record<string, unknown>, select: ClientSelection) => Object.fromEntries(SELECTED_FIELDS[select].filter((f) => f in item).map((f) => [f, item[f]]));
const aNotification = (n: number) => ({ id: `ntf_${n}`, type: 'lead.created', title: `New lead ${n}`, createdAt: `2030-01-15T12:00:0${n}.000Z` });

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

  describe('pages of clients by a named selection', () => {
    /** Five clients one second apart, oldest first, and one of another organization. */
    async function given() {
      const impl = await implementation();
      const store = clientsStore(impl.deps);
      const [orgId, otherOrg] = [org(), org()];
      const at = (n: number) => Date.parse('2030-01-15T12:00:00.000Z') + n * 1000;
      const lead = (n: number, fields: Record<string, unknown> = {}) => ({ request_id: `req-${n}`, key_id: 'key_1', created_at: new Date(at(n)).toISOString(), email: 'cleo@example.com', ...fields });
      const c = [
        aClient(orgId, lead(1, { notification: aNotification(1) }), at(1)),
        aClient(orgId, { source: 'crm' }, at(2)),
        aClient(orgId, lead(3, { request_status: 303 }), at(3)),
        // A request id but not from the API: not a lead's request.
        aClient(orgId, { source: 'crm', request_id: 'req-4', notification: aNotification(4) }, at(4)),
        aClient(orgId, lead(5, { notification: aNotification(5) }), at(5)),
      ];
      for (const client of [...c, aClient(otherOrg, lead(6, { notification: aNotification(6) }), at(6))]) await store.putOnce(client);
      const all: [string, string] = [keys.client(orgId, '').sk, keys.client(orgId, '~').sk];
      return { store, orgId, c, all };
    }

    it('reads newest first only the selected clients, only their selected fields, the range read to its end', async () => {
      const { store, orgId, c, all } = await given();
      const bounds = { limit: 10, pageSize: 10, maxPages: 5 };
      expect(await store.newestClients(orgId, all, { select: 'leadRequest', ...bounds })).toEqual({ items: [c[4], c[2], c[0]].map((i) => selected(i, 'leadRequest')), complete: true });
      expect(await store.newestClients(orgId, all, { select: 'notification', ...bounds })).toEqual({ items: [c[4], c[3], c[0]].map((i) => selected(i, 'notification')), complete: true });
      expect(selected(c[2], 'leadRequest')).toEqual({ pk: c[2].pk, sk: c[2].sk, id: c[2].id, source: 'api', created_at: c[2].created_at, request_id: 'req-3', key_id: 'key_1', request_status: 303 });
      // Both bounds are included.
      expect((await store.newestClients(orgId, [c[2].sk, c[4].sk], { select: 'leadRequest', ...bounds })).items.map((i) => i.id)).toEqual([c[4].id, c[2].id]);
    });

    it('stops at `limit` selected or `maxPages` pages of `pageSize` evaluated, and says the last sort key it evaluated', async () => {
      const { store, orgId, c, all } = await given();
      // The first page (c5, c4) selects one: the limit.
      expect(await store.newestClients(orgId, all, { select: 'leadRequest', limit: 1, pageSize: 2, maxPages: 5 })).toEqual({ items: [selected(c[4], 'leadRequest')], complete: false, reached: c[3].sk });
      // Two pages (c5, c4; c3, c2): the page bound.
      expect(await store.newestClients(orgId, all, { select: 'leadRequest', limit: 10, pageSize: 2, maxPages: 2 })).toEqual({
        items: [c[4], c[2]].map((i) => selected(i, 'leadRequest')), complete: false, reached: c[1].sk,
      });
      // A full last page is not the range's end (a LastEvaluatedKey even with nothing after it); the next page, empty, is.
      expect(await store.newestClients(orgId, all, { select: 'notification', limit: 10, pageSize: 5, maxPages: 1 })).toEqual({
        items: [c[4], c[3], c[0]].map((i) => selected(i, 'notification')), complete: false, reached: c[0].sk,
      });
      expect(await store.newestClients(orgId, all, { select: 'notification', limit: 10, pageSize: 5, maxPages: 2 })).toMatchObject({ complete: true });
      expect(await store.newestClients(orgId, [keys.client(orgId, '~').sk, keys.client(orgId, '~~').sk], { select: 'notification', limit: 10, pageSize: 5, maxPages: 1 })).toEqual({ items: [], complete: true });
    });

    it('reads every selected client between two sort keys, oldest first', async () => {
      const { store, orgId, c, all } = await given();
      expect(await store.clientsBetween(orgId, all, 'notification')).toEqual([c[0], c[3], c[4]].map((i) => selected(i, 'notification')));
      expect(await store.clientsBetween(orgId, [c[1].sk, c[3].sk], 'leadRequest')).toEqual([selected(c[2], 'leadRequest')]);
    });
  });
});
