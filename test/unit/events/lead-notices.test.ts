/**
 * The lead notices a stream batch produces (functions/core/events/lead-notices.ts), through the
 * fan-out's stream adapter on twins: an in-memory notices queue, the cap counter's twin, no
 * endpoints, and a clock the test moves. A mailer sends each notice key once, so "once" below is
 * one key, and the cap counts one write per organization per batch.
 */
import { describe, it, expect, jest, beforeEach } from '@jest/globals';
import type { DynamoDBRecord } from 'aws-lambda';
import { fanOutStreamBatch } from '../../../functions/event-fanout/stream-batch.js';
import { keys } from '../../../functions/core/platform/model.js';
import { logger } from '../../../functions/core/platform/observability.js';
import { withEndpointStore } from '../../../functions/core/delivery/endpoint-store.js';
import { noticeQueuePort, redriveUnqueuedNotices } from '../../../functions/core/notify/produce.js';
import { unqueuedNoticesPort } from '../../../functions/core/notify/unqueued-notices-store.js';
import { MemoryUnqueuedNotices } from '../../support/stores/memory-unqueued-notices.js';
import { MemoryDeliveryQueue, MemoryDeliveryStore } from '../../integration/delivery-core/support/memory-delivery.js';
import { withDeliveryPorts } from '../../../functions/core/delivery/delivery-port.js';
import { retryLostRaces } from '../../../functions/core/platform/optimistic.js';
import type { WebhookEndpoint } from '../../../functions/core/platform/model.js';
import { noticeCapPort } from '../../../functions/core/notify/notice-cap-store.js';
import { MemoryEndpointStore } from '../../support/memory-endpoint-store.js';
import { MemoryNoticeQueue } from '../../support/memory-notice-queue.js';
import { MemoryNoticeCapStore } from '../../support/stores/memory-notice-cap-store.js';
import { memoryStores } from '../../support/stores/memory-deps.js';
import { parseConfig } from '../../../functions/core/platform/config.js';
import { streamRecord } from './given-stream.js';
import { newLeadsOf } from '../../../functions/core/events/lead-statistics.js';
import type { StreamChange } from '../../../functions/core/events/stream-changes.js';

const loggedError = jest.spyOn(logger, 'error').mockImplementation(() => undefined);

const ORG = 'org_notices';
let n = 0;

/** A client item as lead intake writes it (intake/lead-client.ts clientItem). */
function leadItem(fields: Record<string, unknown> = {}, organizationId = ORG) {
  const id = `cli_${String(++n).padStart(6, '0')}`;
  return {
    ...keys.client(organizationId, id), entity: 'client', id, organization_id: organizationId, status: 'lead', source: 'api',
    first_name: 'Ada', last_name: `Lovelace ${n}`, email: `ada${n}@example.com`, sms_consent: false, submission_count: 1,
    created_at: '2030-01-15T12:00:00.000Z', updated_at: '2030-01-15T12:00:00.000Z', request_id: `req_${n}`, key_id: 'key_1', ...fields,
  };
}
const inserted = (item: Record<string, unknown>) => streamRecord('aws', 'INSERT', { new: item });

function given(config: Record<string, unknown> = {}) {
  const stores = memoryStores({ now: '2030-01-15T12:00:00.000Z', config: { leadNoticeCap: 20, leadNoticeWindowSeconds: 600, ...config } });
  const queue = new MemoryNoticeQueue();
  const cap = new MemoryNoticeCapStore();
  const endpoints = new MemoryEndpointStore();
  let deps = withEndpointStore(stores.deps, endpoints);
  deps = noticeQueuePort.with(deps, queue);
  deps = noticeCapPort.with(deps, cap);
  const unqueued = new MemoryUnqueuedNotices();
  deps = unqueuedNoticesPort.with(deps, unqueued);
  const run = (records: DynamoDBRecord[]) => fanOutStreamBatch(deps, records);
  return { ...stores, deps, queue, cap, unqueued, endpoints, run };
}

beforeEach(() => { n = 0; });

