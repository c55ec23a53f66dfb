/**
 * The audit store's contract (functions/core/settings/audit-store.ts): the request-log table's
 * audit entries on DynamoDB Local and the in-memory twin (test/support/memory-audit-store.ts)
 * answer alike: an entry reads back as appended, newest first, bounded by the limit, one
 * organization's never another's.
 */
import { describe, it, expect } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import { testStack } from '../support/stack.js';
import { dynamoAuditStore, type AuditEntry, type AuditStore } from '../../../functions/core/settings/audit-store.js';
import { MemoryAuditStore } from '../../support/memory-audit-store.js';

const implementations: [string, () => Promise<AuditStore>][] = [
  ['DynamoDB', async () => dynamoAuditStore((await testStack()).deps)],
  ['in memory', async () => new MemoryAuditStore()],
];

const farFuture = Math.floor(Date.now() / 1000) + 86_400;

describe.each(implementations)('the audit store (%s)', (_name, make) => {
  const entry = (organizationId: string, n: number, extra: Partial<AuditEntry> = {}): AuditEntry => ({
    id: `aud_${String(n).padStart(3, '0')}`, at: `2026-11-26T09:00:${String(n).padStart(2, '0')}.000Z`, organizationId, userId: 'usr_admin', action: 'endpoint.created', ...extra,
  });

  it('reads entries back as appended, newest first, at most `limit`', async () => {
    const store = await make();
    const org = `org_audit_${randomUUID().slice(0, 8)}`;
    const entries = [1, 2, 3, 4].map((n) => entry(org, n, n === 2 ? { targetId: 'ep_1', detail: { url: 'https://x.example.com' }, requestId: 'req_1' } : {}));
    for (const e of [entries[2], entries[0], entries[3], entries[1]]) await store.appendAuditEntry(e, farFuture);
    expect(await store.listAuditEntries(org, { limit: 10 })).toEqual([...entries].reverse());
    expect(await store.listAuditEntries(org, { limit: 2 })).toEqual([entries[3], entries[2]]);
  });

  it('orders entries of the same moment by id, and keeps each organization’s apart', async () => {
    const store = await make();
    const org = `org_audit_${randomUUID().slice(0, 8)}`;
    const other = `org_audit_${randomUUID().slice(0, 8)}`;
    const same = [entry(org, 5, { id: 'aud_a' }), entry(org, 5, { id: 'aud_b' })];
    for (const e of same) await store.appendAuditEntry(e, farFuture);
    await store.appendAuditEntry(entry(other, 6), farFuture);
    expect((await store.listAuditEntries(org, { limit: 10 })).map((e) => e.id)).toEqual(['aud_b', 'aud_a']);
    expect((await store.listAuditEntries(other, { limit: 10 })).map((e) => e.organizationId)).toEqual([other]);
    expect(await store.listAuditEntries(`org_audit_none_${randomUUID().slice(0, 8)}`, { limit: 10 })).toEqual([]);
  });
});

describe('the audit twin', () => {
  it('drops entries past their TTL and throttles on demand', async () => {
    let now = Date.parse('2026-11-26T09:00:00.000Z');
    const store = new MemoryAuditStore(() => now);
    const base = { at: '2026-11-26T09:00:00.000Z', organizationId: 'org_t', userId: 'usr', action: 'key.created' as const };
    await store.appendAuditEntry({ ...base, id: 'aud_1' }, now / 1000 + 60);
    store.throttle();
    await expect(store.appendAuditEntry({ ...base, id: 'aud_2' }, now / 1000 + 60)).rejects.toMatchObject({ name: 'ThrottlingException' });
    expect(await store.listAuditEntries('org_t', { limit: 10 })).toHaveLength(1);
    now += 61_000;
    expect(await store.listAuditEntries('org_t', { limit: 10 })).toEqual([]);
  });
});
