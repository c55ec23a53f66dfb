/**
 * GET /api/settings/requests: the organization's request log (the lead endpoint's calls, kept
 * retentionDays; tenancy/request-log.ts writes it, a created lead's client is its row;
 * settings/request-log-read.ts merges the two), newest first, a page at a time. Refused calls
 * made with one of its keys (revoked, expired, a secret key in a form) are in it too. Each row
 * names its key as the keys table does (name, id, last 4 characters).
 */
import type { Deps } from '../platform/deps.js';
import { validationFailed } from '../platform/errors.js';
import { listApiKeys } from '../tenancy/api-keys.js';
import { isPosition, positionOfRequestKey, readRequestLog, type RequestLogPosition } from './request-log-read.js';
import { MAX_CURSOR_CHARS } from './request-fields.js';

/** What a request's outcome code means, for the log's reader. */
const outcomes: Record<string, string> = {
  'key-revoked': 'refused: the key is revoked',
  'key-expired': 'refused: the key has expired',
  'secret-key-exposed': 'refused: a secret key was sent from a web form',
  honeypot: 'spam trap filled in: nothing created',
  merged: 'merged into an earlier client',
  duplicate: 'a repeat of a submission of the last 10 minutes: nothing created',
};

export interface RequestView {
  at: string;
  method: string;
  path: string;
  status: number;
  keyId: string | null;
  /** The key's name and last 4 characters, when the key is still listed. */
  keyName: string | null;
  keyLast4: string | null;
  requestId: string;
  /** Null for a created lead: its row is its client, written before the answer. */
  durationMs: number | null;
  detail: string | null;
  /** The client the lead came to (GET /api/settings/clients/{id}/trail), null for other calls and rows written before it was kept. */
  clientId: string | null;
}

/** A page's position in each of the log's two sources, as the cursor the API hands out (opaque to callers). */
const encodeCursor = (position: RequestLogPosition) => Buffer.from(JSON.stringify([position.request, position.client])).toString('base64url');
/** Exactly what encodeCursor writes, or a cursor of the previous format (base64url of a `REQUEST#` sort key), which a page loaded before the deploy still holds. */
function decodeCursor(cursor: string): RequestLogPosition {
  if (cursor.length <= MAX_CURSOR_CHARS) {
    const text = Buffer.from(cursor, 'base64url').toString('utf8');
    const previous = positionOfRequestKey(text);
    if (previous) return previous;
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      parsed = undefined;
    }
    if (Array.isArray(parsed) && parsed.length === 2 && isPosition('request', parsed[0]) && isPosition('client', parsed[1])) {
      return { request: parsed[0], client: parsed[1] };
    }
  }
  throw validationFailed([{ field: 'cursor', message: 'is not a cursor this API returned' }]);
}

export async function listRequestHistory(deps: Deps, organizationId: string, options: { cursor?: string; limit: number }): Promise<{ requests: RequestView[]; nextCursor: string | null }> {
  const before = options.cursor ? decodeCursor(options.cursor) : undefined;
  const [{ rows, next }, apiKeys] = await Promise.all([
    readRequestLog(deps, organizationId, { limit: options.limit, before }),
    listApiKeys(deps, organizationId),
  ]);
  const byId = new Map(apiKeys.map((k) => [k.keyId, k]));
  return {
    requests: rows.map((item) => {
      const key = typeof item.keyId === 'string' ? byId.get(item.keyId) : undefined;
      const outcome = typeof item.outcome === 'string' ? item.outcome : undefined;
      const detail = (item as { detail?: unknown }).detail;
      return {
        at: String(item.at),
        method: String(item.method),
        path: String(item.route),
        status: Number(item.status),
        keyId: typeof item.keyId === 'string' ? item.keyId : null,
        keyName: key?.name ?? null,
        keyLast4: key?.last4 ?? null,
        requestId: String(item.requestId),
        durationMs: typeof item.latencyMs === 'number' ? item.latencyMs : null,
        detail: typeof detail === 'string' ? detail : outcome ? (outcomes[outcome] ?? outcome) : null,
        clientId: typeof item.clientId === 'string' ? item.clientId : null,
      };
    }),
    nextCursor: next ? encodeCursor(next) : null,
  };
}
