/** The catalog: names and aliases, subscriptions, public objects, example payloads, and the generated docs. */
import { describe, it, expect } from '@jest/globals';
import { readFileSync } from 'node:fs';
import { API_VERSION, catalog, schemas, toPublic, webhookTestEvent } from '../../../functions/core/events/catalog.js';
import { aliases, eventTypes, isSubscribed, normalizeEventName, parseSubscription } from '../../../functions/core/delivery/subscriptions.js';
import { DomainError } from '../../../functions/core/platform/errors.js';
import { render } from '../../../scripts/gen-events-doc.js';

/** docs/events.md, verbatim. */
const documentedTable = [
  ['client.created', 'client_created'], ['client.updated', 'client_updated'], ['client.deleted', undefined],
  ['work_order.created', 'work_order_created'], ['work_order.status_changed', undefined], ['work_order.completed', 'work_order_completed'], ['work_order.deleted', undefined],
  ['invoice.created', undefined], ['invoice.sent', 'invoice_sent'], ['invoice.paid', 'invoice_paid'],
  ['booking.received', 'booking_received'],
  ['webhook.test', undefined],
];

function refusal(input: string | string[]): DomainError {
  try {
    parseSubscription(input);
  } catch (error) {
    return error as DomainError;
  }
  throw new Error(`${JSON.stringify(input)} was accepted`);
}

describe('event names', () => {
  it('are exactly the ones docs/events.md lists, with their aliases', () => {
    expect(catalog.map((e) => [e.type, e.alias])).toEqual(documentedTable);
    expect([...eventTypes]).toEqual(documentedTable.map(([type]) => type));
    expect(Object.entries(aliases).sort()).toEqual(documentedTable.filter(([, alias]) => alias).map(([type, alias]) => [alias, type]).sort());
  });

  it('normalize from either form to the dotted name', () => {
    for (const [type, alias] of documentedTable) {
      expect(normalizeEventName(type!)).toBe(type);
      if (alias) expect(normalizeEventName(alias)).toBe(type);
    }
    expect(normalizeEventName('  invoice_paid ')).toBe('invoice.paid');
  });

  it('do not normalize names that are not events, including aliases that do not exist and object built-ins', () => {
    for (const name of ['client.exploded', 'client_deleted', 'work_order_status_changed', 'Client.Created', 'client-created', '', 'constructor', '__proto__', 'toString']) {
      expect(normalizeEventName(name)).toBeUndefined();
    }
  });
});

describe('subscriptions', () => {
  it('`all` (or `*`) subscribes to everything', () => {
    expect(parseSubscription('all')).toEqual(['*']);
    expect(parseSubscription(['all'])).toEqual(['*']);
    expect(parseSubscription('*')).toEqual(['*']);
    expect(parseSubscription(['client.created', 'all'])).toEqual(['*']);
  });

  it('a list in either form, as an array or a comma list, becomes canonical names without duplicates', () => {
    expect(parseSubscription('client_created, invoice.paid,client.created')).toEqual(['client.created', 'invoice.paid']);
    expect(parseSubscription(['work_order_completed', 'booking.received'])).toEqual(['work_order.completed', 'booking.received']);
  });

  it('an unknown name is refused with a 422 that names it and lists the valid names', () => {
    const error = refusal(['client.created', 'client.exploded']);
    expect(error).toBeInstanceOf(DomainError);
    expect(error.status).toBe(422);
    const message = error.toProblem().errors![0].message;
    expect(error.toProblem().errors![0].field).toBe('events');
    expect(message).toContain('unknown event client.exploded');
    expect(message).toContain('valid: all, client.created (client_created), client.updated (client_updated), client.deleted, work_order.created');
    expect(message).toContain('booking.received (booking_received)');
    expect(refusal('nope, nada').toProblem().errors![0].message).toContain('unknown events nope, nada');
  });

  it('an empty subscription is refused', () => {
    expect(refusal('').status).toBe(422);
    expect(refusal([' ', '']).status).toBe(422);
  });

  it('webhook.test reaches every endpoint, other events only the subscribed ones', () => {
    expect(isSubscribed(['invoice.paid'], 'webhook.test')).toBe(true);
    expect(isSubscribed(['invoice.paid'], 'invoice.paid')).toBe(true);
    expect(isSubscribed(['invoice.paid'], 'client.created')).toBe(false);
    expect(isSubscribed(['*'], 'client.created')).toBe(true);
  });
});

