/**
 * Notices by e-mail through the real interfaces (docs/notifications.md): a local stack of this
 * file's own, started with CRM_SMTP_URL pointing at a test SMTP server (smtp-server, messages parsed
 * with mailparser), the settings API over HTTP, the public confirm and unsubscribe pages, the
 * notices queue fed as producers feed it (enqueueNotice).
 */
import { describe, it, expect, beforeAll, afterAll } from '@jest/globals';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { GetQueueAttributesCommand, SendMessageCommand } from '@aws-sdk/client-sqs';
import type { Deps } from '../../../functions/core/platform/deps.js';
import { createOrganization } from '../../../functions/core/tenancy/organizations.js';
import { mintSessionToken } from '../../../functions/core/settings/session-token.js';
import { enqueueNotice } from '../../../functions/core/notify/notices-queue.js';
import type { NoticeMessage } from '../../../functions/core/notify/notice.js';
import { recipientStore } from '../../../functions/core/notify/recipient-store.js';
import { RestartableStack } from '../support/restartable-stack.js';
import { TestMailServer, type Received } from '../support/mail-server.js';
import { eventually, runCli } from '../support/stack.js';
import type { LocalStackInfo } from '../../../lib/local/stack-file.js';

const mail = new TestMailServer();
const dir = mkdtempSync(path.join(tmpdir(), 'crm-mail-'));
let stack: RestartableStack;
let info: LocalStackInfo;
let deps: Deps;
let token: string;
let organizationId: string;

async function settingsApi(method: string, body?: unknown): Promise<Response> {
  return fetch(`${info.apiUrl}/api/settings/notifications`, {
    method, headers: { Authorization: `Bearer ${token}`, ...(body ? { 'Content-Type': 'application/json' } : {}) }, body: body ? JSON.stringify(body) : undefined,
  });
}

const statuses = async () => Object.fromEntries(((await (await settingsApi('GET')).json()) as { recipients: { email: string; status: string }[] }).recipients.map((r) => [r.email, r.status]));

/** The link in a confirmation e-mail's text. */
const confirmLink = (m: Received) => /https?:\/\/\S+\/notices\/confirm\?token=\S+/.exec(m.text)![0];

