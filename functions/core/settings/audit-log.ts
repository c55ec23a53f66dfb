/**
 * The audit log of the organization settings (docs/settings.md): every change made through the management
 * API is one entry with the acting user (the session token's `sub`), what was done and to which id,
 * never a key or a secret. Entries sit in the request-log table under the organization's partition
 * (`AUDIT#<at>#<id>`), kept settings.retentionDays like the request records.
 */
import { PutCommand } from '@aws-sdk/lib-dynamodb';
import type { Deps } from '../platform/deps.js';
import { newId } from '../platform/ids.js';
import { keys } from '../platform/model.js';
import { queryNewest } from '../platform/query.js';

export type AuditAction =
  | 'key.created' | 'key.rotated' | 'key.revoked'
  | 'endpoint.created' | 'endpoint.updated' | 'endpoint.deleted' | 'endpoint.secret_rotated' | 'endpoint.tested'
  | 'delivery.redelivered' | 'deliveries.redelivered' | 'deliveries.recovered'
  | 'organization.duplicate_policy_set';

export interface AuditEntry {
  id: string;
  at: string;
  organizationId: string;
  /** The acting user: the session token's `sub`. */
  userId: string;
  action: AuditAction;
  /** The id acted on (key, endpoint, delivery), when there is one. */
  targetId?: string;
  /** Non-secret facts of the change (a name, a URL, a count). */
  detail?: Record<string, unknown>;
  requestId?: string;
}

/** Writes one entry; unlike the request log, a change whose audit entry cannot be written fails (the caller sees a 500 and may retry). */
export async function recordChange(deps: Deps, entry: Omit<AuditEntry, 'id' | 'at'>): Promise<AuditEntry> {
  const at = new Date(deps.now()).toISOString();
  const full: AuditEntry = { id: newId('aud', 12), at, ...entry };
  await deps.doc.send(new PutCommand({
    TableName: deps.tables.requestLog,
    Item: { ...keys.audit(entry.organizationId, at, full.id), entity: 'audit', ...full, expiresAt: Math.floor(deps.now() / 1000) + deps.config.retentionDays * 86_400 },
  }));
  return full;
}

/** The newest entries of an organization, newest first. */
export async function listAudit(deps: Deps, organizationId: string, options: { limit?: number } = {}): Promise<AuditEntry[]> {
  const { items } = await queryNewest(deps, { table: deps.tables.requestLog, pk: keys.org(organizationId).pk, skPrefix: keys.auditPrefix, limit: options.limit ?? 50, maxPages: 1 });
  return items.map(({ pk: _pk, sk: _sk, entity: _e, expiresAt: _x, ...rest }) => rest as AuditEntry);
}
