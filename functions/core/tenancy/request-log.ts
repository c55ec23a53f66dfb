/**
 * Every API request leaves one structured log line and, when its organization is known, a request
 * record kept settings.retentionDays (docs/leads.md#billing). Neither holds the key or any PII value.
 */
import { PutCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import type { Deps } from '../platform/deps.js';
import { keys } from '../platform/model.js';
import { logger } from '../platform/observability.js';

export interface RequestEntry {
  requestId: string;
  organizationId?: string;
  keyId?: string;
  method: string;
  route: string;
  status: number;
  /** What the status does not say, e.g. `honeypot` (a 201 that created nothing, docs/leads.md#lead-forms-in-public-pages-publishable-keys). */
  outcome?: string;
  /** The client a lead came to (created, merged into, repeated): the request log links to its trail. */
  clientId?: string;
  latencyMs: number;
  /**
   * The status the client this request created records as its row (a created lead: docs/settings.md
   * "Request log"). Answered that status, the request is logged and no `REQUEST#` row is written;
   * answered another (a failure after the client's write), it keeps a row of its own.
   */
  recordedOnClient?: number;
}

/**
 * Refused calls (401: a revoked or expired key) one key leaves in its organization's request log per
 * minute; the rest are only counted (`REFUSED#<keyId>#<minute>`, `count`), so a script retrying with
 * a revoked key at the WAF's rate cannot flood the log its owner reads (docs/settings.md).
 */
export const MAX_REFUSED_LOGGED_PER_MINUTE = 20;

/** Counts a refused call of `keyId` in its minute; whether it is within the ones logged. */
async function refusedCallLogged(deps: Deps, organizationId: string, keyId: string, expiresAt: number): Promise<boolean> {
  const minute = Math.floor(deps.now() / 60_000);
  const { Attributes } = await deps.doc.send(new UpdateCommand({
    TableName: deps.tables.requestLog,
    Key: { pk: keys.org(organizationId).pk, sk: `${REFUSED_PREFIX}${keyId}#${minute}` },
    UpdateExpression: 'ADD #count :one SET expiresAt = if_not_exists(expiresAt, :expiresAt)',
    ExpressionAttributeNames: { '#count': 'count' },
    ExpressionAttributeValues: { ':one': 1, ':expiresAt': expiresAt },
    ReturnValues: 'UPDATED_NEW',
  }));
  return Number(Attributes?.count ?? 0) <= MAX_REFUSED_LOGGED_PER_MINUTE;
}
/** Sorts before `REQUEST#`: the request log's reads never see the counters. */
export const REFUSED_PREFIX = 'REFUSED#';

export async function recordRequest(deps: Deps, entry: RequestEntry): Promise<void> {
  logger.info('request', { ...entry });
  if (!entry.organizationId || entry.recordedOnClient === entry.status) return;
  const at = new Date(deps.now()).toISOString();
  try {
    const expiresAt = Math.floor(deps.now() / 1000) + deps.config.retentionDays * 86_400;
    if (entry.status === 401 && entry.keyId && !(await refusedCallLogged(deps, entry.organizationId, entry.keyId, expiresAt))) return;
    await deps.doc.send(new PutCommand({
      TableName: deps.tables.requestLog,
      Item: {
        ...keys.request(entry.organizationId, at, entry.requestId),
        at,
        ...entry,
        expiresAt,
      },
    }));
  } catch (error) {
    // The audit record must not turn a served request into an error.
    logger.error('could not write the request record', { requestId: entry.requestId, error: (error as Error).name });
  }
}
