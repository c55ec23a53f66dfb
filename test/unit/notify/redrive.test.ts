/**
 * The re-drive of notices the notices queue refused (functions/core/notify/produce.ts
 * redriveUnqueuedNotices), on the kept notices' twin, a queue the test makes refuse, and a clock
 * the test moves: one item the queue refuses never holds back the others, one refused too often
 * while others go is set aside (an outage sets nothing aside), the run goes page after page until
 * its deadline, and the backlog is a metric.
 */
import { describe, it, expect, jest, beforeEach } from '@jest/globals';
import { MetricUnit } from '@aws-lambda-powertools/metrics';
import { logger, metrics } from '../../../functions/core/platform/observability.js';
import type { NoticeMessage } from '../../../functions/core/notify/notice.js';
import { MAX_REDRIVE_TRIES, noticeQueuePort, redriveUnqueuedNotices, type NoticeQueue } from '../../../functions/core/notify/produce.js';
import { unqueuedNoticesPort, UNQUEUED_PARTITIONS } from '../../../functions/core/notify/unqueued-notices-store.js';
import { enqueueNotices, NoticesRefused } from '../../../functions/core/notify/notices-queue.js';
import type { Deps } from '../../../functions/core/platform/deps.js';
import { MemoryUnqueuedNotices } from '../../support/stores/memory-unqueued-notices.js';
import { memoryStores } from '../../support/stores/memory-deps.js';

const loggedError = jest.spyOn(logger, 'error').mockImplementation(() => undefined);
jest.spyOn(logger, 'warn').mockImplementation(() => undefined);
jest.spyOn(logger, 'info').mockImplementation(() => undefined);
const metric = jest.spyOn(metrics, 'addMetric').mockImplementation(() => metrics);

const notice = (organizationId: string, n: number): NoticeMessage => ({
  organizationId, kind: 'lead.created', key: `lead.created|${organizationId}|cli_${n}`, at: '2030-01-15T12:00:00.000Z', data: { clientId: `cli_${n}` },
});

/**
 * A queue that refuses the notices `refuses` picks for good (SendMessageBatch's entries with
 * SenderFault), and everything while `down` or for its next `throttles` calls (the queue's side);
 * each call takes `callMs` of the clock.
 */
class PickyQueue implements NoticeQueue {
  readonly sent: NoticeMessage[] = [];
  down = false;
  throttles = 0;
  constructor(private readonly refuses: (n: NoticeMessage) => boolean, private readonly advance: (ms: number) => void, private readonly callMs = 0) {}
  async enqueue(messages: NoticeMessage[]): Promise<void> {
    this.advance(this.callMs);
    if (this.down) throw Object.assign(new Error('unavailable'), { name: 'QueueUnavailable' });
    if (this.throttles > 0) {
      this.throttles -= 1;
      throw Object.assign(new Error('throttled'), { name: 'RequestThrottled' });
    }
    const refused = messages.filter(this.refuses);
    if (refused.length) throw new NoticesRefused(refused.map(() => 'InvalidMessageContents'), true);
    this.sent.push(...messages);
  }
}

function given(refuses: (n: NoticeMessage) => boolean = () => false, callMs = 0) {
  const stores = memoryStores({ now: '2030-01-15T12:00:00.000Z' });
  const kept = new MemoryUnqueuedNotices();
  const queue = new PickyQueue(refuses, stores.clock.advance, callMs);
  const deps = noticeQueuePort.with(unqueuedNoticesPort.with(stores.deps, kept), queue);
  return { ...stores, deps, kept, queue };
}

beforeEach(() => { loggedError.mockClear(); metric.mockClear(); });

