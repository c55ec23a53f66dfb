/**
 * The audit store (functions/core/settings/audit-store.ts) in memory: entries kept by key as the
 * request-log table keeps them (`AUDIT#<at>#<id>`), read newest first. An entry past its
 * `expiresAt` (on the clock it is given) is gone, as DynamoDB's TTL deletes it. Fault injection:
 * the next append(s) throw DynamoDB's throttling error.
 * test/integration/stores/audit-store.contract.test.ts holds it to the DynamoDB store's behaviour.
 */
import { keys } from '../../functions/core/platform/model.js';
import type { AuditEntry, AuditStore } from '../../functions/core/settings/audit-store.js';

export class MemoryAuditStore implements AuditStore {
  readonly items = new Map<string, { sk: string; entry: AuditEntry; expiresAt: number }>();
  private throttles = 0;

  constructor(private readonly now: () => number = Date.now) {}

  /** The next `times` appends are throttled. */
  throttle(times = 1): this {
    this.throttles += times;
    return this;
  }

  async appendAuditEntry(entry: AuditEntry, expiresAt: number): Promise<void> {
    if (this.throttles > 0) {
      this.throttles -= 1;
      throw Object.assign(new Error('Rate of requests exceeds the allowed throughput.'), { name: 'ThrottlingException' });
    }
    const { pk, sk } = keys.audit(entry.organizationId, entry.at, entry.id);
    this.items.set(`${pk}\u0000${sk}`, { sk, entry: structuredClone(entry), expiresAt });
  }

  async listAuditEntries(organizationId: string, { limit }: { limit: number }): Promise<AuditEntry[]> {
    const prefix = `${keys.org(organizationId).pk}\u0000`;
    return [...this.items.entries()]
      .filter(([key, item]) => key.startsWith(prefix) && item.expiresAt * 1000 > this.now())
      .map(([, item]) => item)
      .sort((a, b) => (a.sk < b.sk ? 1 : -1))
      .slice(0, limit)
      .map((item) => structuredClone(item.entry));
  }
}
