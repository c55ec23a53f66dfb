/**
 * Every API request leaves one structured log line and, when its organization is known, a request
 * record kept settings.retentionDays (DESIGN §9). Neither holds the key or any PII value.
 */
import { PutCommand } from '@aws-sdk/lib-dynamodb';
import type { Deps } from '../platform/deps.js';
import { keys } from '../platform/model.js';
import { logger } from '../platform/observability.js';
import { queryNewest } from '../platform/query.js';

export interface RequestEntry {
  requestId: string;
  organizationId?: string;
  keyId?: string;
  method: string;
  route: string;
  status: number;
  /** What the status does not say, e.g. `honeypot` (a 201 that created nothing, DESIGN §15). */
  outcome?: string;
  latencyMs: number;
}

export async function recordRequest(deps: Deps, entry: RequestEntry): Promise<void> {
  logger.info('request', { ...entry });
  if (!entry.organizationId) return;
  const at = new Date(deps.now()).toISOString();
  try {
    await deps.doc.send(new PutCommand({
      TableName: deps.tables.requestLog,
      Item: {
        ...keys.request(entry.organizationId, at, entry.requestId),
        at,
        ...entry,
        expiresAt: Math.floor(deps.now() / 1000) + deps.settings.retentionDays * 86_400,
      },
    }));
  } catch (error) {
    // The audit record must not turn a served request into an error.
    logger.error('could not write the request record', { requestId: entry.requestId, error: (error as Error).name });
  }
}

export async function listRequests(deps: Deps, organizationId: string, options: { limit?: number } = {}): Promise<(RequestEntry & { at: string })[]> {
  const { items } = await queryNewest(deps, {
    table: deps.tables.requestLog, pk: keys.org(organizationId).pk, skPrefix: keys.requestPrefix, limit: options.limit ?? 50, maxPages: 1,
  });
  return items.map(({ pk: _pk, sk: _sk, expiresAt: _e, ...rest }) => rest as RequestEntry & { at: string });
}
