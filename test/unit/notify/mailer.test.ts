/**
 * The mailer under a failing mail server (docs/notifications.md "Sending"), on the twins with a
 * fake transport: a transport failure stops the message at its first address, a hung server is cut
 * off before the invocation's time is up and every record keeps its backoff, a sent mark survives a
 * blip, and no log line names an address.
 */
import { describe, it, expect, beforeAll, afterAll, beforeEach, afterEach, jest } from '@jest/globals';
import type { SQSRecord } from 'aws-lambda';
import type { ChangeMessageVisibilityCommand } from '@aws-sdk/client-sqs';
import { sendQueuedMessage, NoticeNotSent, addressHash, REJECTION_LIMIT, REJECTION_LATCH_MS } from '../../../functions/core/notify/mailer.js';
import { rejectionCountPort, REJECTION_WINDOW_MS } from '../../../functions/core/notify/rejection-count-store.js';
import { MemoryRejectionCountStore } from '../../support/stores/memory-rejection-count-store.js';
import { sendNoticeBatch } from '../../../functions/mailer/sqs-batch.js';
import type { MailTransport, OutgoingMail } from '../../../functions/core/notify/mail-transport.js';
import { noticeMarkPort, markId, type NoticeMarkStore } from '../../../functions/core/notify/notice-mark-store.js';
import { recipientItem } from '../../../functions/core/notify/recipient-store.js';
import type { NoticeMessage } from '../../../functions/core/notify/notice.js';
import { logger, metrics } from '../../../functions/core/platform/observability.js';
import type { Deps } from '../../../functions/core/platform/deps.js';
import { memoryStores } from '../../support/stores/memory-deps.js';
import { noticeCapPort } from '../../../functions/core/notify/notice-cap-store.js';
import { MemoryNoticeCapStore } from '../../support/stores/memory-notice-cap-store.js';
import { mailTransport } from '../../../functions/core/notify/mail-transport.js';
import { CONFIRMATION_WRITE_GRACE_MS, listRecipients, setRecipients } from '../../../functions/core/notify/recipients.js';
import { parseConfig } from '../../../functions/core/platform/config.js';
import { TestMailServer } from '../../integration/support/mail-server.js';

const addresses = ['a@shop.example', 'b@shop.example', 'c@shop.example'];
const notice = (key: string): NoticeMessage => ({ organizationId: 'org_1', kind: 'lead.created', key, at: '2030-01-15T12:00:00.000Z', data: { clientId: 'cli_1', name: 'Ann' } });
const record = (key: string): SQSRecord => ({ messageId: `m-${key}`, receiptHandle: `r-${key}`, body: JSON.stringify(notice(key)), attributes: { ApproximateReceiveCount: '2' } } as unknown as SQSRecord);

/** The sent marks in memory, as notice-mark-store.ts keeps them; `markSentFailures` throws that many times first. */
function memoryMarks(markSentFailures = 0) {
  const marks = new Map<string, { status: 'claimed' | 'sent'; leaseUntil: number }>();
  let failures = markSentFailures;
  const store: NoticeMarkStore = {
    claim: async (mark, now, leaseUntil) => {
      const m = marks.get(markId(mark));
      if (m?.status === 'sent') return 'sent';
      if (m && m.leaseUntil >= now) return 'busy';
      marks.set(markId(mark), { status: 'claimed', leaseUntil });
      return 'claimed';
    },
    markSent: async (mark) => {
      if (failures-- > 0) throw Object.assign(new Error('throttled'), { name: 'ProvisionedThroughputExceededException' });
      marks.set(markId(mark), { status: 'sent', leaseUntil: 0 });
    },
    release: async (mark) => { marks.set(markId(mark), { status: 'claimed', leaseUntil: 0 }); },
  };
  return { marks, store };
}

function setup(markSentFailures = 0, emails = addresses) {
  const stores = memoryStores();
  for (const email of emails) {
    const item = recipientItem('org_1', { email, notices: ['lead.created'], status: 'confirmed', addedAt: 1 });
    stores.organizations.items.set(`${item.pk}\u0000${item.sk}`, item);
  }
  const { marks, store } = memoryMarks(markSentFailures);
  const visibility: ChangeMessageVisibilityCommand['input'][] = [];
  const sqs = { send: async (command: ChangeMessageVisibilityCommand) => { visibility.push(command.input); return {}; } };
  const rejections = new MemoryRejectionCountStore();
  const deps = { ...rejectionCountPort.with(noticeMarkPort.with(stores.deps, store), rejections), sqs } as unknown as Deps;
  return { deps, marks, visibility, rejections, clock: stores.clock };
}

