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
import { unqueuedNoticesPort } from '../../../functions/core/notify/unqueued-notices-store.js';
import { MemoryUnqueuedNotices } from '../../support/stores/memory-unqueued-notices.js';
import { memoryStores } from '../../support/stores/memory-deps.js';

const loggedError = jest.spyOn(logger, 'error').mockImplementation(() => undefined);
jest.spyOn(logger, 'warn').mockImplementation(() => undefined);
jest.spyOn(logger, 'info').mockImplementation(() => undefined);
const metric = jest.spyOn(metrics, 'addMetric').mockImplementation(() => metrics);

const notice = (organizationId: string, n: number): NoticeMessage => ({
  organizationId, kind: 'lead.created', key: `lead.created|${organizationId}|cli_${n}`, at: '2030-01-15T12:00:00.000Z', data: { clientId: `cli_${n}` },
});

/** A queue that refuses the notices `refuses` picks (or all while `down`); each call takes `callMs` of the clock. */
class PickyQueue implements NoticeQueue {
  readonly sent: NoticeMessage[] = [];
  down = false;
  constructor(private readonly refuses: (n: NoticeMessage) => boolean, private readonly advance: (ms: number) => void, private readonly callMs = 0) {}
  async enqueue(messages: NoticeMessage[]): Promise<void> {
    this.advance(this.callMs);
    if (this.down || messages.some(this.refuses)) throw Object.assign(new Error('refused'), { name: 'InvalidMessageContents' });
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
