/**
 * The lead notices' cap counter's contract (functions/core/notify/notice-cap-store.ts) on DynamoDB
 * Local and its twin (test/support/stores/memory-notice-cap-store.ts): each batch answers what the
 * window counted before it; the same batch again is not counted twice and gets the same answer;
 * windows and organizations count apart.
 */
import { describe, it, expect } from '@jest/globals';
import { newId } from '../../../functions/core/platform/ids.js';
import { noticeCapPort, type NoticeCapStore } from '../../../functions/core/notify/notice-cap-store.js';
import { testStack } from '../support/stack.js';
import { MemoryNoticeCapStore } from '../../support/stores/memory-notice-cap-store.js';

const stores: [string, () => Promise<NoticeCapStore>][] = [
  ['DynamoDB Local', async () => noticeCapPort.of((await testStack()).deps)],
  ['the in-memory twin', async () => new MemoryNoticeCapStore()],
];
const WINDOW = Date.parse('2030-01-15T12:00:00.000Z');
const expiresAt = Math.ceil(WINDOW / 1000) + 86_400;

describe.each(stores)('the notice cap counter on %s', (_name, make) => {
  it('answers what the window counted before each batch, once per batch', async () => {
    const store = await make();
    const org = newId('org', 12);
    expect(await store.countLeadNotices(org, WINDOW, 'batch-a', 3, expiresAt)).toBe(0);
    expect(await store.countLeadNotices(org, WINDOW, 'batch-b', 20, expiresAt)).toBe(3);
    // batch-b retried: not counted again, the same answer.
    expect(await store.countLeadNotices(org, WINDOW, 'batch-b', 20, expiresAt)).toBe(3);
    expect(await store.countLeadNotices(org, WINDOW, 'batch-c', 1, expiresAt)).toBe(23);
    // Another window, another organization: from zero.
    expect(await store.countLeadNotices(org, WINDOW + 600_000, 'batch-d', 2, expiresAt)).toBe(0);
    expect(await store.countLeadNotices(newId('org', 12), WINDOW, 'batch-a', 2, expiresAt)).toBe(0);
  });
});
