/** Each line of a `crm tables import` file is held to the rules the API keeps (lib/cli/import-items.ts). */
import { describe, it, expect } from '@jest/globals';
import { marshall } from '@aws-sdk/util-dynamodb';
import { checkLine, itemBytes, MAX_ITEM_BYTES } from '../../../lib/cli/import-items.js';
import { parseConfig } from '../../../functions/core/platform/config.js';

const deployed = { config: parseConfig({}) };
const local = { config: parseConfig({ local: true }) };
const line = (item: Record<string, unknown>) => JSON.stringify(marshall(item, { removeUndefinedValues: true }));
const endpoint = (extra: Record<string, unknown> = {}) => ({
  pk: 'ORG#org_a', sk: 'ENDPOINT#ep_1', id: 'ep_1', organizationId: 'org_a', url: 'https://hooks.example.com/in', events: ['*'],
  secrets: [{ id: 's', secret: 'whsec_x', createdAt: '2026-01-01T00:00:00Z' }], enabled: true, createdAt: '2026-01-01T00:00:00Z', ...extra,
});
const reasonOf = (checked: ReturnType<typeof checkLine>) => (checked.ok ? 'ok' : checked.reason);

describe('an import line', () => {
  it('whatever a line holds, the answer is a reason, never a TypeError', () => {
    for (const raw of ['null', '[]', '42', '"x"', 'true', '{', '{"pk":null}', '{"pk":{"S":1}}', '{"pk":{"S":"a","N":"1"}}', '{"pk":{"X":"a"}}', '{"pk":{"S":"ORG#a"},"sk":{"L":[null]}}', '{"pk":{"S":"ORG#a"},"sk":{"S":"C"},"n":{"N":"abc"}}']) {
      const checked = checkLine(deployed, 'clients', raw);
      expect({ raw, ok: checked.ok }).toEqual({ raw, ok: false });
    }
    expect(reasonOf(checkLine(deployed, 'clients', 'null'))).toMatch(/not an item.*null/);
  });

  it('needs the keys of its table', () => {
    expect(reasonOf(checkLine(deployed, 'clients', line({ pk: 'ORG#org_a' })))).toMatch(/key sk \(S\) is missing/);
    expect(reasonOf(checkLine(deployed, 'idempotency', line({ pk: 'x' })))).toMatch(/key id \(S\) is missing/);
    expect(reasonOf(checkLine(deployed, 'clients', line({ pk: 'ORG#org_a', sk: 'CLIENT#c', organization_id: 'org_a' })))).toBe('ok');
  });

  it('an organization attribute must name the organization of its key', () => {
    expect(reasonOf(checkLine(deployed, 'clients', line({ pk: 'ORG#org_b', sk: 'CLIENT#c', organization_id: 'org_a' })))).toMatch(/organization_id "org_a" is not the organization of its key \(org_b\)/);
    expect(reasonOf(checkLine(deployed, 'endpoints', line(endpoint({ pk: 'ORG#org_b' }))))).toMatch(/organizationId/);
  });

  it(`is at most DynamoDB's ${MAX_ITEM_BYTES} bytes, counted as DynamoDB counts them`, () => {
    const big = { pk: 'ORG#org_a', sk: 'CLIENT#c', notes: 'n'.repeat(MAX_ITEM_BYTES) };
    expect(reasonOf(checkLine(deployed, 'clients', line(big)))).toMatch(/over DynamoDB's 409600-byte item limit/);
    expect(itemBytes(marshall({ a: 'xy', n: 12345 }))).toBe(1 + 2 + 1 + 4);
    const fits = { pk: 'ORG#org_a', sk: 'CLIENT#c', notes: 'n'.repeat(MAX_ITEM_BYTES - 100) };
    expect(reasonOf(checkLine(deployed, 'clients', line(fits)))).toBe('ok');
  });

  it('an endpoint\'s URL passes the API\'s rules: https, no credentials, no blocked address', () => {
    expect(reasonOf(checkLine(deployed, 'endpoints', line(endpoint())))).toBe('ok');
    expect(reasonOf(checkLine(deployed, 'endpoints', line(endpoint({ url: 'http://169.254.169.254/latest/meta-data/' }))))).toMatch(/must use https/);
    expect(reasonOf(checkLine(local, 'endpoints', line(endpoint({ url: 'http://169.254.169.254/latest/meta-data/' }))))).toMatch(/169\.254\.169\.254.*address/);
    expect(reasonOf(checkLine(deployed, 'endpoints', line(endpoint({ url: 'https://10.0.0.5/x' }))))).toMatch(/address/);
    expect(reasonOf(checkLine(deployed, 'endpoints', line(endpoint({ url: 'https://u:p@hooks.example.com/' }))))).toMatch(/credentials/);
    expect(reasonOf(checkLine(deployed, 'endpoints', line(endpoint({ url: 42 }))))).toMatch(/needs its url/);
    // An old export's endpoint in the organizations table goes to the endpoints table, checked the same way.
    expect(checkLine(deployed, 'organizations', line(endpoint()))).toMatchObject({ ok: true, to: 'endpoints' });
    expect(reasonOf(checkLine(deployed, 'organizations', line(endpoint({ url: 'https://[::ffff:169.254.169.254]/' }))))).toMatch(/address/);
  });

  it('an endpoint\'s headers keep the header rules: no CRLF, no reserved name, no 5,000-character value', () => {
    for (const headers of [{ host: 'evil.example' }, { 'x-a': 'a\r\nInjected: yes' }, { 'x-long': 'v'.repeat(5_000) }, { 'webhook-id': 'forged' }, { 'X-Upper': 'v' }, { 'x-a': 7 }]) {
      expect({ headers, reason: reasonOf(checkLine(deployed, 'endpoints', line(endpoint({ headers })))) }).toEqual({ headers, reason: expect.stringMatching(/header rules|headers must be/) });
    }
    expect(reasonOf(checkLine(deployed, 'endpoints', line(endpoint({ headers: { authorization: 'Bearer t0k3n-abcdef' } }))))).toBe('ok');
  });

  it('an item\'s identity agrees with its key: an organization item, a key lookup item, a client or endpoint id, the slot items', () => {
    expect(reasonOf(checkLine(deployed, 'organizations', line({ pk: 'ORG#org_a', sk: 'ORG', id: 'org_b', name: 'A' })))).toMatch(/id "org_b" is not the organization of its key \(org_a\)/);
    expect(reasonOf(checkLine(deployed, 'organizations', line({ pk: 'ORG#org_a', sk: 'ORG', id: 'org_a', name: 'A' })))).toBe('ok');
    const key = { pk: 'APIKEY#abc', sk: 'APIKEY', hash: 'abc', organizationId: 'org_a', keyId: 'key_1', gsi1pk: 'ORG#org_a#APIKEYS', gsi1sk: 'key_1' };
    expect(reasonOf(checkLine(deployed, 'organizations', line(key)))).toBe('ok');
    expect(reasonOf(checkLine(deployed, 'organizations', line({ ...key, organizationId: 'org_b' })))).toMatch(/organizationId and keyId/);
    expect(reasonOf(checkLine(deployed, 'organizations', line({ ...key, hash: 'def' })))).toMatch(/hash/);
    expect(reasonOf(checkLine(deployed, 'clients', line({ pk: 'ORG#org_a', sk: 'CLIENT#cli_1', id: 'cli_2' })))).toMatch(/not the id in its key/);
    expect(reasonOf(checkLine(deployed, 'endpoints', line(endpoint({ id: 'ep_2' }))))).toMatch(/not the id in its key/);
    expect(reasonOf(checkLine(deployed, 'organizations', line({ pk: 'ORG#org_a', sk: 'SLOTS#ENDPOINTS', count: -1000 })))).toMatch(/slot count/);
    expect(reasonOf(checkLine(deployed, 'organizations', line({ pk: 'ORG#org_a', sk: 'SLOTS#ENDPOINTS', count: 3 })))).toBe('ok');
    expect(reasonOf(checkLine(deployed, 'organizations', line({ pk: 'ORG#org_a', sk: 'SLOTS#KEYS', live: { key_1: null }, version: -1 })))).toMatch(/keys' slot item/);
  });
});