describe('a new lead', () => {
  it('is one lead.created notice with its name, contact details, service, source and notes', async () => {
    const { queue, run } = given();
    const item = leadItem({ phone: '+14155550100', service: 'Leaky faucet', notes: 'Call after 5', address: '1 Main St' });
    expect(await run([inserted(item)])).toEqual({ batchItemFailures: [] });
    expect(queue.messages).toEqual([{
      organizationId: ORG, kind: 'lead.created', key: `lead.created|${ORG}|${item.id}`, at: '2030-01-15T12:00:00.000Z',
      data: { clientId: item.id, name: `Ada ${item.last_name}`, email: item.email, phone: '+14155550100', service: 'Leaky faucet', notes: 'Call after 5', address: '1 Main St', source: 'lead_endpoint' },
    }]);
    expect(queue.calls).toBe(1);
  });

  it('is still one notice when the stream batch is retried, and counts once against the cap', async () => {
    const { queue, cap, run } = given();
    const records = [inserted(leadItem()), inserted(leadItem())];
    await run(records);
    await run(records);
    expect(queue.unique.map((m) => m.kind)).toEqual(['lead.created', 'lead.created']);
    expect([...cap.items.values()].map((i) => i.leads)).toEqual([2]);
  });

  it('does not fail the batch (nor hold back or repeat its deliveries) when the notices queue cannot take it: the notice is kept and the sweeper hands it over once', async () => {
    const { queue, unqueued, deps: base, clock, endpoints } = given();
    jest.spyOn(logger, 'warn').mockImplementation(() => undefined);
    // An endpoint that hears of new leads: the batch's webhook delivery goes out whatever the notices queue does.
    await retryLostRaces('given', () => endpoints.createEndpoint({ id: 'ep_1', organizationId: ORG, url: 'https://hooks.example/a', events: ['*'], secrets: [], enabled: true, createdAt: '2030-01-01T00:00:00.000Z' } as unknown as WebhookEndpoint, 10));
    const deliveryQueue = new MemoryDeliveryQueue(clock.now);
    const deps = withDeliveryPorts(base, { store: new MemoryDeliveryStore(clock.now), queue: deliveryQueue });
    const records = [inserted(leadItem())];
    queue.failing = true;
    expect(await fanOutStreamBatch(deps, records)).toEqual({ batchItemFailures: [] });
    expect(deliveryQueue.queues.deliveryQueue).toHaveLength(1);
    expect(queue.messages).toEqual([]);
    expect(queue.calls).toBe(3); // tried a few times first
    expect([...unqueued.items.values()].flat().map((n) => n.kind)).toEqual(['lead.created']);
    // Still down at the next sweep: kept.
    expect(await redriveUnqueuedNotices(deps)).toBe(0);
    expect(unqueued.items.size).toBe(1);
    queue.failing = false;
    expect(await redriveUnqueuedNotices(deps)).toBe(1);
    expect(await redriveUnqueuedNotices(deps)).toBe(0);
    expect(queue.messages.map((m) => m.kind)).toEqual(['lead.created']);
    expect(unqueued.items.size).toBe(0);
  });

  it('fails the batch only when the notices can be neither queued nor kept, and the retry hands them over', async () => {
    const { queue, unqueued, run } = given();
    jest.spyOn(logger, 'warn').mockImplementation(() => undefined);
    const records = [inserted(leadItem())];
    queue.failing = true;
    unqueued.failNext = true;
    loggedError.mockClear();
    expect((await run(records)).batchItemFailures).toHaveLength(1);
    // The organization has no endpoints: the failure is still a line naming it and the batch.
    expect(loggedError).toHaveBeenCalledWith('recording or queuing deliveries or notices failed', expect.objectContaining({
      organizationId: ORG, endpointIds: '', sequenceNumber: records[0].dynamodb!.SequenceNumber,
    }));
    queue.failing = false;
    expect(await run(records)).toEqual({ batchItemFailures: [] });
    expect(queue.unique).toHaveLength(1);
  });

  it('names its source as the leads statistics do (lead endpoint, page key, no-script form); a flagged duplicate names the client it may repeat', async () => {
    const { queue, run } = given();
    // A no-script form's row is a 303 and a page's script answered 201: the channel says which, not the status.
    const items = [leadItem({ request_channel: 'form', request_status: 303, possible_duplicate_of: 'cli_earlier' }), leadItem({ request_channel: 'page' }), leadItem({ request_channel: 'form' }), leadItem()];
    await run(items.map(inserted));
    const statistics = newLeadsOf(items.map((item) => ({ kind: 'insert', keys: { pk: item.pk, sk: item.sk }, newImage: item }) as unknown as StreamChange));
    expect(queue.messages.map((m) => m.data.source)).toEqual(['no_script_form', 'page_key', 'no_script_form', 'lead_endpoint']);
    expect(queue.messages.map((m) => m.data.source)).toEqual(statistics.map((l) => l.source));
    expect(queue.messages[0].data).toMatchObject({ possibleDuplicateOf: 'cli_earlier' });
  });

  it('filed under another organization produces nothing', async () => {
    const { queue, run } = given();
    jest.spyOn(logger, 'warn').mockImplementationOnce(() => undefined);
    await run([inserted({ ...leadItem(), organization_id: 'org_other' })]);
    expect(queue.messages).toEqual([]);
  });

  it('a client the CRM inserts, and edits of a lead, produce nothing', async () => {
    const { queue, run } = given();
    const lead = leadItem();
    await run([
      inserted(leadItem({ source: 'crm' })),
      streamRecord('aws', 'MODIFY', { old: lead, new: { ...lead, status: 'customer', updated_at: '2030-01-15T12:01:00.000Z' } }),
    ]);
    expect(queue.messages).toEqual([]);
  });
});

