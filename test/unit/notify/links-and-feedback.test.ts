/**
 * The pure parts of telling people (docs/notifications.md): the signed links (scoped to one
 * organization, address and purpose; a confirm link to its addition and 7 days), who gets which
 * kind, which addresses a recipient list accepts, and which SES events suppress an address.
 */
import { describe, it, expect } from '@jest/globals';
import { signLink, verifyLink, CONFIRM_LINK_DAYS } from '../../../functions/core/notify/notice-links.js';
import { normalizeAddress, picks, setRecipients, confirmRecipient, listRecipients, suppressRecipient, unsubscribeRecipient, CONFIRMATION_EVERY_DAYS, MAX_CONFIRMATIONS_PER_DAY, MAX_RECIPIENTS } from '../../../functions/core/notify/recipients.js';
import { suppressionsOf } from '../../../functions/core/notify/mail-feedback.js';
import { memoryStores } from '../../support/stores/memory-deps.js';
import type { Deps } from '../../../functions/core/platform/deps.js';
import type { APIGatewayProxyEvent } from 'aws-lambda';
import { serveNoticePage } from '../../../functions/settings-api/notice-pages.js';

const secret = 'test-secret';
const now = Date.parse('2030-01-15T12:00:00.000Z');

describe('notice links', () => {
  it('verify for the organization, address and purpose signed, and for nothing else', () => {
    const token = signLink(secret, { organizationId: 'org_a', email: 'ops@shop.example', purpose: 'unsubscribe' });
    expect(verifyLink(secret, token, 'unsubscribe', now)).toEqual({ organizationId: 'org_a', email: 'ops@shop.example', purpose: 'unsubscribe' });
    expect(verifyLink(secret, token, 'confirm', now)).toBeUndefined();
    expect(verifyLink('another-secret', token, 'unsubscribe', now)).toBeUndefined();
    const [v, payload, mac] = token.split('.');
    const other = Buffer.from(JSON.stringify({ o: 'org_a', e: 'boss@shop.example', p: 'unsubscribe' })).toString('base64url');
    expect(verifyLink(secret, `${v}.${other}.${mac}`, 'unsubscribe', now)).toBeUndefined();
    expect(verifyLink(secret, `${v}.${payload}.${mac.slice(0, -2)}`, 'unsubscribe', now)).toBeUndefined();
    expect(verifyLink(secret, 'garbage', 'unsubscribe', now)).toBeUndefined();
  });

  it('confirm only within 7 days of their addition', () => {
    const token = signLink(secret, { organizationId: 'org_a', email: 'ops@shop.example', purpose: 'confirm', addedAt: now });
    expect(verifyLink(secret, token, 'confirm', now + 86_400_000)?.addedAt).toBe(now);
    expect(verifyLink(secret, token, 'confirm', now + CONFIRM_LINK_DAYS * 86_400_000 + 1)).toBeUndefined();
  });
});

