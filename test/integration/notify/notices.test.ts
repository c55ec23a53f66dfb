/**
 * The notices through the real interfaces (docs/notifications.md "The notices"): a local stack of this
 * file's own, started with CRM_SMTP_URL pointing at a test SMTP server (smtp-server, parsed with
 * mailparser); leads POSTed to the lead endpoint, an import written to the clients table as lead
 * intake writes its clients, a receiver on 127.0.0.1 that answers 500 until its endpoint is paused.
 * Recipients are confirmed through the recipients store (double opt-in is mail.test.ts's story).
 * Each story has an organization of its own, so each has its own cap.
 */
import { describe, it, expect, beforeAll, afterAll } from '@jest/globals';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { BatchWriteCommand } from '@aws-sdk/lib-dynamodb';
import { GetQueueAttributesCommand } from '@aws-sdk/client-sqs';
import type { Deps } from '../../../functions/core/platform/deps.js';
import { keys } from '../../../functions/core/platform/model.js';
import { newTimeOrderedId } from '../../../functions/core/platform/ids.js';
import { createOrganization, setDuplicatePolicy } from '../../../functions/core/tenancy/organizations.js';
import { createApiKey } from '../../../functions/core/tenancy/api-keys.js';
import { addEndpoint } from '../../../functions/core/delivery/endpoints.js';
import { recipientStore } from '../../../functions/core/notify/recipient-store.js';
import { runDailyDigest } from '../../../functions/core/settings/daily-digest.js';
import type { NoticeKind } from '../../../functions/core/notify/notice.js';
import { RestartableStack } from '../support/restartable-stack.js';
import { TestMailServer } from '../support/mail-server.js';
import { eventually } from '../support/stack.js';
import type { LocalStackInfo } from '../../../lib/local/stack-file.js';


const mail = new TestMailServer();
const received = mail.received;
const dir = mkdtempSync(path.join(tmpdir(), 'crm-notices-'));
let stack: RestartableStack;
let info: LocalStackInfo;
let deps: Deps;

/** The cap of this stack: small, so an import's summary comes soon. */
const CAP = 5;
/** Its window: short, as the summary waits for the window's end (events/lead-notices.ts). */
const WINDOW_SECONDS = 30;

const mailTo = (address: string) => mail.to(address);

/** An organization with an API key and one confirmed recipient who picked `notices`. */
async function givenTeam(name: string, notices: NoticeKind[] = ['lead.created']) {
  const org = await createOrganization(deps, { name });
  const { key } = await createApiKey(deps, org.id, 'test');
  const email = `ops+${org.id.toLowerCase()}@shop.example`;
  await recipientStore(deps).changeRecipients(org.id, { add: [{ email, notices, status: 'confirmed', addedAt: Date.now(), confirmedAt: new Date().toISOString() }], update: [], remove: [] });
  return { organizationId: org.id, key, email };
}

const postLead = (key: string, body: unknown) => fetch(`${info.apiUrl}/api/webhook/leads`, {
  method: 'POST', headers: { 'Content-Type': 'application/json', 'X-API-Key': key }, body: JSON.stringify(body),
});

/** Every notices-queue message handled (none waiting, none in flight). */
async function noticesDrained(): Promise<void> {
  await eventually(async () => {
    const { Attributes: a } = await deps.sqs.send(new GetQueueAttributesCommand({ QueueUrl: deps.queues.noticesQueue, AttributeNames: ['ApproximateNumberOfMessages', 'ApproximateNumberOfMessagesNotVisible', 'ApproximateNumberOfMessagesDelayed'] }));
    return Number(a?.ApproximateNumberOfMessages) + Number(a?.ApproximateNumberOfMessagesNotVisible) + Number(a?.ApproximateNumberOfMessagesDelayed ?? 0) === 0;
  }, { what: 'the notices queue to drain', timeoutMs: 30_000 });
}

beforeAll(async () => {
  await mail.up();
  stack = new RestartableStack(dir, {
    leadNoticeCap: CAP, leadNoticeWindowSeconds: WINDOW_SECONDS, noticeRetrySeconds: [1], noticeSendTimeoutMs: 2000,
    circuitFailureThreshold: 2, circuitOpenSeconds: 1, circuitMaxOpenSeconds: 2, retryScheduleSeconds: [1, 1, 1, 1], retryJitter: 0, defaultRateLimitPerMinute: 1000,
  }, { CRM_SMTP_URL: `smtp://127.0.0.1:${mail.port}` });
  ({ info, deps } = await stack.start());
}, 150_000);