describe('a lead merged into an earlier client', () => {
  it('is a lead.returning notice, never a second lead.created', async () => {
    const { queue, run } = given();
    const earlier = leadItem();
    const merged = {
      ...earlier, submission_count: 2, updated_at: '2030-01-15T12:05:00.000Z',
      submissions: [{ at: '2030-01-15T12:05:00.000Z', source: 'api', key_id: 'key_1', request_id: 'req_merge', sms_consent: false, service: 'Boiler' }],
    };
    await run([inserted(earlier)]);
    const merge = [streamRecord('aws', 'MODIFY', { old: earlier, new: merged })];
    await run(merge);
    await run(merge); // retried
    expect(queue.unique.map((m) => [m.kind, m.key])).toEqual([
      ['lead.created', `lead.created|${ORG}|${earlier.id}`],
      ['lead.returning', `lead.returning|${ORG}|${earlier.id}|2|req_merge`],
    ]);
    expect(queue.unique[1].data).toMatchObject({ clientId: earlier.id, submission: 2, service: 'Boiler' });
  });
});

describe('an import past the cap', () => {
  it('1,000 leads produce the cap and one summary, with one counter write per batch', async () => {
    const { queue, cap, clock, run } = given();
    for (let batch = 0; batch < 10; batch++) {
      await run(Array.from({ length: 100 }, () => inserted(leadItem())));
      clock.advance(20_000);
    }
    const sent = queue.unique;
    expect(sent.filter((m) => m.kind === 'lead.created')).toHaveLength(20);
    expect(sent.filter((m) => m.kind === 'lead.summary')).toEqual([expect.objectContaining({
      key: `lead.summary|${ORG}|${Date.parse('2030-01-15T12:00:00.000Z')}`,
      data: { folded: 80, cap: 20, since: '2030-01-15T12:00:00.000Z', until: '2030-01-15T12:10:00.000Z', round: 1 },
    })]);
    expect(sent.length).toBeLessThanOrEqual(21);
    expect(cap.writes).toBe(10);
    expect(queue.calls).toBe(1); // the first batch hands its notices over in one call; the folded batches hand over nothing
  });

  it('an organization under its cap is not held back by another one over it, and the next window mails one by one again', async () => {
    const { queue, clock, run } = given({ leadNoticeCap: 3 });
    await run([...Array.from({ length: 10 }, () => inserted(leadItem())), inserted(leadItem({}, 'org_small'))]);
    expect(queue.unique.filter((m) => m.organizationId === 'org_small').map((m) => m.kind)).toEqual(['lead.created']);
    expect(queue.unique.filter((m) => m.organizationId === ORG).map((m) => m.kind)).toEqual(['lead.created', 'lead.created', 'lead.created', 'lead.summary']);
    clock.advance(600_000);
    await run([inserted(leadItem())]);
    expect(queue.unique.at(-1)!.kind).toBe('lead.created');
  });

  it('the batch that reaches the cap exactly makes no summary; the next lead does', async () => {
    const { queue, run } = given({ leadNoticeCap: 2 });
    await run([inserted(leadItem()), inserted(leadItem())]);
    expect(queue.unique.map((m) => m.kind)).toEqual(['lead.created', 'lead.created']);
    await run([inserted(leadItem())]);
    await run([inserted(leadItem())]);
    expect(queue.unique.map((m) => m.kind)).toEqual(['lead.created', 'lead.created', 'lead.summary']);
    expect(queue.messages).toHaveLength(3); // the fourth lead: nothing more, the summary's window holds it
  });
});