const options = (transport: MailTransport) => ({ transport, linkSecret: async () => 'secret', baseUrl: 'https://crm.example' });
/** A transport whose server refuses `dead` at their RCPT TO (550 5.1.1), as nodemailer reports it; records what it sent. */
function refusingTransport(dead: Set<string>): MailTransport & { sent: string[] } {
  const sent: string[] = [];
  return {
    sent,
    send: async (mail) => {
      if (!dead.has(mail.to)) { sent.push(mail.to); return; }
      throw Object.assign(new Error('Can\'t send mail - all recipients were rejected'), { code: 'EENVELOPE', command: 'RCPT TO', rejected: [mail.to], response: '550 5.1.1 <x>: Recipient address rejected: User unknown', responseCode: 550 });
    },
  };
}

const refused = (to: string) => Object.assign(new Error(`connect ECONNREFUSED 127.0.0.1:2525 while sending to ${to}`), { code: 'ECONNECTION' });

describe('the mailer under a failing mail server', () => {
  let logged: string[];
  beforeEach(() => {
    logged = [];
    for (const level of ['warn', 'info', 'error'] as const) {
      jest.spyOn(logger, level).mockImplementation((...args: unknown[]) => { logged.push(JSON.stringify(args)); });
    }
  });
  afterEach(() => { jest.restoreAllMocks(); });

  it('stops a message at its first transport failure: the other addresses are not tried', async () => {
    const { deps } = setup();
    const tried: string[] = [];
    const transport: MailTransport = { send: async (mail: OutgoingMail) => { tried.push(mail.to); throw refused(mail.to); } };
    await expect(sendQueuedMessage(deps, notice('k1'), options(transport))).rejects.toThrow(NoticeNotSent);
    expect(tried).toHaveLength(1);
  });

  it('goes on past a failure of one address (the server put that recipient off for now)', async () => {
    const { deps } = setup();
    const sent: string[] = [];
    const transport: MailTransport = {
      send: async (mail) => {
        if (mail.to === addresses[0]) throw Object.assign(new Error(`450 ${mail.to} greylisted`), { code: 'EENVELOPE', command: 'RCPT TO', responseCode: 450, response: `450 4.2.0 ${mail.to} greylisted`, rejected: [mail.to] });
        sent.push(mail.to);
      },
    };
    await expect(sendQueuedMessage(deps, notice('k2'), options(transport))).rejects.toThrow(NoticeNotSent);
    expect(sent.sort()).toEqual(addresses.slice(1));
  });

  it('a hung server: the batch gives up before the invocation\'s time is up, and every record gets its backoff', async () => {
    const { deps, visibility } = setup();
    const transport: MailTransport = { send: () => new Promise(() => undefined) };
    // On timers the test moves (a loaded machine's own delays are not the mailer's): done within the 500 ms it was given.
    jest.useFakeTimers({ doNotFake: ['nextTick', 'setImmediate', 'queueMicrotask'] });
    let result: Awaited<ReturnType<typeof sendNoticeBatch>> | undefined;
    try {
      void sendNoticeBatch(deps, [record('h1'), record('h2')], { ...options(transport), remainingMs: () => 500 }).then((r) => { result = r; });
      await jest.advanceTimersByTimeAsync(499);
      await new Promise((resolve) => setImmediate(resolve));
    } finally {
      jest.useRealTimers();
    }
    if (!result) throw new Error('the batch did not give up within its time');
    expect(result.batchItemFailures.map((f) => f.itemIdentifier).sort()).toEqual(['m-h1', 'm-h2']);
    expect(visibility.map((v) => v.ReceiptHandle).sort()).toEqual(['r-h1', 'r-h2']);
    expect(visibility.every((v) => v.VisibilityTimeout === deps.config.noticeRetrySeconds[1])).toBe(true);
  });

  it('no log line names an address, nor quotes the server\'s text', async () => {
    const { deps } = setup();
    const transport: MailTransport = { send: async (mail) => { throw refused(mail.to); } };
    await sendNoticeBatch(deps, [record('l1')], options(transport));
    expect(logged.length).toBeGreaterThan(0);
    for (const line of logged) {
      for (const address of addresses) expect(line).not.toContain(address);
      expect(line).not.toContain('ECONNREFUSED 127.0.0.1');
    }
    expect(logged.join('\n')).toContain(addressHash(addresses[0]));
    expect(logged.join('\n')).toContain('ECONNECTION');
  });

  it('retries the sent mark after a blip: the address is not mailed again on the next try', async () => {
    const { deps } = setup(2);
    const sent: string[] = [];
    const transport: MailTransport = { send: async (mail) => { sent.push(mail.to); } };
    await sendQueuedMessage(deps, notice('s1'), options(transport));
    await sendQueuedMessage(deps, notice('s1'), options(transport));
    expect(sent.sort()).toEqual(addresses);
  });

  it('waits for a confirmation\'s addition still being written, and sends nothing for one never written', async () => {
    const stores = memoryStores();
    const sent: OutgoingMail[] = [];
    const transport: MailTransport = { send: async (mail) => { sent.push(mail); } };
    const deps = noticeMarkPort.with(stores.deps, memoryMarks().store);
    const addedAt = stores.clock.now();
    const confirmation = (email: string) => ({ organizationId: 'org_1', kind: 'recipient.confirm' as const, key: `confirm#${addedAt}`, at: new Date(addedAt).toISOString(), data: { email, addedAt } });
    // Queued before its write (recipients.ts setRecipients): the mailer got it first.
    await expect(sendQueuedMessage(deps, confirmation('new@shop.example'), options(transport))).rejects.toThrow(NoticeNotSent);
    const pending = recipientItem('org_1', { email: 'new@shop.example', notices: ['lead.created'], status: 'pending', addedAt });
    stores.organizations.items.set(`${pending.pk}\u0000${pending.sk}`, pending);
    await sendQueuedMessage(deps, confirmation('new@shop.example'), options(transport));
    expect(sent.map((m) => m.to)).toEqual(['new@shop.example']);
    // A write that failed (a 409): after the grace, nothing to send and nothing to retry.
    stores.clock.advance(CONFIRMATION_WRITE_GRACE_MS);
    expect(await sendQueuedMessage(deps, confirmation('never@shop.example'), options(transport))).toEqual({ sent: 0, skipped: 0, rejected: 0, held: 0 });
    expect(sent).toHaveLength(1);
  });

  it('sends a window\'s leads summary with the count it claims when it goes, the same for every recipient and every retry', async () => {
    const { deps: base } = setup();
    const cap = new MemoryNoticeCapStore();
    const deps = noticeCapPort.with(base, cap);
    const start = Date.parse('2030-01-15T12:00:00.000Z');
    await cap.countLeadNotices('org_1', start, 'b1', 3);
    await cap.countLeadNotices('org_1', start, 'b2', 4); // folded after the summary was produced
    const summary: NoticeMessage = { organizationId: 'org_1', kind: 'lead.summary', key: `lead.summary|org_1|${start}`, at: '2030-01-15T12:00:00.000Z', data: { round: 1, folded: 1, cap: 2, since: '2030-01-15T12:00:00.000Z', until: '2030-01-15T12:10:00.000Z' } };
    const sent: OutgoingMail[] = [];
    let down = true;
    const transport: MailTransport = { send: async (mail) => { if (down && mail.to === addresses[2]) throw Object.assign(new Error('450'), { code: 'EENVELOPE', command: 'RCPT TO', responseCode: 450, response: `450 4.2.0 ${mail.to} greylisted`, rejected: [mail.to] }); sent.push(mail); } };
    await expect(sendQueuedMessage(deps, summary, options(transport))).rejects.toThrow(NoticeNotSent);
    await cap.countLeadNotices('org_1', start, 'b3', 1); // counted after the claim: a follow-up's, not this summary's
    down = false;
    await sendQueuedMessage(deps, summary, options(transport));
    expect(sent.map((m) => [m.to, m.subject.replace(/ since.*/, '')])).toEqual(addresses.map((a) => [a, '5 more new leads']));
  });

  it('sends a summary of a batch the cap counter missed with its own count, claiming nothing; never a summary of no lead', async () => {
    const { deps: base } = setup();
    const cap = new MemoryNoticeCapStore();
    const deps = noticeCapPort.with(base, cap);
    const start = Date.parse('2030-01-15T12:00:00.000Z');
    await cap.countLeadNotices('org_1', start, 'b1', 1); // the window's counter exists, under the cap
    const window = { cap: 2, since: '2030-01-15T12:00:00.000Z', until: '2030-01-15T12:10:00.000Z' };
    const sent: OutgoingMail[] = [];
    const transport: MailTransport = { send: async (mail) => { sent.push(mail); } };
    await sendQueuedMessage(deps, { organizationId: 'org_1', kind: 'lead.summary', key: `lead.summary|org_1|${start}|nocount|b2`, at: window.since, data: { ...window, folded: 5, unclaimed: true } }, options(transport));
    expect(sent.map((m) => m.subject.replace(/ since.*/, ''))).toEqual(addresses.map(() => '5 more new leads'));
    expect([...cap.items.values()].map((i) => i.claims)).toEqual([[]]);
    // A round-1 summary whose claim holds no lead past the cap: no "0 more new leads".
    expect(await sendQueuedMessage(deps, { organizationId: 'org_1', kind: 'lead.summary', key: `lead.summary|org_1|${start}`, at: window.since, data: { ...window, folded: 1, round: 1 } }, options(transport))).toEqual({ sent: 0, skipped: 0, rejected: 0, held: 0 });
    expect(sent).toHaveLength(3);
  });

  it('sends a confirmation with an "I did not ask for this" link and List-Unsubscribe headers', async () => {
    const pending = recipientItem('org_1', { email: 'new@shop.example', notices: ['lead.created'], status: 'pending', addedAt: 5 });
    const stores = memoryStores();
    stores.organizations.items.set(`${pending.pk}\u0000${pending.sk}`, pending);
    const sent: OutgoingMail[] = [];
    const transport: MailTransport = { send: async (mail) => { sent.push(mail); } };
    const withMarks = noticeMarkPort.with(stores.deps, memoryMarks().store);
    await sendQueuedMessage(withMarks, { organizationId: 'org_1', kind: 'recipient.confirm', key: 'confirm#5', at: '2030-01-15T12:00:00.000Z', data: { email: 'new@shop.example', addedAt: 5 } }, options(transport));
    expect(sent).toHaveLength(1);
    expect(sent[0].headers?.['List-Unsubscribe']).toMatch(/^<https:\/\/crm\.example\/.*unsubscribe.*>$/);
    expect(sent[0].headers?.['List-Unsubscribe-Post']).toBe('List-Unsubscribe=One-Click');
    expect(sent[0].text).toContain('I did not ask for this');
    expect(sent[0].html).toContain('I did not ask for this');
  });
});