describe('the re-drive of unqueued notices', () => {
  it('hands over every other item when the queue refuses one, and counts the refused one\'s tries', async () => {
    const { deps, kept, queue, clock } = given((n) => n.organizationId === 'org_bad');
    for (const org of ['org_a', 'org_bad', 'org_c', 'org_d']) await kept.keep([notice(org, 1), notice(org, 2)], clock.now());
    expect(await redriveUnqueuedNotices(deps)).toBe(6);
    expect(queue.sent.map((n) => n.organizationId).sort()).toEqual(['org_a', 'org_a', 'org_c', 'org_c', 'org_d', 'org_d']);
    const [left] = [...kept.partitions.values()].flatMap((items) => [...items.values()]);
    expect(left).toMatchObject({ tries: 1, notices: [notice('org_bad', 1), notice('org_bad', 2)] });
  });

  it(`sets aside an item refused ${MAX_REDRIVE_TRIES} times while the queue took others, logged and counted, where an operator reads it`, async () => {
    const { deps, kept, clock } = given((n) => n.organizationId === 'org_bad');
    await kept.keep([notice('org_bad', 1)], clock.now());
    for (let run = 1; run <= MAX_REDRIVE_TRIES; run++) {
      await kept.keep([notice('org_ok', run)], clock.now()); // the queue takes other notices meanwhile
      await redriveUnqueuedNotices(deps);
      clock.advance(60_000);
    }
    expect(kept.items.size).toBe(0);
    expect(kept.setAsideItems).toEqual([expect.objectContaining({ tries: MAX_REDRIVE_TRIES, reason: 'InvalidMessageContents', notices: [notice('org_bad', 1)] })]);
    expect(loggedError).toHaveBeenCalledWith(expect.stringContaining('set aside'), expect.objectContaining({ organizationId: 'org_bad', tries: MAX_REDRIVE_TRIES }));
    expect(metric).toHaveBeenCalledWith('NoticesSetAside', MetricUnit.Count, 1);
  });

  it('sets nothing aside while the queue refuses everything (an outage), and hands all over once it is back', async () => {
    const { deps, kept, queue, clock } = given();
    await kept.keep([notice('org_a', 1)], clock.now());
    await kept.keep([notice('org_b', 1)], clock.now());
    queue.down = true;
    for (let run = 0; run < MAX_REDRIVE_TRIES + 3; run++) {
      expect(await redriveUnqueuedNotices(deps)).toBe(0);
      clock.advance(60_000);
    }
    expect(kept.setAsideItems).toEqual([]);
    queue.down = false;
    expect(await redriveUnqueuedNotices(deps)).toBe(2);
    expect(kept.items.size).toBe(0);
  });

  it('sets nothing healthy aside after a long outage: not the items refused before the queue came back mid-run, nor one throttled later, and counts no try meanwhile', async () => {
    const { deps, kept, queue, clock } = given(() => false, 10);
    for (let n = 0; n < 60; n++) await kept.keep([notice(`org_${n}`, n)], clock.now());
    const failed = jest.spyOn(kept, 'failed');
    queue.down = true;
    for (let run = 0; run < MAX_REDRIVE_TRIES + 5; run++) {
      await redriveUnqueuedNotices(deps);
      clock.advance(60_000);
    }
    expect(failed).not.toHaveBeenCalled(); // an outage writes nothing per item
    // Back mid-run: the first pages were refused, the rest went.
    queue.down = false;
    queue.throttles = 30;
    const first = await redriveUnqueuedNotices(deps);
    expect(first).toBe(30);
    clock.advance(60_000);
    // A throttle afterwards, once.
    queue.throttles = 1;
    await redriveUnqueuedNotices(deps);
    clock.advance(60_000);
    await redriveUnqueuedNotices(deps);
    expect(kept.setAsideItems).toEqual([]);
    expect(kept.items.size).toBe(0);
    expect(queue.sent).toHaveLength(60);
  });

  it('starts each minute at the next partition, so a run cut short by its deadline never starves the last ones', async () => {
    const { deps, kept, queue, clock } = given(() => false, 1_000);
    for (let n = 0; n < 800; n++) await kept.keep([notice(`org_${n}`, n)], clock.now());
    const where = new Map([...kept.partitions].flatMap(([pk, items]) => [...items.values()].map((k) => [k.notices[0].organizationId, pk] as const)));
    const served = new Set<string>();
    for (let run = 0; run < UNQUEUED_PARTITIONS.length; run++) {
      clock.advance(60_000 - (clock.now() % 60_000)); // the next minute's run
      const before = queue.sent.length;
      await redriveUnqueuedNotices(deps, { deadline: clock.now() + 1_000 }); // one page a run
      for (const n of queue.sent.slice(before)) served.add(where.get(n.organizationId)!);
    }
    expect([...served].sort()).toEqual(UNQUEUED_PARTITIONS.slice(0, -1).slice().sort());
  });

  it('drains page after page in one run, and stops at its deadline leaving the rest for the next minute', async () => {
    const { deps, kept, queue, clock } = given(() => false, 100);
    for (let n = 0; n < 300; n++) await kept.keep([notice(`org_${n}`, n)], clock.now());
    // 300 items of 100 ms each: 30 s; the run has 20 s.
    const first = await redriveUnqueuedNotices(deps);
    expect(first).toBeGreaterThan(100);
    expect(first).toBeLessThan(300);
    expect(kept.items.size).toBe(300 - first);
    expect(await redriveUnqueuedNotices(deps)).toBe(300 - first);
    expect(queue.sent).toHaveLength(300);
  });

  it('counts a run that cannot read the kept items (NoticesRedriveFailed): no backlog metric would tell', async () => {
    const { deps, kept } = given();
    jest.spyOn(kept, 'waiting').mockRejectedValue(Object.assign(new Error('throttled'), { name: 'ProvisionedThroughputExceededException' }));
    await expect(redriveUnqueuedNotices(deps)).rejects.toThrow('throttled');
    expect(metric).toHaveBeenCalledWith('NoticesRedriveFailed', MetricUnit.Count, 1);
    expect(metric).not.toHaveBeenCalledWith('UnqueuedNoticesWaiting', expect.anything(), expect.anything());
  });

  it('emits the backlog: how many items wait and the oldest one\'s age', async () => {
    const { deps, kept, queue, clock } = given();
    await kept.keep([notice('org_a', 1)], clock.now());
    clock.advance(120_000);
    await kept.keep([notice('org_b', 1)], clock.now());
    clock.advance(60_000);
    queue.down = true;
    await redriveUnqueuedNotices(deps);
    expect(metric).toHaveBeenCalledWith('UnqueuedNoticesWaiting', MetricUnit.Count, 2);
    expect(metric).toHaveBeenCalledWith('UnqueuedNoticesOldestAgeSeconds', MetricUnit.Seconds, 180);
    queue.down = false;
    metric.mockClear();
    await redriveUnqueuedNotices(deps);
    expect(metric).toHaveBeenCalledWith('UnqueuedNoticesWaiting', MetricUnit.Count, 0);
  });
});

