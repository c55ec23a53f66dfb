/**
 * GET /api/settings/requests: the organization's request log (the lead endpoint's calls, kept
 * retentionDays; tenancy/request-log.ts writes it), newest first, a page at a time. Refused calls
 * made with one of its keys (revoked, expired, a secret key in a form) are in it too. Each row
 * names its key as the keys table does (name, id, last 4 characters).
 */
import type { Deps } from '../platform/deps.js';
import { validationFailed } from '../platform/errors.js';
import { keys } from '../platform/model.js';
import { queryNewest } from '../platform/query.js';
import { listApiKeys } from '../tenancy/api-keys.js';

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
  durationMs: number | null;
  detail: string | null;
  /** The client the lead came to (GET /api/settings/clients/{id}/trail), null for other calls and rows written before it was kept. */
  clientId: string | null;
}

export async function listRequestHistory(deps: Deps, organizationId: string, options: { cursor?: string; limit: number }): Promise<{ requests: RequestView[]; nextCursor: string | null }> {
  const pk = keys.org(organizationId).pk;
  let upper = `${keys.requestPrefix}\uffff`;
  if (options.cursor) {
    const sk = Buffer.from(options.cursor, 'base64url').toString('utf8');
    if (!sk.startsWith(keys.requestPrefix)) throw validationFailed([{ field: 'cursor', message: 'is not a cursor this API returned' }]);
    upper = sk;
  }
  const [{ items, complete }, apiKeys] = await Promise.all([
    queryNewest(deps, { table: deps.tables.requestLog, pk, between: [keys.requestPrefix, upper], limit: options.limit + 1 }),
    listApiKeys(deps, organizationId),
  ]);
  const byId = new Map(apiKeys.map((k) => [k.keyId, k]));
  // BETWEEN includes its bounds: the previous page's last item is dropped here.
  const rest = items.filter((item) => item.sk !== upper);
  const page = rest.slice(0, options.limit);
  const more = rest.length > options.limit || (!complete && page.length === options.limit);
  return {
    requests: page.map((item) => {
      const key = typeof item.keyId === 'string' ? byId.get(item.keyId) : undefined;
      const outcome = typeof item.outcome === 'string' ? item.outcome : undefined;
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
        detail: typeof item.detail === 'string' ? item.detail : outcome ? (outcomes[outcome] ?? outcome) : null,
        clientId: typeof item.clientId === 'string' ? item.clientId : null,
      };
    }),
    nextCursor: more && page.length ? Buffer.from(String(page.at(-1)!.sk)).toString('base64url') : null,
  };
}