afterAll(async () => {
  await stack?.stop();
  await mail.stop();
  rmSync(dir, { recursive: true, force: true });
});

describe('a new lead', () => {
  it('is one e-mail to a confirmed recipient within 10 s; a double-submit sends none', async () => {
    const team = await givenTeam('Notice Plumbing');
    const lead = { first_name: 'Ada', last_name: 'Lovelace', email: 'ada@example.com', phone: '+1 415 555 0100', service: 'Leaky faucet', notes: 'Call after 5 pm' };
    const posted = Date.now();
    expect((await postLead(team.key, lead)).status).toBe(201);
    const [first] = await eventually(async () => mailTo(team.email).length > 0 && mailTo(team.email), { what: 'the lead notice', timeoutMs: 10_000 });
    expect(first.at - posted).toBeLessThan(10_000);
    expect(first.subject).toBe('New lead: Ada Lovelace (Leaky faucet)');
    for (const fact of ['Name: Ada Lovelace', 'E-mail: ada@example.com', 'Phone: +14155550100', 'Service: Leaky faucet', 'Source: lead endpoint', 'Call after 5 pm']) expect(first.text).toContain(fact);

    // The same submission again (a double click): answered as the same client, no second e-mail.
    const again = await postLead(team.key, lead);
    expect(again.status).toBe(200);
    expect(await again.json()).toMatchObject({ duplicate: true });
    // A later lead of the same organization arrives after anything the double-submit could have caused (one stream lane per organization).
    expect((await postLead(team.key, { first_name: 'Grace', email: 'grace@example.com' })).status).toBe(201);
    await eventually(async () => mailTo(team.email).some((m) => m.subject === 'New lead: Grace'), { what: 'the next lead\'s notice' });
    await noticesDrained();
    expect(mailTo(team.email).filter((m) => m.subject.startsWith('New lead: Ada'))).toHaveLength(1);
  });

  it('merged into an earlier client (the merge policy) is a short returning notice, not a second new one', async () => {
    const team = await givenTeam('Merging Plumbing');
    await setDuplicatePolicy(deps, team.organizationId, 'merge');
    expect((await postLead(team.key, { first_name: 'Kay', email: 'kay@example.com', service: 'Boiler' })).status).toBe(201);
    expect((await postLead(team.key, { first_name: 'Kay', email: 'kay@example.com', service: 'Radiator' })).status).toBe(200);
    const mails = await eventually(async () => mailTo(team.email).length >= 2 && mailTo(team.email), { what: 'the new and the returning notice' });
    await noticesDrained();
    expect(mailTo(team.email).map((m) => m.subject).sort()).toEqual(['New lead: Kay (Boiler)', 'Returning lead: Kay']);
    expect(mails.find((m) => m.subject === 'Returning lead: Kay')!.text).toContain('Service: Radiator');
  });

  it('named to inject a header and a script adds no header and no live markup', async () => {
    const team = await givenTeam('Hostile Plumbing');
    expect((await postLead(team.key, { first_name: 'Eve\r\nBcc: x@example.com <script>', email: 'eve@example.com', notes: '<img src=x onerror=alert(1)>' })).status).toBe(201);
    const [eve] = await eventually(async () => mailTo(team.email).length > 0 && mailTo(team.email), { what: 'the notice of Eve' });
    const head = eve.raw.slice(0, eve.raw.indexOf('\r\n\r\n'));
    expect(head).not.toMatch(/^bcc:/im);
    expect(head.split('\r\n').filter((line) => /^subject:/i.test(line))).toHaveLength(1);
    expect(eve.to).toEqual([team.email]);
    expect(received.some((m) => m.to.includes('x@example.com'))).toBe(false);
    expect(eve.subject).toContain('Eve');
    expect(eve.html).not.toContain('<script');
    expect(eve.html).not.toContain('<img');
    expect(eve.html).toContain('&lt;script&gt;');
    expect(eve.text).toContain('<img src=x onerror=alert(1)>');
  });
});