describe('what the notices queue answers (enqueueNotices)', () => {
  const sqsAnswering = (answer: () => Promise<unknown>) => ({ sqs: { send: answer }, queues: { noticesQueue: 'q' }, now: () => 0 } as unknown as Deps);

  it('names the refused entries\' codes, and says refused for good when SQS blames the message (SenderFault)', async () => {
    const forGood = enqueueNotices(sqsAnswering(async () => ({ Failed: [{ Id: '0', Code: 'InvalidMessageContents', SenderFault: true }] })), [notice('org_a', 1)]);
    await expect(forGood).rejects.toMatchObject({ name: 'NoticesRefused', codes: ['InvalidMessageContents'], permanent: true });
    const queueSide = enqueueNotices(sqsAnswering(async () => ({ Failed: [{ Id: '0', Code: 'InternalError', SenderFault: false }] })), [notice('org_a', 1)]);
    await expect(queueSide).rejects.toMatchObject({ name: 'NoticesRefused', codes: ['InternalError'], permanent: false });
  });

  it('sets aside an item SQS refuses for good with the entry\'s code as its reason', async () => {
    const stores = memoryStores({ now: '2030-01-15T12:00:00.000Z' });
    const kept = new MemoryUnqueuedNotices();
    const deps = { ...unqueuedNoticesPort.with(stores.deps, kept), queues: { noticesQueue: 'q' }, sqs: {
      send: async (command: { input: { Entries: { Id: string; MessageBody: string }[] } }) => ({
        Failed: command.input.Entries.filter((e) => e.MessageBody.includes('org_bad')).map((e) => ({ Id: e.Id, Code: 'InvalidMessageContents', SenderFault: true })),
      }),
    } } as unknown as Deps;
    await kept.keep([notice('org_bad', 1)], stores.clock.now());
    for (let run = 1; run <= MAX_REDRIVE_TRIES; run++) {
      await kept.keep([notice('org_ok', run)], stores.clock.now());
      await redriveUnqueuedNotices(deps);
      stores.clock.advance(60_000);
    }
    expect(kept.setAsideItems).toEqual([expect.objectContaining({ reason: 'InvalidMessageContents', notices: [notice('org_bad', 1)] })]);
  });
});