describe('the cap under parallel lanes and retried batches', () => {
  const WINDOW_START = Date.parse('2030-01-15T12:00:00.000Z');
  const leads = (n: number) => Array.from({ length: n }, () => inserted(leadItem()));
  /** What the mailer's summary of `round` reports (it claims the count as it sends it). */
  const reported = async (cap: MemoryNoticeCapStore, round: number, capValue: number) => {
    const claimed = (await cap.claimSummary(ORG, WINDOW_START, round))!;
    return claimed.upTo - Math.max(claimed.from ?? 0, capValue);
  };

  it('counts exactly: a batch retried after another lane\'s batch gets its first answer, so nothing is counted twice and no lead is folded away', async () => {
    const { queue, cap, run } = given({ leadNoticeCap: 5 });
    const a = leads(3);
    const b = leads(3);
    await run(a);
    await run(b);
    await run(a); // retried (its deliveries failed, say) after the other lane's batch
    await run(b);
    const sent = queue.unique;
    expect(sent.filter((m) => m.kind === 'lead.created')).toHaveLength(5);
    expect(sent.filter((m) => m.kind === 'lead.summary')).toHaveLength(1);
    expect([...cap.items.values()].map((i) => i.leads)).toEqual([6]);
    expect(await reported(cap, 1, 5)).toBe(1);
  });

  it('the window\'s summary waits for the window\'s end and then reports every lead folded until it goes', async () => {
    const { queue, cap, run } = given({ leadNoticeCap: 2 });
    await run(leads(3));
    await run(leads(4));
    const summaries = queue.unique.filter((m) => m.kind === 'lead.summary');
    expect(summaries).toEqual([expect.objectContaining({ key: `lead.summary|${ORG}|${WINDOW_START}`, notBefore: '2030-01-15T12:10:00.000Z' })]);
    // 2 mailed one by one; the summary claims 7 counted: 5 folded into it.
    expect(await reported(cap, 1, 2)).toBe(5);
  });

  it('leads counted after the summary went (lagging lanes) make one follow-up per round: none dropped, none twice, no mail per batch', async () => {
    const { queue, cap, clock, run } = given({ leadNoticeCap: 2 });
    await run(leads(3));
    clock.advance(600_000);
    expect(await reported(cap, 1, 2)).toBe(1); // the mailer sent the window's summary
    const late = [leads(2), leads(3), leads(1)];
    for (const batch of late) await run(batch);
    await run(late[0]); // retried
    const followUps = queue.unique.filter((m) => m.kind === 'lead.summary' && m.data.round === 2);
    expect(followUps).toHaveLength(1);
    // A window after the first lagging batch (rounds spaced, not one per settle time).
    expect(followUps[0]).toMatchObject({ key: `lead.summary|${ORG}|${WINDOW_START}|2`, notBefore: '2030-01-15T12:20:00.000Z' });
    expect(await reported(cap, 2, 2)).toBe(6);
    // After that round went, the next lagging batch opens round 3.
    await run(leads(2));
    expect(queue.unique.filter((m) => m.kind === 'lead.summary').map((m) => m.data.round)).toEqual([1, 2, 3]);
    expect(await reported(cap, 3, 2)).toBe(2);
    // Every lead accounted for once: 2 one by one, then 1 + 6 + 2 in the summaries.
    expect(queue.unique.filter((m) => m.kind === 'lead.created')).toHaveLength(2);
    expect([...cap.items.values()].map((i) => i.leads)).toEqual([2 + 1 + 6 + 2]);
  });
});