describe('recipients', () => {
  it('take one plain address, trimmed and lower-cased; nothing that could become a second header or address', () => {
    expect(normalizeAddress(' Ops@Shop.Example ')).toBe('ops@shop.example');
    for (const bad of ['ops@shop.example\r\nBcc: x@example.com', 'Ops <ops@shop.example>', 'a@b.example, c@d.example', 'no-at-sign', 'ops@localhost']) expect(normalizeAddress(bad)).toBeUndefined();
  });

  it('get a returning lead and a leads summary with lead.created, and nothing they did not pick', () => {
    expect(picks(['lead.created'], 'lead.returning')).toBe(true);
    expect(picks(['lead.created'], 'lead.summary')).toBe(true);
    expect(picks(['daily_digest'], 'lead.created')).toBe(false);
    expect(picks(['endpoint.paused'], 'endpoint.disabled')).toBe(false);
  });

  it('are confirmed only by the link of their current addition: one from before a removal and a new addition a week later confirms nothing', async () => {
    const memory = memoryStores();
    const queued: unknown[] = [];
    const deps = { ...memory.deps, sqs: { send: async (command: { input: unknown }) => void queued.push(command.input) } } as unknown as Deps;
    await setRecipients(deps, 'org_a', [{ email: 'ops@shop.example', notices: ['lead.created'] }]);
    const first = signLink(secret, { organizationId: 'org_a', email: 'ops@shop.example', purpose: 'confirm', addedAt: memory.clock.now() });
    await setRecipients(deps, 'org_a', []);
    memory.clock.advance(CONFIRMATION_EVERY_DAYS * 86_400_000 + 1000);
    await setRecipients(deps, 'org_a', [{ email: 'ops@shop.example', notices: ['lead.created'] }]);
    expect(queued).toHaveLength(2);
    expect(await confirmRecipient(deps, secret, first)).toMatchObject({ done: false });
    const second = signLink(secret, { organizationId: 'org_a', email: 'ops@shop.example', purpose: 'confirm', addedAt: memory.clock.now() });
    expect(await confirmRecipient(deps, secret, second)).toEqual({ done: true, organizationId: 'org_a', email: 'ops@shop.example' });
  });

  it(`get one confirmation e-mail per ${CONFIRMATION_EVERY_DAYS} days: removed and added again meanwhile, the address is pending for its first addition, whose link still confirms`, async () => {
    const memory = memoryStores();
    const queued: unknown[] = [];
    const deps = { ...memory.deps, sqs: { send: async (command: { input: unknown }) => void queued.push(command.input) } } as unknown as Deps;
    const addedAt = memory.clock.now();
    for (let i = 0; i < 5; i += 1) {
      await setRecipients(deps, 'org_a', [{ email: 'ops@shop.example', notices: ['lead.created'] }]);
      await setRecipients(deps, 'org_a', []);
      memory.clock.advance(86_400_000);
    }
    const { recipients } = await setRecipients(deps, 'org_a', [{ email: 'ops@shop.example', notices: ['lead.created'] }]);
    expect(queued).toHaveLength(1);
    expect(recipients).toEqual([expect.objectContaining({ email: 'ops@shop.example', status: 'pending', addedAt })]);
    const link = signLink(secret, { organizationId: 'org_a', email: 'ops@shop.example', purpose: 'confirm', addedAt });
    expect(await confirmRecipient(deps, secret, link)).toEqual({ done: true, organizationId: 'org_a', email: 'ops@shop.example' });
  });

  it('that unsubscribed, bounced or complained stay suppressed: removed, they cannot be added again (422 naming the address)', async () => {
    const memory = memoryStores();
    const deps = { ...memory.deps, sqs: { send: async () => ({}) } } as unknown as Deps;
    await setRecipients(deps, 'org_a', [{ email: 'ops@shop.example', notices: ['lead.created'] }, { email: 'boss@shop.example', notices: [] }]);
    // "I did not ask for this" in the confirmation e-mail: its unsubscribe link.
    expect(await unsubscribeRecipient(deps, secret, signLink(secret, { organizationId: 'org_a', email: 'ops@shop.example', purpose: 'unsubscribe' }))).toMatchObject({ done: true });
    await suppressRecipient(deps, 'org_a', 'gone@shop.example', 'bounced'); // never listed: remembered all the same
    await setRecipients(deps, 'org_a', [{ email: 'boss@shop.example', notices: [] }]);
    for (const email of ['ops@shop.example', 'gone@shop.example']) {
      const refused = setRecipients(deps, 'org_a', [{ email: 'boss@shop.example', notices: [] }, { email, notices: ['lead.created'] }]);
      await expect(refused).rejects.toMatchObject({ status: 422 });
      await expect(refused.catch((e: Error & { errors?: unknown }) => JSON.stringify(e))).resolves.toContain(email);
    }
    expect((await listRecipients(deps, 'org_a')).map((r) => r.email)).toEqual(['boss@shop.example']);
    // Another organization may add it: the record is the organization's.
    await expect(setRecipients(deps, 'org_b', [{ email: 'ops@shop.example', notices: [] }])).resolves.toBeDefined();
  });

  it('that the mail server refused (rejected) may be added again once removed: pending, with a fresh confirmation even within the week, then one a week as usual', async () => {
    const memory = memoryStores();
    const queued: unknown[] = [];
    const deps = { ...memory.deps, sqs: { send: async (command: { input: unknown }) => void queued.push(command.input) } } as unknown as Deps;
    await setRecipients(deps, 'org_a', [{ email: 'ops@shop.example', notices: ['lead.created'] }]);
    memory.clock.advance(3_600_000);
    await suppressRecipient(deps, 'org_a', 'ops@shop.example', 'rejected');
    memory.clock.advance(3_600_000);
    await setRecipients(deps, 'org_a', []);
    const readdedAt = memory.clock.now();
    expect((await setRecipients(deps, 'org_a', [{ email: 'ops@shop.example', notices: ['lead.created'] }])).recipients)
      .toEqual([expect.objectContaining({ email: 'ops@shop.example', status: 'pending', addedAt: readdedAt })]);
    expect(queued).toHaveLength(2);
    // Removed and added again the next day: pending for that addition, no third e-mail.
    memory.clock.advance(86_400_000);
    await setRecipients(deps, 'org_a', []);
    expect((await setRecipients(deps, 'org_a', [{ email: 'ops@shop.example', notices: ['lead.created'] }])).recipients[0]).toMatchObject({ addedAt: readdedAt });
    expect(queued).toHaveLength(2);
  });
});