describe('the daily digest', () => {
  it('mails the day\'s leads by source to a digest recipient, once, however often its hour runs', async () => {
    const team = await givenTeam('Digest Plumbing', ['daily_digest']);
    for (const name of ['Dee', 'Dan']) expect((await postLead(team.key, { first_name: name, email: `${name.toLowerCase()}@example.com` })).status).toBe(201);
    const today = new Date().toISOString().slice(0, 10);
    // A run in tomorrow's digest hour digests today.
    const tomorrow = { ...deps, now: () => Date.parse(`${today}T07:10:00.000Z`) + 86_400_000 };
    // The run queues one job per organization; the stack's digest function makes each digest from its message.
    expect((await runDailyDigest(tomorrow)).queued).toBeGreaterThanOrEqual(1);
    await eventually(async () => mailTo(team.email).length > 0, { what: 'the digest' });
    await runDailyDigest(tomorrow);
    await noticesDrained();
    const [digest, ...more] = mailTo(team.email);
    expect(more).toEqual([]);
    expect(digest.subject).toBe(`Daily digest ${today}: 2 leads`);
    expect(digest.text).toContain('lead endpoint, Leads: 2');
  });
});

describe('an import of 1,000 clients', () => {
  it('is at most the cap and one summary', async () => {
    const team = await givenTeam('Import Plumbing');
    const now = Date.now();
    const items = Array.from({ length: 1000 }, (_, i) => {
      const id = newTimeOrderedId('cli', now + i);
      const at = new Date(now).toISOString();
      return { ...keys.client(team.organizationId, id), entity: 'client', id, organization_id: team.organizationId, status: 'lead', source: 'api', first_name: `Imported ${i}`, sms_consent: false, submission_count: 1, created_at: at, updated_at: at };
    });
    for (let i = 0; i < items.length; i += 25) {
      await deps.doc.send(new BatchWriteCommand({ RequestItems: { [deps.tables.clients]: items.slice(i, i + 25).map((Item) => ({ PutRequest: { Item } })) } }));
    }
    await eventually(async () => mailTo(team.email).some((m) => m.subject.includes('more new leads')), { what: 'the summary', timeoutMs: 90_000 });
    await noticesDrained();
    const mails = mailTo(team.email);
    expect(mails.filter((m) => m.subject.startsWith('New lead: Imported'))).toHaveLength(CAP);
    const summaries = mails.filter((m) => m.subject.includes('more new leads'));
    expect(summaries).toHaveLength(1);
    expect(mails.length).toBeLessThanOrEqual(CAP + 1);
    // Counted exactly, whatever lanes the import took: every lead is mailed or in the summary.
    expect(Number(/^(\d+) more new leads/.exec(summaries[0].subject)?.[1])).toBe(1000 - CAP);
  });
});

describe('an endpoint that fails until it is paused', () => {
  let receiver: Server;
  let hits = 0;

  beforeAll(async () => {
    receiver = createServer((req, res) => { hits += 1; req.resume(); req.on('end', () => res.writeHead(500).end('receiver down')); });
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', () => resolve()));
  });
  afterAll(async () => { await new Promise<void>((r) => receiver.close(() => r())); });

  it('produces one paused notice: which endpoint, the last error, a link to the settings page', async () => {
    const team = await givenTeam('Paused Plumbing', ['endpoint.paused']);
    const url = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
    const { endpoint } = await addEndpoint(deps, team.organizationId, { url, events: '*', description: 'Zapier' });
    for (const name of ['Ann', 'Bob', 'Cy']) expect((await postLead(team.key, { first_name: name, email: `${name.toLowerCase()}@example.com` })).status).toBe(201);
    const [paused] = await eventually(async () => mailTo(team.email).length > 0 && mailTo(team.email), { what: 'the paused notice' });
    expect(paused.subject).toBe('Webhook endpoint paused: Zapier');
    // The endpoint by its origin (its path may be a capability: docs/notifications.md).
    expect(paused.text).not.toContain('/hook');
    for (const fact of [`Endpoint: ${new URL(url).origin}`, `Id: ${endpoint.id}`, 'Paused since:', 'Last error:', 'HTTP 500', `${info.apiUrl}/settings`]) expect(paused.text).toContain(fact);
    expect(paused.text).toMatch(/Deliveries waiting: [1-3]\n/);
    // The deliveries keep failing (retries, probes): still the one pause.
    const seen = hits;
    await eventually(async () => hits >= seen + 2, { what: 'more failed attempts' });
    await noticesDrained();
    expect(mailTo(team.email)).toHaveLength(1);
  });
});
