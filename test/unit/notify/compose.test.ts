/**
 * Composing notices (functions/core/notify/compose.ts): every kind renders a one-line subject, a
 * plain-text part and HTML; whatever a lead's fields hold cannot add a header line or live markup.
 */
import { describe, it, expect } from '@jest/globals';
import { composeNotice, SUBJECT_MAX } from '../../../functions/core/notify/compose.js';
import type { MessageKind, NoticeMessage } from '../../../functions/core/notify/notice.js';

const links = { settings: 'https://crm.example/settings', unsubscribe: 'https://crm.example/api/notices/unsubscribe?t=abc' };
const message = (kind: MessageKind, data: Record<string, unknown>): NoticeMessage => ({ organizationId: 'org_1', kind, key: `${kind}|x`, at: '2026-11-29T01:00:00.000Z', data });
const to = { email: 'ops@shop.example' };
const hostile = 'Eve\r\nBcc: x@example.com <script>alert(1)</script>';

describe('a lead named to inject a header and a script', () => {
  const notice = composeNotice(message('lead.created', { clientId: 'cli_1', name: hostile, email: 'eve@example.com', notes: 'line one\r\nline two <b>bold</b>', service: 'Leak\nFix', source: 'api' }), to, links);

  it('has a subject of one line, within its bound', () => {
    expect(notice.subject).not.toMatch(/[\r\n]/);
    expect(notice.subject.length).toBeLessThanOrEqual(SUBJECT_MAX);
    expect(notice.subject).toContain('New lead: Eve Bcc: x@example.com');
  });

  it('escapes the name and notes in the HTML: no live markup', () => {
    expect(notice.html).toContain('&lt;script&gt;');
    expect(notice.html).not.toContain('<script');
    expect(notice.html).not.toContain('<b>bold');
    expect(notice.html).toContain('line one<br>line two &lt;b&gt;bold&lt;/b&gt;');
  });

  it('has a plain-text part with every field and the unsubscribe link', () => {
    expect(notice.text).toContain('Name: Eve Bcc: x@example.com <script>alert(1)</script>');
    expect(notice.text).toContain('E-mail: eve@example.com');
    expect(notice.text).toContain('Service: Leak Fix');
    expect(notice.text).toContain('Source: lead endpoint');
    expect(composeNotice(message('lead.created', { clientId: 'cli_2', source: 'page_key' }), to, links).text).toContain('Source: page key');
    expect(composeNotice(message('lead.created', { clientId: 'cli_3', source: 'no_script_form' }), to, links).text).toContain('Source: no-script form');
    expect(notice.text).toContain('  line two <b>bold</b>');
    expect(notice.text).toContain(links.unsubscribe);
    expect(notice.text).not.toMatch(/\r/);
  });
});

it('bounds a long subject and drops every control character from it', () => {
  const notice = composeNotice(message('lead.created', { clientId: 'cli_1', name: `${'x'.repeat(500)}\u2028\u0000\u202e` }), to, links);
  expect([...notice.subject].length).toBeLessThanOrEqual(SUBJECT_MAX);
  // eslint-disable-next-line no-control-regex
  expect(notice.subject).not.toMatch(/[\u0000-\u001f\u2028\u202e]/);
});

it('keeps non-ASCII text as it is (the transport encodes the header)', () => {
  const notice = composeNotice(message('lead.created', { clientId: 'cli_1', name: 'Zoë Ångström 山田' }), to, links);
  expect(notice.subject).toBe('New lead: Zoë Ångström 山田');
  expect(notice.html).toContain('Zoë Ångström 山田');
});

it('writes a link only when it is http(s), escaped', () => {
  const notice = composeNotice(message('endpoint.paused', { endpointId: 'ep_1', url: 'https://hooks.example/x?a=1&b="2"' }), to, { settings: 'javascript:alert(1)', unsubscribe: links.unsubscribe });
  expect(notice.html).not.toContain('javascript:');
  // The endpoint by its origin alone (its path and query may be a capability).
  expect(notice.html).toContain('https://hooks.example<');
  expect(notice.html).not.toContain('x?a=1');
});

describe.each([
  ['lead.returning', { clientId: 'cli_1', name: 'Ada', submission: 2 }, /Returning lead: Ada/, ['Submission: 2']],
  ['lead.summary', { folded: 980, since: '2026-11-29T01:00:00.000Z', until: '2026-11-29T01:10:00.000Z', cap: 20 }, /980 more new leads/, ['More than 20 leads', links.settings]],
  ['endpoint.paused', { endpointId: 'ep_1', url: 'https://hooks.example/a', since: '2026-11-29T01:00:00.000Z', until: '2026-11-29T01:00:30.000Z', lastError: 'HTTP 500 <html>', waiting: 3 }, /paused: https:\/\/hooks.example$/,
    ['Paused since: 2026-11-29 01:00 UTC', 'Last error:', 'HTTP 500 <html>', 'Deliveries waiting: 3', links.settings]],
  ['endpoint.disabled', { endpointId: 'ep_1', url: 'https://hooks.example/a', description: 'Zapier', reason: 'failing without a success since …' }, /disabled: Zapier/, ['Reason: failing', links.settings]],
  ['daily_digest', { day: '2026-11-28', leadsBySource: { lead_endpoint: 3, no_script_form: 1 }, endpoints: [{ endpointId: 'ep_1', url: 'https://hooks.example/a', delivered: 12, failed: 2 }], deadLetters: 2 }, /Daily digest 2026-11-28: 4 leads, 2 failed/,
    ['lead endpoint, Leads: 3', 'no-script form, Leads: 1', 'https://hooks.example (ep_1), Delivered: 12, Failed: 2', '2 failed deliveries wait in the dead-letter queue']],
] as [MessageKind, Record<string, unknown>, RegExp, string[]][])('a %s notice', (kind, data, subject, texts) => {
  const notice = composeNotice(message(kind, data), to, links);
  it('has its subject, and its facts in the text part', () => {
    expect(notice.subject).toMatch(subject);
    for (const t of texts) expect(notice.text).toContain(t);
    expect(notice.html).toContain('<html>');
    expect(notice.html).not.toContain('HTTP 500 <html>');
  });
});

it('renders whatever the data lacks or holds of the wrong type', () => {
  for (const kind of ['lead.created', 'lead.returning', 'lead.summary', 'endpoint.paused', 'endpoint.disabled', 'daily_digest'] as MessageKind[]) {
    const notice = composeNotice(message(kind, { name: 42, endpoints: 'x', leadsBySource: null, folded: 'many' }), to, links);
    expect(notice.subject).toBeTruthy();
    expect(notice.text).toContain(links.unsubscribe);
  }
});