describe(`at most ${MAX_RECIPIENTS} recipients`, () => {
  it('under two concurrent changes read from the same list: one is written, the other is a 409', async () => {
    const memory = memoryStores();
    const deps = { ...memory.deps, sqs: { send: async () => ({}) } } as unknown as Deps;
    const six = (tag: string) => Array.from({ length: 6 }, (_, i) => ({ email: `${tag}${i}@shop.example`, notices: ['lead.created'] }));
    const results = await Promise.allSettled([setRecipients(deps, 'org_a', six('a')), setRecipients(deps, 'org_a', six('b'))]);
    expect(results.map((r) => r.status).sort()).toEqual(['fulfilled', 'rejected']);
    expect(results.find((r) => r.status === 'rejected')).toMatchObject({ reason: { status: 409 } });
    expect((await listRecipients(deps, 'org_a')).length).toBe(6);
    // The next change, read from the list as it is, goes.
    await setRecipients(deps, 'org_a', [...six('a').slice(0, 4), ...six('c')]);
    expect((await listRecipients(deps, 'org_a')).length).toBe(10);
  });
});

describe('confirmation e-mails', () => {
  it(`are at most ${MAX_CONFIRMATIONS_PER_DAY} an organization's day: past it, new addresses are a 429 and nothing is written; the next day they go`, async () => {
    const memory = memoryStores();
    const queued: unknown[] = [];
    const deps = { ...memory.deps, sqs: { send: async (command: { input: unknown }) => void queued.push(command.input) } } as unknown as Deps;
    const batch = (n: number) => Array.from({ length: MAX_RECIPIENTS }, (_, i) => ({ email: `a${n}-${i}@shop.example`, notices: ['lead.created'] }));
    for (let n = 0; n < MAX_CONFIRMATIONS_PER_DAY / MAX_RECIPIENTS; n += 1) await setRecipients(deps, 'org_a', batch(n));
    expect(queued).toHaveLength(MAX_CONFIRMATIONS_PER_DAY);
    const before = await listRecipients(deps, 'org_a');
    await expect(setRecipients(deps, 'org_a', [...before, { email: 'one-more@shop.example', notices: [] }].slice(-MAX_RECIPIENTS))).rejects.toMatchObject({ status: 429 });
    expect(await listRecipients(deps, 'org_a')).toEqual(before);
    expect(queued).toHaveLength(MAX_CONFIRMATIONS_PER_DAY);
    memory.clock.advance(86_400_000);
    await setRecipients(deps, 'org_a', [{ email: 'one-more@shop.example', notices: [] }]);
    expect(queued).toHaveLength(MAX_CONFIRMATIONS_PER_DAY + 1);
  });
});

