/**
 * The lead notices' cap counter's contract (functions/core/notify/notice-cap-store.ts) on DynamoDB
 * Local and its twin (test/support/stores/memory-notice-cap-store.ts): each batch answers what the
 * window counted before it; the same batch again is not counted twice and gets the same answer;
 * windows and organizations count apart; a batch past the cap learns the claims made so far. On
 * DynamoDB the counter stays small however many batches count (each answer is its own item), and a
 * counter the previous version wrote (answers as `b_<batch>`) still answers its batches. A batch
 * counted whose follow-up calls fail (its answer's write, the claims' read) is retried, then answered
 * without claims: never thrown (the caller would mail the counted leads apart as well).
 */
import { describe, it, expect, jest } from '@jest/globals';
import { GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import { newId } from '../../../functions/core/platform/ids.js';
import { dynamoNoticeCapStore, noticeCapPort, NOTICE_CAP_FOLLOW_UP_TRIES, type NoticeCapStore } from '../../../functions/core/notify/notice-cap-store.js';
import type { Deps } from '../../../functions/core/platform/deps.js';
import { logger } from '../../../functions/core/platform/observability.js';
import { testStack } from '../support/stack.js';
import { MemoryNoticeCapStore } from '../../support/stores/memory-notice-cap-store.js';

const stores: [string, () => Promise<NoticeCapStore>][] = [
  ['DynamoDB Local', async () => noticeCapPort.of((await testStack()).deps)],
  ['the in-memory twin', async () => new MemoryNoticeCapStore()],
];
const WINDOW = Date.parse('2030-01-15T12:00:00.000Z');
const expiresAt = Math.ceil(WINDOW / 1000) + 86_400;
const CAP = 20;

describe.each(stores)('the notice cap counter on %s', (_name, make) => {
  it('answers what the window counted before each batch, once per batch', async () => {
    const store = await make();
    const org = newId('org', 12);
    expect(await store.countLeadNotices(org, WINDOW, 'batch-a', 3, expiresAt, CAP)).toEqual({ before: 0, claims: [] });
    expect((await store.countLeadNotices(org, WINDOW, 'batch-b', 20, expiresAt, CAP)).before).toBe(3);
    // batch-b retried: not counted again, the same answer.
    expect((await store.countLeadNotices(org, WINDOW, 'batch-b', 20, expiresAt, CAP)).before).toBe(3);
    expect((await store.countLeadNotices(org, WINDOW, 'batch-c', 1, expiresAt, CAP)).before).toBe(23);
    // Another window, another organization: from zero.
    expect((await store.countLeadNotices(org, WINDOW + 600_000, 'batch-d', 2, expiresAt, CAP)).before).toBe(0);
    expect((await store.countLeadNotices(newId('org', 12), WINDOW, 'batch-a', 2, expiresAt, CAP)).before).toBe(0);
  });

  it('tells a batch past the cap the summaries claimed so far, and a claim fixes its count', async () => {
    const store = await make();
    const org = newId('org', 12);
    await store.countLeadNotices(org, WINDOW, 'batch-a', 25, expiresAt, CAP);
    expect(await store.claimSummary(org, WINDOW, 1)).toEqual({ upTo: 25 });
    expect(await store.countLeadNotices(org, WINDOW, 'batch-b', 2, expiresAt, CAP)).toEqual({ before: 25, claims: [25] });
    expect(await store.claimSummary(org, WINDOW, 2)).toEqual({ upTo: 27, from: 25 });
    expect(await store.claimSummary(org, WINDOW, 2)).toEqual({ upTo: 27, from: 25 });
    // batch-a retried: its first answer, and the claims as they are now.
    expect(await store.countLeadNotices(org, WINDOW, 'batch-a', 25, expiresAt, CAP)).toEqual({ before: 0, claims: [25, 27] });
    expect(await store.claimSummary(newId('org', 12), WINDOW, 1)).toBeUndefined();
  });
});

describe('the notice cap counter on DynamoDB Local, item by item', () => {
  it('keeps the counter a few attributes however many batches count, each answer its own item with the TTL', async () => {
    const { deps } = await testStack();
    const store = noticeCapPort.of(deps);
    const org = newId('org', 12);
    for (let b = 0; b < 30; b++) await store.countLeadNotices(org, WINDOW, `batch-${b}`, 1, expiresAt, CAP);
    const counter = (await deps.doc.send(new GetCommand({ TableName: deps.tables.rateWindows, Key: { pk: `NOTICES#${org}#${WINDOW}` } }))).Item!;
    expect(Object.keys(counter).sort()).toEqual(['expiresAt', 'leads', 'pk']);
    expect(counter.leads).toBe(30);
    const answer = (await deps.doc.send(new GetCommand({ TableName: deps.tables.rateWindows, Key: { pk: `NOTICES#${org}#${WINDOW}#batch-7` } }))).Item;
    expect(answer).toEqual({ pk: `NOTICES#${org}#${WINDOW}#batch-7`, before: 7, expiresAt });
  });

  it('still answers a batch the previous version counted (its answer on the counter), without counting it again', async () => {
    const { deps } = await testStack();
    const store = noticeCapPort.of(deps);
    const org = newId('org', 12);
    await deps.doc.send(new PutCommand({ TableName: deps.tables.rateWindows, Item: { pk: `NOTICES#${org}#${WINDOW}`, leads: 26, b_old1: 0, b_old2: 21, round_1: 26, expiresAt } }));
    expect(await store.countLeadNotices(org, WINDOW, 'old2', 5, expiresAt, CAP)).toEqual({ before: 21, claims: [26] });
    expect(await store.countLeadNotices(org, WINDOW, 'new1', 2, expiresAt, CAP)).toEqual({ before: 26, claims: [26] });
    expect(await store.claimSummary(org, WINDOW, 2)).toEqual({ upTo: 28, from: 26 });
  });
});

/** A store whose calls after the next count (the ADD) fail while `failing.left` lasts, on DynamoDB Local or the twin. */
const failingStores: [string, () => Promise<{ store: NoticeCapStore; failFollowUps(n: number): void }>][] = [
  ['DynamoDB Local', async () => {
    const { deps } = await testStack();
    let left = 0;
    let counted = false;
    const doc = {
      async send(command: { input: { UpdateExpression?: string } }) {
        if (counted && left > 0) {
          left -= 1;
          throw Object.assign(new Error('throttled'), { name: 'ProvisionedThroughputExceededException' });
        }
        const out = await deps.doc.send(command as never);
        if (command.input.UpdateExpression?.startsWith('ADD leads')) counted = true;
        return out;
      },
    } as unknown as Deps['doc'];
    return { store: dynamoNoticeCapStore({ ...deps, doc }), failFollowUps: (n) => { left = n; counted = false; } };
  }],
  ['the in-memory twin', async () => {
    const store = new MemoryNoticeCapStore();
    return { store, failFollowUps: (n) => { store.failFollowUps = n; } };
  }],
];

describe.each(failingStores)('the notice cap counter on %s, failing after it counted', (_name, make) => {
  it('retries the answer and the claims; past its tries it answers without claims, never throws', async () => {
    const loggedError = jest.spyOn(logger, 'error').mockImplementation(() => undefined);
    const { store, failFollowUps } = await make();
    const org = newId('org', 12);
    await store.countLeadNotices(org, WINDOW, 'batch-a', 25, expiresAt, CAP);
    expect(await store.claimSummary(org, WINDOW, 1)).toEqual({ upTo: 25 });
    // Fewer failures than tries: the same answer as without them, and the batch is answered once.
    failFollowUps(NOTICE_CAP_FOLLOW_UP_TRIES - 1);
    expect(await store.countLeadNotices(org, WINDOW, 'batch-b', 2, expiresAt, CAP)).toEqual({ before: 25, claims: [25] });
    expect(await store.countLeadNotices(org, WINDOW, 'batch-b', 2, expiresAt, CAP)).toEqual({ before: 25, claims: [25] });
    expect(loggedError).not.toHaveBeenCalled();
    // Every follow-up failing past its tries: counted, answered without claims, logged.
    failFollowUps(100);
    expect(await store.countLeadNotices(org, WINDOW, 'batch-c', 3, expiresAt, CAP)).toEqual({ before: 27, claims: [] });
    failFollowUps(0);
    expect(loggedError).toHaveBeenCalledWith(expect.stringContaining('answered without claims'), expect.objectContaining({ organizationId: org, leads: 3 }));
    // batch-c's leads are in the window's count: the next claim reports them.
    expect(await store.claimSummary(org, WINDOW, 2)).toEqual({ upTo: 30, from: 25 });
    // Its answer was not kept, so a retry counts it again, with another answer (docs/notifications.md: tries that disagree).
    expect(await store.countLeadNotices(org, WINDOW, 'batch-c', 3, expiresAt, CAP)).toEqual({ before: 30, claims: [25, 30] });
    loggedError.mockRestore();
  });
});
