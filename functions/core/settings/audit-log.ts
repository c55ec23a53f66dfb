/**
 * The audit log of the organization settings (docs/settings.md): every change made through the management
 * API is one entry with the acting user (the session token's `sub`), what was done and to which id,
 * never a key or a secret. Entries are kept settings.retentionDays like the request records, by the
 * audit store (audit-store.ts: the request-log table's `AUDIT#` items).
 */
import type { Deps } from '../platform/deps.js';
import { newId } from '../platform/ids.js';
import { auditStore, type AuditEntry } from './audit-store.js';

export type { AuditAction, AuditEntry } from './audit-store.js';

/** Writes one entry; unlike the request log, a change whose audit entry cannot be written fails (the caller sees a 500 and may retry). */
export async function recordChange(deps: Deps, entry: Omit<AuditEntry, 'id' | 'at'>): Promise<AuditEntry> {
  const at = new Date(deps.now()).toISOString();
  const full: AuditEntry = { id: newId('aud', 12), at, ...entry };
  await auditStore(deps).appendAuditEntry(full, Math.floor(deps.now() / 1000) + deps.config.retentionDays * 86_400);
  return full;
}

/** The newest entries of an organization, newest first. */
export async function listAudit(deps: Deps, organizationId: string, options: { limit?: number } = {}): Promise<AuditEntry[]> {
  return auditStore(deps).listAuditEntries(organizationId, { limit: options.limit ?? 50 });
}