describe('an address the mail server refuses for good (SMTP 550 to its RCPT TO)', () => {
  const server = new TestMailServer();
  beforeAll(() => server.up());
  afterAll(() => server.stop());
  beforeEach(() => { server.refusing.clear(); jest.spyOn(logger, 'warn').mockImplementation(() => undefined); });
  afterEach(() => { jest.restoreAllMocks(); });

  it('is suppressed as rejected (with when) and not tried again, while the others get the notice once', async () => {
    const { deps, clock } = setup();
    server.refusing.add(addresses[1]);
    const transport = mailTransport(parseConfig({ local: true, noticeSmtpUrl: `smtp://127.0.0.1:${server.port}`, noticeSendTimeoutMs: 2000 }));
    expect(await sendQueuedMessage(deps, notice('r1'), options(transport))).toEqual({ sent: 2, skipped: 0, rejected: 1, held: 0 });
    expect([addresses[0], addresses[2]].map((a) => server.to(a).length)).toEqual([1, 1]);
    expect(server.rejected).toBe(1);
    const recipients = await listRecipients(deps, 'org_1');
    expect(recipients.find((r) => r.email === addresses[1])).toMatchObject({ status: 'suppressed', suppressedReason: 'rejected', suppressedAt: new Date(deps.now()).toISOString() });
    // The same message again (a retry, a redelivered dead letter) and the next notice: the refused address is not tried.
    expect(await sendQueuedMessage(deps, notice('r1'), options(transport))).toEqual({ sent: 0, skipped: 2, rejected: 0, held: 0 });
    expect(await sendQueuedMessage(deps, notice('r2'), options(transport))).toEqual({ sent: 2, skipped: 0, rejected: 0, held: 0 });
    expect(server.rejected).toBe(1);
    // It stays suppressed while listed; removed, an admin may add it again: pending, with a fresh confirmation.
    clock.advance(60_000);
    await setRecipients(deps, 'org_1', []);
    const again = await setRecipients(deps, 'org_1', [{ email: addresses[1], notices: ['lead.created'] }]);
    expect(again.added).toEqual([addresses[1]]);
    expect(again.recipients[0]).toMatchObject({ email: addresses[1], status: 'pending', addedAt: deps.now() });
    // Removed and added once more within the week: pending for that same addition, no third e-mail.
    const readdedAt = deps.now();
    clock.advance(3_600_000);
    await setRecipients(deps, 'org_1', []);
    expect((await setRecipients(deps, 'org_1', [{ email: addresses[1], notices: ['lead.created'] }])).recipients[0]).toMatchObject({ status: 'pending', addedAt: readdedAt });
  });

  const transportOf = () => mailTransport(parseConfig({ local: true, noticeSmtpUrl: `smtp://127.0.0.1:${server.port}`, noticeSendTimeoutMs: 2000 }));
  const statuses = async (deps: Deps) => (await listRecipients(deps, 'org_1')).map((r) => r.status);

  it.each([
    ['a refused MAIL FROM (550 5.7.1 sender not authorized)', () => { server.mailFromAnswer = { code: 550, text: '5.7.1 Sender not authorized' }; }],
    ['a policy refusal of the RCPT TO (550 5.7.1 relaying denied)', () => { for (const a of addresses) server.answers.set(a, { code: 550, text: '5.7.1 Relaying denied' }); }],
    ['a 530 to the RCPT TO (5.7.0 authentication required)', () => { for (const a of addresses) server.answers.set(a, { code: 530, text: '5.7.0 Authentication required' }); }],
    ['a sender refusal at the RCPT TO (550 5.1.8 sender address rejected)', () => { for (const a of addresses) server.answers.set(a, { code: 550, text: '5.1.8 <noreply@crm.example>: Sender address rejected: Domain not found' }); }],
    ['a bad sender mailbox syntax at the RCPT TO (553 5.1.7)', () => { for (const a of addresses) server.answers.set(a, { code: 553, text: '5.1.7 Bad sender address syntax' }); }],
  ])('%s suppresses nobody: the transport is at fault, the message is tried again, its other addresses not tried now', async (_name, refuse) => {
    const { deps } = setup();
    const received = server.received.length;
    refuse();
    try {
      await expect(sendQueuedMessage(deps, notice('p1'), options(transportOf()))).rejects.toThrow(NoticeNotSent);
    } finally {
      server.mailFromAnswer = undefined;
      server.answers.clear();
    }
    expect(await statuses(deps)).toEqual(['confirmed', 'confirmed', 'confirmed']);
    expect(server.received.length).toBe(received);
    // The server fixed: every address gets it.
    expect(await sendQueuedMessage(deps, notice('p1'), options(transportOf()))).toEqual({ sent: 3, skipped: 0, rejected: 0, held: 0 });
  });

  it('an address refused as an address (550 5.1.10, a plain 553) is suppressed', async () => {
    const { deps } = setup();
    server.answers.set(addresses[0], { code: 550, text: '5.1.10 Recipient address rejected: null MX' });
    server.answers.set(addresses[2], { code: 553, text: 'mailbox name not allowed' });
    try {
      expect(await sendQueuedMessage(deps, notice('a1'), options(transportOf()))).toEqual({ sent: 1, skipped: 0, rejected: 2, held: 0 });
    } finally { server.answers.clear(); }
    expect(await statuses(deps)).toEqual(['suppressed', 'confirmed', 'suppressed']);
  });

  it('a breaker: past REJECTION_LIMIT distinct addresses refused in 10 minutes (by any mailer), none more is suppressed: an error, MailRejectionsHeld, not sent; tried again by a later try', async () => {
    const { deps, rejections } = setup();
    const errors = jest.spyOn(logger, 'error').mockImplementation(() => undefined);
    const held = jest.spyOn(metrics, 'addMetric').mockImplementation(() => metrics);
    // Other organizations' addresses refused in this window (other mailer instances): one short of the limit.
    const window = deps.now() - (deps.now() % REJECTION_WINDOW_MS);
    rejections.windows.set(window, new Set(Array.from({ length: REJECTION_LIMIT - 1 }, (_, i) => `other${i}`)));
    for (const a of addresses) server.refusing.add(a);
    try {
      expect(await sendQueuedMessage(deps, notice('b1'), options(transportOf()))).toEqual({ sent: 0, skipped: 0, rejected: 1, held: 2 });
    } finally { server.refusing.clear(); }
    // The limit's last one suppressed; the next one trips the breaker, the third is held too.
    expect(await statuses(deps)).toEqual(['suppressed', 'confirmed', 'confirmed']);
    expect(errors).toHaveBeenCalledWith(expect.stringContaining('too many addresses refused'), expect.anything());
    expect(held).toHaveBeenCalledWith('MailRejectionsHeld', expect.anything(), 1);
    // The server fixed: the held addresses get the notice.
    expect(await sendQueuedMessage(deps, notice('b1'), options(transportOf()))).toEqual({ sent: 2, skipped: 0, rejected: 0, held: 0 });
  });

  const orgKey = addressHash('org_1');
  const entriesOf = (organization: string, n: number) => Array.from({ length: n }, (_, i) => `${organization}.x${i}`);

  it('the breaker latches: tripped, nothing is suppressed for an hour, even in a later window, extended while fresh refusals go on past the limit; then it closes', async () => {
    const { deps, rejections, clock } = setup();
    jest.spyOn(metrics, 'addMetric').mockImplementation(() => metrics);
    const window = deps.now() - (deps.now() % REJECTION_WINDOW_MS);
    // Refused addresses of three other organizations, two each: the service's count at 6, past the limit.
    rejections.windows.set(window, new Set(['o1', 'o2', 'o3'].flatMap((o) => entriesOf(o, 2))));
    server.refusing.add(addresses[0]);
    try {
      expect(await sendQueuedMessage(deps, notice('l1'), options(transportOf()))).toEqual({ sent: 2, skipped: 0, rejected: 0, held: 1 });
      expect(rejections.latches.get('')).toBe(deps.now() + REJECTION_LATCH_MS);
      // Three windows on, nothing counted since but this one refusal: still latched, held.
      clock.advance(3 * REJECTION_WINDOW_MS);
      expect(await sendQueuedMessage(deps, notice('l2'), options(transportOf()))).toEqual({ sent: 2, skipped: 0, rejected: 0, held: 1 });
      expect(await statuses(deps)).toEqual(['confirmed', 'confirmed', 'confirmed']);
      // Not extended by one refusal under the limit.
      expect(rejections.latches.get('')).toBe(deps.now() - 3 * REJECTION_WINDOW_MS + REJECTION_LATCH_MS);
      // Past the limit again (other mailers'), the same address refused once more: not fresh, not extended.
      const later = deps.now() - (deps.now() % REJECTION_WINDOW_MS);
      rejections.windows.set(later, new Set(['o4', 'o5', 'o6'].flatMap((o) => entriesOf(o, 2))));
      expect(await sendQueuedMessage(deps, notice('l2b'), options(transportOf()))).toEqual({ sent: 2, skipped: 0, rejected: 0, held: 1 });
      expect(rejections.latches.get('')).toBe(deps.now() - 3 * REJECTION_WINDOW_MS + REJECTION_LATCH_MS);
      // A fresh refusal past the limit: extended.
      server.refusing.add(addresses[1]);
      expect(await sendQueuedMessage(deps, notice('l2c'), options(transportOf()))).toEqual({ sent: 1, skipped: 0, rejected: 0, held: 2 });
      server.refusing.delete(addresses[1]);
      expect(rejections.latches.get('')).toBe(deps.now() + REJECTION_LATCH_MS);
      // The latch over, a lone refusal is suppressed again.
      clock.advance(REJECTION_LATCH_MS);
      expect(await sendQueuedMessage(deps, notice('l3'), options(transportOf()))).toEqual({ sent: 2, skipped: 0, rejected: 1, held: 0 });
    } finally { server.refusing.clear(); }
  });

  it('counts the previous window too: past the limit across a window boundary, the breaker trips', async () => {
    const { deps, rejections, clock } = setup();
    jest.spyOn(metrics, 'addMetric').mockImplementation(() => metrics);
    const window = deps.now() - (deps.now() % REJECTION_WINDOW_MS);
    clock.advance(window + REJECTION_WINDOW_MS + REJECTION_WINDOW_MS / 10 - deps.now());
    // The window before: five organizations' refusals (its last minutes' weigh in at 9/10).
    rejections.windows.set(window, new Set(['o1', 'o2', 'o3', 'o4', 'o5'].flatMap((o) => entriesOf(o, 1))));
    server.refusing.add(addresses[0]);
    try {
      expect(await sendQueuedMessage(deps, notice('s1'), options(transportOf()))).toEqual({ sent: 2, skipped: 0, rejected: 0, held: 1 });
    } finally { server.refusing.clear(); }
    expect(await statuses(deps)).toEqual(['confirmed', 'confirmed', 'confirmed']);
    expect(rejections.latches.get('')).toBe(deps.now() + REJECTION_LATCH_MS);
  });

  it('one organization cannot trip it for all: past the limit it holds its own refusals alone (its other addresses still get the notice), another organization\'s refusal is suppressed', async () => {
    const { deps, rejections } = setup();
    const errors = jest.spyOn(logger, 'error').mockImplementation(() => undefined);
    jest.spyOn(metrics, 'addMetric').mockImplementation(() => metrics);
    const window = deps.now() - (deps.now() % REJECTION_WINDOW_MS);
    // org_1's own refused addresses: five already, and one of another organization's.
    rejections.windows.set(window, new Set([...entriesOf(orgKey, 5), 'o2.x0']));
    server.refusing.add(addresses[0]);
    const before = server.to(addresses[1]).length;
    try {
      expect(await sendQueuedMessage(deps, notice('o1'), options(transportOf()))).toEqual({ sent: 2, skipped: 0, rejected: 0, held: 1 });
      expect(await statuses(deps)).toEqual(['confirmed', 'confirmed', 'confirmed']);
      expect(server.to(addresses[1]).length).toBe(before + 1);
      // The log names the organization and its latch's hash key (the runbook's `MAILREJECT#TRIPPED#<hash>`).
      expect(errors).toHaveBeenCalledWith(expect.stringContaining('this organization'), expect.objectContaining({ organizationId: 'org_1', organizationKey: orgKey }));
      expect(rejections.latches.get(orgKey)).toBe(deps.now() + REJECTION_LATCH_MS);
      expect(rejections.latches.has('')).toBe(false);
      // Another organization's address refused now: suppressed (the service's count is 2 + 1 + 1).
      const other = memoryStores();
      const item = recipientItem('org_2', { email: 'z@other.example', notices: ['lead.created'], status: 'confirmed', addedAt: 1 });
      other.organizations.items.set(`${item.pk}\u0000${item.sk}`, item);
      other.clock.set(new Date(deps.now()).toISOString());
      const otherDeps = rejectionCountPort.with(noticeMarkPort.with(other.deps, memoryMarks().store), rejections);
      server.refusing.add('z@other.example');
      const otherNotice = { ...notice('o2'), organizationId: 'org_2' };
      expect(await sendQueuedMessage(otherDeps, otherNotice, options(transportOf()))).toEqual({ sent: 0, skipped: 0, rejected: 1, held: 0 });
    } finally { server.refusing.clear(); }
  });

  it('one organization refusing 32+ addresses never trips the breaker for all: it adds at most REJECTION_LIMIT + 1 to a window, none while held', async () => {
    const dead = Array.from({ length: 40 }, (_, i) => `dead${i}@shop.example`);
    const { deps, rejections } = setup(0, [...dead, 'live@shop.example']);
    jest.spyOn(logger, 'error').mockImplementation(() => undefined);
    jest.spyOn(metrics, 'addMetric').mockImplementation(() => metrics);
    const transport = refusingTransport(new Set(dead));
    expect(await sendQueuedMessage(deps, notice('f1'), options(transport))).toEqual({ sent: 1, skipped: 0, rejected: REJECTION_LIMIT, held: 40 - REJECTION_LIMIT });
    const window = deps.now() - (deps.now() % REJECTION_WINDOW_MS);
    expect(rejections.windows.get(window)?.size).toBe(REJECTION_LIMIT + 1);
    expect(rejections.latches.has('')).toBe(false);
    expect(rejections.latches.get(orgKey)).toBe(deps.now() + REJECTION_LATCH_MS);
    // Another organization's lone refusal is still suppressed.
    const other = memoryStores();
    const item = recipientItem('org_2', { email: 'z@other.example', notices: ['lead.created'], status: 'confirmed', addedAt: 1 });
    other.organizations.items.set(`${item.pk}\u0000${item.sk}`, item);
    other.clock.set(new Date(deps.now()).toISOString());
    const otherDeps = rejectionCountPort.with(noticeMarkPort.with(other.deps, memoryMarks().store), rejections);
    expect(await sendQueuedMessage(otherDeps, { ...notice('f2'), organizationId: 'org_2' }, options(refusingTransport(new Set(['z@other.example']))))).toEqual({ sent: 0, skipped: 0, rejected: 1, held: 0 });
  });

  it('a full window trips nothing: the estimate is its contents', async () => {
    const { deps, rejections } = setup();
    const window = deps.now() - (deps.now() % REJECTION_WINDOW_MS);
    // 32 entries of one (previous version's) organization's, or of a race past the cap: counts REJECTION_SHARE.
    rejections.windows.set(window, new Set(entriesOf('o1', 32)));
    expect(await sendQueuedMessage(deps, notice('w1'), options(refusingTransport(new Set([addresses[0]]))))).toEqual({ sent: 2, skipped: 0, rejected: 1, held: 0 });
    expect(rejections.latches.has('')).toBe(false);
  });

  it('while latched for all, an organization whose refused address comes first still mails its other recipients, and the message is done', async () => {
    const { deps, rejections } = setup();
    jest.spyOn(logger, 'error').mockImplementation(() => undefined);
    jest.spyOn(metrics, 'addMetric').mockImplementation(() => metrics);
    rejections.latches.set('', deps.now() + REJECTION_LATCH_MS);
    const transport = refusingTransport(new Set([addresses[0]]));
    expect(await sendQueuedMessage(deps, notice('g1'), options(transport))).toEqual({ sent: 2, skipped: 0, rejected: 0, held: 1 });
    expect(transport.sent).toEqual([addresses[1], addresses[2]]);
    expect(await statuses(deps)).toEqual(['confirmed', 'confirmed', 'confirmed']);
  });

  it('a held organization\'s dead addresses do not keep it latched: their retries extend nothing, the message is done, and once the latch ends the breaker counts afresh', async () => {
    const dead = Array.from({ length: 11 }, (_, i) => `dead${i}@shop.example`);
    const { deps, rejections, clock } = setup(0, [...dead, 'live@shop.example']);
    jest.spyOn(logger, 'error').mockImplementation(() => undefined);
    jest.spyOn(metrics, 'addMetric').mockImplementation(() => metrics);
    const transport = refusingTransport(new Set(dead));
    const start = deps.now();
    // Five suppressed, the sixth holds the organization, the other five held: the message is done all the same.
    expect(await sendQueuedMessage(deps, notice('h1'), options(transport))).toEqual({ sent: 1, skipped: 0, rejected: REJECTION_LIMIT, held: 6 });
    expect(rejections.latches.get(orgKey)).toBe(start + REJECTION_LATCH_MS);
    // The next notices, in the same window and three windows on: the same six refused, the latch not extended.
    clock.advance(REJECTION_WINDOW_MS / 2);
    expect(await sendQueuedMessage(deps, notice('h2'), options(transport))).toEqual({ sent: 1, skipped: 0, rejected: 0, held: 6 });
    clock.advance(3 * REJECTION_WINDOW_MS);
    expect(await sendQueuedMessage(deps, notice('h3'), options(transport))).toEqual({ sent: 1, skipped: 0, rejected: 0, held: 6 });
    expect(rejections.latches.get(orgKey)).toBe(start + REJECTION_LATCH_MS);
    // The latch over: five more suppressed, the last holds it again (a new latch, its own entry alone).
    clock.set(new Date(start + REJECTION_LATCH_MS).toISOString());
    expect(await sendQueuedMessage(deps, notice('h4'), options(transport))).toEqual({ sent: 1, skipped: 0, rejected: REJECTION_LIMIT, held: 1 });
    expect(rejections.latchEntries.get(orgKey)?.size).toBe(1);
  });

  it('a refusal whose count cannot be written suppresses nobody: tried again', async () => {
    const { deps, rejections } = setup();
    rejections.failures = 10;
    server.refusing.add(addresses[0]);
    try {
      await expect(sendQueuedMessage(deps, notice('c1'), options(transportOf()))).rejects.toThrow(NoticeNotSent);
    } finally { server.refusing.clear(); }
    expect(await statuses(deps)).toEqual(['confirmed', 'confirmed', 'confirmed']);
  });
});