describe('the cap\'s bounds', () => {
  const WINDOW_START = Date.parse('2030-01-15T12:00:00.000Z');
  const leads = (n: number) => Array.from({ length: n }, () => inserted(leadItem()));

  it('a counter that fails does not fail the batch: a batch within the cap mails one by one, logged', async () => {
    const { queue, cap, run } = given({ leadNoticeCap: 3 });
    cap.failNext = true;
    loggedError.mockClear();
    expect(await run(leads(3))).toEqual({ batchItemFailures: [] });
    expect(queue.unique.map((m) => m.kind)).toEqual(['lead.created', 'lead.created', 'lead.created']);
    expect(loggedError).toHaveBeenCalledWith(expect.stringContaining('cap counter failed'), expect.objectContaining({ organizationId: ORG, leads: 3 }));
  });

  it('a counter that fails once the window has counted (throttled) loses no lead: a batch past the cap is a summary of its own, claiming nothing', async () => {
    const { queue, cap, run } = given({ leadNoticeCap: 2 });
    await run(leads(1)); // the window's counter exists: 1 counted
    cap.failNext = true;
    await run(leads(5));
    const summaries = queue.unique.filter((m) => m.kind === 'lead.summary');
    expect(summaries).toHaveLength(1);
    expect(summaries[0].key).toMatch(new RegExp(`^lead\\.summary\\|${ORG}\\|${WINDOW_START}\\|nocount\\|`));
    expect(summaries[0].data).toMatchObject({ folded: 5, unclaimed: true, cap: 2 });
    // The window's counter never counted these 5 (the mailer sends the summary as it is: test/unit/notify/mailer.test.ts).
    expect([...cap.items.values()].map((i) => [i.leads, i.claims])).toEqual([[1, []]]);
  });

  it('a counter that counted the batch but failed after (its answer, the claims) mails it as counted: in the window\'s summary, not a nocount one as well', async () => {
    const { queue, cap, run } = given({ leadNoticeCap: 2 });
    await run(leads(1));
    cap.failFollowUps = 100;
    loggedError.mockClear();
    expect(await run(leads(5))).toEqual({ batchItemFailures: [] });
    expect(queue.unique.filter((m) => m.kind === 'lead.created')).toHaveLength(2);
    const summaries = queue.unique.filter((m) => m.kind === 'lead.summary');
    expect(summaries.map((m) => [m.key, m.data])).toEqual([[`lead.summary|${ORG}|${WINDOW_START}`, expect.objectContaining({ folded: 4, round: 1 })]]);
    expect(loggedError).toHaveBeenCalledWith(expect.stringContaining('answered without claims'), expect.objectContaining({ organizationId: ORG, leads: 5 }));
    expect(loggedError).not.toHaveBeenCalledWith(expect.stringContaining('go uncounted'), expect.anything());
    // The window's count holds all 6: the summary the mailer claims reports them.
    expect([...cap.items.values()].map((i) => i.leads)).toEqual([6]);
  });

  it('a window is at most 870 s, so its summary\'s wait (window end + 30 s) is one queue delay of at most 900 s', async () => {
    // A longer one stored before this bound still parses: used as 870, with a warning naming it.
    const warned = jest.spyOn(logger, 'warn').mockImplementation(() => undefined);
    expect(parseConfig({ leadNoticeWindowSeconds: 3600 }).leadNoticeWindowSeconds).toBe(870);
    expect(warned).toHaveBeenCalledWith(expect.stringContaining('leadNoticeWindowSeconds 3600 used as 870'));
    warned.mockRestore();
    expect(() => parseConfig({ leadNoticeWindowSeconds: 86_401 })).toThrow(/leadNoticeWindowSeconds must be at most 86400/);
    const { queue, clock, run } = given({ leadNoticeCap: 1, leadNoticeWindowSeconds: 870 });
    await run(leads(2));
    const summary = queue.unique.find((m) => m.kind === 'lead.summary')!;
    expect((Date.parse(summary.notBefore!) - clock.now()) / 1000).toBeLessThanOrEqual(900);
  });

  it('a lane lagging an hour past the window\'s end (a batch every 30 s) makes a few spaced follow-ups, not one per batch', async () => {
    const { queue, cap, clock, run } = given({ leadNoticeCap: 2 });
    const claimed = new Set<string>();
    /** The mailer: sends (claims) each summary once its notBefore has come. */
    const mail = async () => {
      for (const m of queue.unique.filter((q) => q.kind === 'lead.summary' && !claimed.has(q.key) && Date.parse(q.notBefore ?? '') <= clock.now())) {
        claimed.add(m.key);
        await cap.claimSummary(ORG, WINDOW_START, m.data.round as number);
      }
    };
    await run(leads(3));
    for (let t = 0; t < 140; t++) { // 70 minutes of 30-s steps: the window, then an hour of lagging batches of its leads
      clock.advance(30_000);
      await mail();
      await run(leads(1));
    }
    clock.advance(900_000);
    await mail();
    const rounds = queue.unique.filter((m) => m.kind === 'lead.summary');
    expect(rounds.length).toBeGreaterThan(1);
    expect(rounds.length).toBeLessThanOrEqual(7);
    // None dropped: the rounds' claims report every lead past the cap.
    const item = [...cap.items.values()][0];
    expect(item.claims.at(-1)).toBe(3 + 140);
    // Each follow-up waits longer than the one before, at most the queue's 900 s.
    const waits = rounds.slice(1).map((m) => Date.parse(m.notBefore!) - Date.parse(m.at));
    expect(Math.max(...waits)).toBeLessThanOrEqual(900_000);
  });
});