describe('a confirmation the notices queue cannot take', () => {
  it('fails the change with nothing written (a 503); saved again, the address is added and its confirmation queued', async () => {
    const memory = memoryStores();
    const queued: { MessageBody?: string }[] = [];
    let down = true;
    const deps = { ...memory.deps, sqs: { send: async (command: { input: { MessageBody?: string } }) => {
      if (down) throw Object.assign(new Error('queue unavailable'), { name: 'ServiceUnavailable' });
      queued.push(command.input);
    } } } as unknown as Deps;
    const list = [{ email: 'ops@shop.example', notices: ['lead.created'] }];
    await expect(setRecipients(deps, 'org_a', list)).rejects.toMatchObject({ status: 503, extra: { headers: { 'Retry-After': '60' } } });
    expect(await listRecipients(deps, 'org_a')).toEqual([]);
    down = false;
    const { recipients } = await setRecipients(deps, 'org_a', list);
    expect(recipients).toEqual([expect.objectContaining({ email: 'ops@shop.example', status: 'pending' })]);
    expect(queued.map((q) => JSON.parse(q.MessageBody!).data)).toEqual([{ email: 'ops@shop.example', addedAt: recipients[0].addedAt }]);
  });
});

describe('SES feedback', () => {
  const event = (detail: object) => JSON.stringify({ source: 'aws.ses', 'detail-type': 'x', detail: { ...detail, mail: { tags: { organization: ['org_a'] } } } });
  it('suppresses the addresses of a permanent bounce or a complaint, for the organization tagged; not a transient bounce', () => {
    expect(suppressionsOf(event({ eventType: 'Bounce', bounce: { bounceType: 'Permanent', bouncedRecipients: [{ emailAddress: 'Ops@Shop.example' }] } })))
      .toEqual([{ organizationId: 'org_a', email: 'ops@shop.example', reason: 'bounced' }]);
    expect(suppressionsOf(event({ eventType: 'Complaint', complaint: { complainedRecipients: [{ emailAddress: 'boss@shop.example' }] } })))
      .toEqual([{ organizationId: 'org_a', email: 'boss@shop.example', reason: 'complained' }]);
    expect(suppressionsOf(event({ eventType: 'Bounce', bounce: { bounceType: 'Transient', bouncedRecipients: [{ emailAddress: 'ops@shop.example' }] } }))).toEqual([]);
    expect(suppressionsOf('not json')).toEqual([]);
    // An SNS notification carries the same event in `Message`.
    expect(suppressionsOf(JSON.stringify({ Type: 'Notification', Message: JSON.stringify({ notificationType: 'Complaint', complaint: { complainedRecipients: [{ emailAddress: 'a@shop.example' }] }, mail: { tags: { organization: ['org_b'] } } }) })))
      .toEqual([{ organizationId: 'org_b', email: 'a@shop.example', reason: 'complained' }]);
  });
});

describe('the public notice pages', () => {
  const pageEvent = (httpMethod: string, token: string) => ({
    httpMethod, resource: '/notices/unsubscribe', queryStringParameters: { token }, body: httpMethod === 'GET' ? null : `token=${encodeURIComponent(token)}`, isBase64Encoded: false,
  }) as unknown as APIGatewayProxyEvent;

  it('show on GET, act on POST alone: any other method is a 405 with Allow, and changes nothing', async () => {
    const memory = memoryStores();
    const deps = { ...memory.deps, sqs: { send: async () => undefined } } as unknown as Deps;
    await setRecipients(deps, 'org_a', [{ email: 'ops@shop.example', notices: ['lead.created'] }]);
    const token = signLink(secret, { organizationId: 'org_a', email: 'ops@shop.example', purpose: 'unsubscribe' });
    for (const method of ['PUT', 'DELETE', 'PATCH', 'HEAD', 'OPTIONS']) {
      const answer = await serveNoticePage(deps, pageEvent(method, token), 'unsubscribe', async () => secret);
      expect([method, answer.statusCode, answer.headers?.Allow]).toEqual([method, 405, 'GET, POST']);
    }
    expect((await listRecipients(deps, 'org_a'))[0].status).toBe('pending');
    expect((await serveNoticePage(deps, pageEvent('GET', token), 'unsubscribe', async () => secret)).statusCode).toBe(200);
    expect((await listRecipients(deps, 'org_a'))[0].status).toBe('pending');
    expect((await serveNoticePage(deps, pageEvent('POST', token), 'unsubscribe', async () => secret)).statusCode).toBe(200);
    expect((await listRecipients(deps, 'org_a'))[0].status).toBe('suppressed');
  });
});