describe('public objects', () => {
  it('keep exactly the documented fields, in the documented order', () => {
    const stored = {
      sk: 'CLIENT#cli_1', updated_at: '2026-11-01T10:00:00.000Z', pk: 'ORG#org_1', gsi1pk: 'a', gsi1sk: 'b', entity: 'client', expiresAt: 1_900_000_000,
      internal_score: 7, sms_consent_proof: { source: 'web', ip: '203.0.113.9' }, sms_consent: true, email: null,
      first_name: 'Ada', status: 'lead', organization_id: 'org_1', id: 'cli_1', created_at: '2026-11-01T10:00:00.000Z',
    };
    const object = toPublic('client', stored);
    expect(Object.keys(object)).toEqual(['id', 'organization_id', 'status', 'first_name', 'sms_consent', 'created_at', 'updated_at']);
    expect(schemas.client.strict().parse(object)).toEqual(object);
  });

  it('carry the fields receivers count on even when the item lacks them', () => {
    expect(toPublic('client', { sms_consent: 'yes' }).sms_consent).toBe(false);
    expect(toPublic('invoice', {}).payments).toEqual([]);
  });
});

describe('the catalog examples', () => {
  it.each(catalog.map((e) => [e.type, e] as const))('%s is a valid payload of its type', (type, entry) => {
    expect(entry.example).toMatchObject({ type, api_version: API_VERSION, organization_id: expect.stringMatching(/^org_/) });
    expect(entry.example.id).toMatch(/^evt_[A-Za-z0-9_-]{22}$/);
    expect(new Date(entry.example.timestamp).toISOString()).toBe(entry.example.timestamp);
    expect(entry.description.length).toBeGreaterThan(20);
    expect(schemas[entry.entity].strict().safeParse(entry.example.data.object).error).toBeUndefined();
    expect(entry.example.data.object.organization_id ?? entry.example.organization_id).toBe(entry.example.organization_id);
  });

  it('have distinct ids', () => {
    expect(new Set(catalog.map((e) => e.example.id)).size).toBe(catalog.length);
  });
});

describe('webhook.test', () => {
  it('is a test event of the organization, with a fresh id each time unless one is given', () => {
    const now = new Date('2026-11-01T12:00:00.000Z');
    const a = webhookTestEvent('org_1', now);
    expect(a).toMatchObject({ type: 'webhook.test', api_version: API_VERSION, organization_id: 'org_1', timestamp: '2026-11-01T12:00:00.000Z' });
    expect(a.id).toMatch(/^evt_[A-Za-z0-9]{22}$/);
    expect(schemas.webhook_test.strict().parse(a.data.object)).toBeTruthy();
    expect(webhookTestEvent('org_1', now).id).not.toBe(a.id);
    expect(webhookTestEvent('org_1', now, 'evt_given').id).toBe('evt_given');
  });
});

describe('docs/events.md', () => {
  it('is committed as generated (run `npm run docs:events`)', () => {
    expect(readFileSync(new URL('../../../docs/events.md', import.meta.url), 'utf8')).toBe(render());
  });

  it('documents every event, the envelope, the aliases and the versioning policy', () => {
    const doc = render();
    for (const entry of catalog) expect(doc).toContain(`### ${entry.type}`);
    for (const alias of Object.keys(aliases)) expect(doc).toContain(`\`${alias}\``);
    expect(doc).toContain('## Versioning and deprecation');
    expect(doc).toContain('at least 12 months');
    expect(doc).toContain('sms_consent_proof');
  });
});