async function confirmByPage(link: string): Promise<void> {
  const page = await fetch(link);
  expect(page.status).toBe(200);
  const html = await page.text();
  const value = /name="token" value="([^"]+)"/.exec(html)![1];
  const posted = await fetch(new URL('confirm', link), { method: 'POST', headers: { 'Content-Type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams({ token: value.replaceAll('&amp;', '&') }).toString() });
  expect(posted.status).toBe(200);
}

/** Every notices-queue message handled (none waiting, none in flight). */
async function queueDrained(): Promise<void> {
  await eventually(async () => {
    const { Attributes: a } = await deps.sqs.send(new GetQueueAttributesCommand({ QueueUrl: deps.queues.noticesQueue, AttributeNames: ['ApproximateNumberOfMessages', 'ApproximateNumberOfMessagesNotVisible', 'ApproximateNumberOfMessagesDelayed'] }));
    return Number(a?.ApproximateNumberOfMessages) + Number(a?.ApproximateNumberOfMessagesNotVisible) + Number(a?.ApproximateNumberOfMessagesDelayed ?? 0) === 0;
  }, { what: 'the notices queue to drain', timeoutMs: 30_000 });
}

const notice = (key: string, data: Record<string, unknown> = { name: 'Ada Lovelace', service: 'Leaky faucet' }): NoticeMessage => ({ organizationId, kind: 'lead.created', key, at: new Date().toISOString(), data });

beforeAll(async () => {
  await mail.up();
  stack = new RestartableStack(dir, { noticeRetrySeconds: [1], noticeSendTimeoutMs: 2000, settingsMaxAgeSeconds: 1 }, { CRM_SMTP_URL: `smtp://127.0.0.1:${mail.port}` });
  ({ info, deps } = await stack.start());
  const org = await createOrganization(deps, { name: 'Mail Plumbing' });
  organizationId = org.id;
  token = await mintSessionToken(readFileSync(path.join(dir, 'settings-token.secret'), 'utf8').trim(), { organizationId, userId: 'admin-1', ttlSeconds: 900 });
}, 150_000);

afterAll(async () => {
  await stack?.stop();
  await mail.stop();
  rmSync(dir, { recursive: true, force: true });
});

describe('notice recipients, double opt-in and unsubscribe, over real SMTP', () => {
  const [ops, boss] = ['ops@shop.example', 'boss@shop.example'];

  it('sends a new address one confirmation and nothing else until its page\'s button is pressed; then each notice once; one-click unsubscribe stops them', async () => {
    expect(info.mail).toEqual({ smtpUrl: `smtp://127.0.0.1:${mail.port}` });
    // ops: added and confirmed first, so a notice's arrival there says the notice was handled.
    expect((await settingsApi('PUT', { recipients: [{ email: ops, notices: ['lead.created'] }] })).status).toBe(200);
    const [opsConfirmation] = await eventually(async () => mail.to(ops).length === 1 && mail.to(ops), { what: 'the confirmation to ops' });
    expect(opsConfirmation.subject).toBe('Confirm notices from Mail Plumbing');
    // Opening the link (a scanner's prefetch) confirms nothing: only the page's POST does.
    expect((await fetch(confirmLink(opsConfirmation))).status).toBe(200);
    expect(await statuses()).toEqual({ [ops]: 'pending' });
    await confirmByPage(confirmLink(opsConfirmation));
    expect(await statuses()).toEqual({ [ops]: 'confirmed' });

    // boss (mixed case, spaces): stored normalized, pending, one confirmation.
    const put = await settingsApi('PUT', { recipients: [{ email: ops, notices: ['lead.created'] }, { email: ' Boss@Shop.example ', notices: ['lead.created', 'daily_digest'] }] });
    expect(put.status).toBe(200);
    expect(await put.json()).toEqual({ recipients: [
      { email: boss, notices: ['lead.created', 'daily_digest'], status: 'pending' },
      { email: ops, notices: ['lead.created'], status: 'confirmed' },
    ] });
    const [bossConfirmation] = await eventually(async () => mail.to(boss).length === 1 && mail.to(boss), { what: 'the confirmation to boss' });

    // Before boss confirms, a notice reaches ops alone.
    await enqueueNotice(deps, notice('lead#1'));
    await eventually(async () => mail.to(ops).length === 2, { what: 'notice 1 at ops' });
    await queueDrained();
    expect(mail.to(boss)).toHaveLength(1);

    await confirmByPage(confirmLink(bossConfirmation));
    expect(await statuses()).toEqual({ [ops]: 'confirmed', [boss]: 'confirmed' });
    // The same notice queued twice (a retried producer): one e-mail per recipient.
    await enqueueNotice(deps, notice('lead#2'));
    await enqueueNotice(deps, notice('lead#2'));
    const [lead2] = await eventually(async () => mail.to(boss).length === 2 && mail.to(boss).slice(1), { what: 'notice 2 at boss' });
    await queueDrained();
    expect(mail.to(boss)).toHaveLength(2);
    expect(mail.to(ops)).toHaveLength(3);
    expect(lead2.subject).toBe('New lead: Ada Lovelace (Leaky faucet)');

    // RFC 8058: the List-Unsubscribe URL, POSTed `List-Unsubscribe=One-Click` by the mail client.
    const unsubscribe = /^<(https?:\/\/[^>]+)>$/.exec(lead2.headers.get('list-unsubscribe') ?? '')![1];
    expect(lead2.headers.get('list-unsubscribe-post')).toBe('List-Unsubscribe=One-Click');
    expect(unsubscribe).toContain('/notices/unsubscribe?token=');
    // Another address's token does not work for this one: it is signed for boss alone.
    expect((await fetch(unsubscribe.replace(/token=[^&]+/, 'token=n1.e30.AAAA'), { method: 'POST', body: 'List-Unsubscribe=One-Click', headers: { 'Content-Type': 'application/x-www-form-urlencoded' } })).status).toBe(400);
    // Opening it (a scanner, a preview) unsubscribes nothing.
    expect((await fetch(unsubscribe)).status).toBe(200);
    expect((await statuses())[boss]).toBe('confirmed');
    const oneClick = await fetch(unsubscribe, { method: 'POST', body: 'List-Unsubscribe=One-Click', headers: { 'Content-Type': 'application/x-www-form-urlencoded' } });
    expect(oneClick.status).toBe(200);
    expect(await statuses()).toEqual({ [ops]: 'confirmed', [boss]: 'suppressed' });

    await enqueueNotice(deps, notice('lead#3'));
    await eventually(async () => mail.to(ops).length === 4, { what: 'notice 3 at ops' });
    await queueDrained();
    expect(mail.to(boss)).toHaveLength(2);
  });

  it('refuses more than 10 addresses with a 422 and writes nothing', async () => {
    const before = await recipientStore(deps).listRecipients(organizationId);
    const eleven = Array.from({ length: 11 }, (_, i) => ({ email: `a${i}@shop.example`, notices: ['lead.created'] }));
    const answer = await settingsApi('PUT', { recipients: eleven });
    expect(answer.status).toBe(422);
    expect(await recipientStore(deps).listRecipients(organizationId)).toEqual(before);
  });

  it('adds no header through a lead\'s name and sends no live markup (nodemailer encodes the subject)', async () => {
    await enqueueNotice(deps, notice('lead#eve', { name: 'Eve\r\nBcc: x@example.com <script>alert(1)</script>' }));
    const [eve] = await eventually(async () => { const m = mail.to(ops).filter((r) => r.subject.includes('Eve')); return m.length > 0 && m; }, { what: 'the notice of Eve' });
    const head = eve.raw.slice(0, eve.raw.indexOf('\r\n\r\n'));
    expect(head).not.toMatch(/^bcc:/im);
    expect(eve.headers.has('bcc')).toBe(false);
    expect(eve.to).toEqual([ops]);
    expect(eve.html).not.toContain('<script>');
    // Non-ASCII is encoded in the header (RFC 2047) and reads back as sent.
    await enqueueNotice(deps, notice('lead#zoe', { name: 'Zoë Ørsted' }));
    const [zoe] = await eventually(async () => { const m = mail.to(ops).filter((r) => r.subject === 'New lead: Zoë Ørsted'); return m.length > 0 && m; }, { what: 'the notice of Zoë' });
    expect(zoe.raw.slice(0, zoe.raw.indexOf('\r\n\r\n'))).toMatch(/^Subject: =\?UTF-8\?[BQ]\?/m);
    expect(zoe.text).toContain('Zoë Ørsted');
  });

  it('sends a notice once when the mail server was down for a while, then up again', async () => {
    await mail.down();
    await enqueueNotice(deps, notice('lead#down', { name: 'Grace Hopper' }));
    await eventually(async () => mail.refused >= 2, { what: 'the mailer to try the server that is down twice' });
    await mail.up();
    const arrived = () => mail.to(ops).filter((m) => m.subject === 'New lead: Grace Hopper');
    await eventually(async () => arrived().length > 0, { what: 'the notice after the server came back' });
    await queueDrained();
    expect(arrived()).toHaveLength(1);
  });

  it('loses no notice over a restart of the stack (the notices queue is journaled like every local queue)', async () => {
    await mail.down();
    const refused = mail.refused;
    await enqueueNotice(deps, notice('lead#restart', { name: 'Katherine Johnson' }));
    await eventually(async () => mail.refused > refused, { what: 'a try while the server is down' });
    await stack.stop();
    await mail.up();
    ({ info, deps } = await stack.start());
    const arrived = () => mail.to(ops).filter((m) => m.subject === 'New lead: Katherine Johnson');
    await eventually(async () => arrived().length > 0, { what: 'the notice after the restart' });
    await queueDrained();
    expect(arrived()).toHaveLength(1);
  }, 180_000);

  it('lets an operator list, add and remove recipients with `crm notifications recipients`, and `crm notifications` still lists the inbox', async () => {
    const cli = (args: string[]) => runCli(args, { stackFile: stack.stackFile });
    const added = await cli(['notifications', 'recipients', 'add', '--org', organizationId, '--email', 'Night@Shop.example', '--notices', 'endpoint.paused,endpoint.disabled']);
    expect({ code: added.code, stderr: added.stderr }).toEqual({ code: 0, stderr: '' });
    expect(added.json<{ added: string[] }>().added).toEqual(['night@shop.example']);
    await eventually(async () => mail.to('night@shop.example').length === 1, { what: 'the confirmation to night' });
    const listed = await cli(['notifications', 'recipients', 'list', '--org', organizationId]);
    expect(listed.json<{ recipients: { email: string; status: string; notices: string[] }[] }>().recipients).toContainEqual({ email: 'night@shop.example', status: 'pending', notices: ['endpoint.paused', 'endpoint.disabled'] });
    const bad = await cli(['notifications', 'recipients', 'add', '--org', organizationId, '--email', 'not an address']);
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toContain('must be one e-mail address');
    const removed = await cli(['notifications', 'recipients', 'remove', '--org', organizationId, '--email', 'night@shop.example']);
    expect(removed.json<{ removed: string[] }>().removed).toEqual(['night@shop.example']);
    const inbox = await cli(['notifications', '--org', organizationId]);
    expect({ code: inbox.code, rows: inbox.json() }).toEqual({ code: 0, rows: [] });
  });

  it('suppresses an address SES reports bounced (an EventBridge event on the mail feedback queue)', async () => {
    const event = { 'detail-type': 'Email Bounced', source: 'aws.ses', detail: { eventType: 'Bounce', bounce: { bounceType: 'Permanent', bouncedRecipients: [{ emailAddress: ops }] }, mail: { tags: { organization: [organizationId] } } } };
    await deps.sqs.send(new SendMessageCommand({ QueueUrl: deps.queues.mailFeedbackQueue, MessageBody: JSON.stringify(event) }));
    await eventually(async () => (await statuses())[ops] === 'suppressed', { what: 'ops suppressed' });
    // The settings API says why and since when (the page shows it).
    const { recipients } = await (await settingsApi('GET')).json() as { recipients: { email: string; suppressed?: { reason: string; at: string } }[] };
    expect(recipients.find((r) => r.email === ops)?.suppressed).toEqual({ reason: 'bounced', at: expect.stringMatching(/^\d{4}-\d\d-\d\dT/) });
    expect(recipients.find((r) => r.email === boss)?.suppressed).toEqual({ reason: 'unsubscribed', at: expect.any(String) });
  });
});
