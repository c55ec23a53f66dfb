/**
 * The audit log's store (docs/settings.md "Audit log"): the only module that writes or reads the
 * audit entries, an item family of the request-log table (`AUDIT#<at>#<id>` under the
 * organization's partition, kept with a TTL like the request records). audit-log.ts decides what an
 * entry says; this keeps it. Tests substitute the in-memory twin (test/support/memory-audit-store.ts)
 * with `withAuditStore`; test/integration/stores/audit-store.contract.test.ts holds both to one behaviour.
 */
import { PutCommand } from '@aws-sdk/lib-dynamodb';
import type { Deps } from '../platform/deps.js';
import { keys } from '../platform/model.js';
import { queryNewest } from '../platform/dynamo-store.js';

export type AuditAction =
  | 'key.created' | 'key.rotated' | 'key.revoked'
  | 'endpoint.created' | 'endpoint.updated' | 'endpoint.deleted' | 'endpoint.secret_rotated' | 'endpoint.tested'
  | 'delivery.redelivered' | 'deliveries.redelivered' | 'deliveries.recovered'
  | 'organization.duplicate_policy_set' | 'settings.links_revoked' | 'notifications.recipients_set';

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

export interface AuditStore {
  /** Appends one entry, kept until `expiresAt` (epoch seconds, the table's TTL). */
  appendAuditEntry(entry: AuditEntry, expiresAt: number): Promise<void>;
  /** An organization's newest entries, newest first (by time, then id), at most `limit` (one read). */
  listAuditEntries(organizationId: string, options: { limit: number }): Promise<AuditEntry[]>;
}

/** The audit entries in the request-log table on DynamoDB. */
export function dynamoAuditStore(deps: Deps): AuditStore {
  return {
    async appendAuditEntry(entry, expiresAt) {
      await deps.doc.send(new PutCommand({
        TableName: deps.tables.requestLog,
        Item: { ...keys.audit(entry.organizationId, entry.at, entry.id), entity: 'audit', ...entry, expiresAt },
      }));
    },
    async listAuditEntries(organizationId, { limit }) {
      const { items } = await queryNewest(deps, { table: deps.tables.requestLog, pk: keys.org(organizationId).pk, skPrefix: keys.auditPrefix, limit, maxPages: 1 });
      return items.map(({ pk: _pk, sk: _sk, entity: _e, expiresAt: _x, ...rest }) => rest as AuditEntry);
    },
  };
}

/** A symbol, so that deps copied with a spread keep their store. */
const port = Symbol('auditStore');
type WithStore = Deps & { [port]?: AuditStore };

/** `deps` whose audit entries live in `store` (the in-memory twin in tests). */
export const withAuditStore = (deps: Deps, store: AuditStore): Deps => ({ ...deps, [port]: store }) as WithStore;

export const auditStore = (deps: Deps): AuditStore => (deps as WithStore)[port] ?? dynamoAuditStore(deps);
