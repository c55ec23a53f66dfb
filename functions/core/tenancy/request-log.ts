/**
 * Every API request leaves one structured log line and, when its organization is known, a request
 * record kept settings.retentionDays (docs/leads.md#billing). Neither holds the key or any PII value.
 */
import type { Deps } from '../platform/deps.js';
import { logger } from '../platform/observability.js';
import { requestLogStore, type RequestEntry } from './request-log-store.js';

export { REFUSED_PREFIX, type RequestEntry } from './request-log-store.js';

/**
 * Refused calls (401: a revoked or expired key) one key leaves in its organization's request log per
 * minute; the rest are only counted (`REFUSED#<keyId>#<minute>`, `count`), so a script retrying with
 * a revoked key at the WAF's rate cannot flood the log its owner reads (docs/settings.md).
 */
export const MAX_REFUSED_LOGGED_PER_MINUTE = 20;

export async function recordRequest(deps: Deps, entry: RequestEntry): Promise<void> {
  logger.info('request', { ...entry });
  if (!entry.organizationId || entry.recordedOnClient === entry.status) return;
  const at = new Date(deps.now()).toISOString();
  try {
    const expiresAt = Math.floor(deps.now() / 1000) + deps.config.retentionDays * 86_400;
    const store = requestLogStore(deps);
    // A refused call (401) past the minute's allowance is only counted.
    if (entry.status === 401 && entry.keyId && await store.countRefusedCall(entry.organizationId, entry.keyId, Math.floor(deps.now() / 60_000), expiresAt) > MAX_REFUSED_LOGGED_PER_MINUTE) return;
    await store.appendRequest(entry.organizationId, { at, ...entry }, expiresAt);
  } catch (error) {
    // The audit record must not turn a served request into an error.
    logger.error('could not write the request record', { requestId: entry.requestId, error: (error as Error).name });
  }
}
