/**
 * Ids of the events a lead's submissions cause, derived from the client and the submission's number
 * rather than from the stream position (docs/data-model.md "A lead's trail"): the settings page's
 * trail finds a lead's events and their deliveries by key (GetItem, BatchGetItem), with no index and
 * no write more per lead. A lead-endpoint client (`source: api`) is inserted once under an id drawn
 * from the CSPRNG (submission 1: `client.created`), and each submission merged into a client (any
 * source) raises `submission_count` by one in one write (submission n: `client.updated`, its
 * request id mixed in); restores yield no event (derive.ts), so no two changes share an id.
 */
import { createHash } from 'node:crypto';
import type { StreamChange } from './stream-changes.js';

type Item = Record<string, unknown>;

/** The event types a submission causes: the first creates the client, each later one updates it. */
export const submissionEventType = (submission: number) => (submission === 1 ? 'client.created' : 'client.updated');

/**
 * `requestId`: a merged submission's own request id (submissionRequestId). A restore of the clients
 * table brings back an older `submission_count`, so the next merge reuses a number already used:
 * the request id keeps its event id new (a receiver deduplicating by webhook-id would drop it).
 */
export const leadEventId = (organizationId: string, clientId: string, submission: number, requestId?: string) =>
  'evt_' + createHash('sha256').update(`lead|${organizationId}|${clientId}|${submission}|${submissionEventType(submission)}${requestId ? `|${requestId}` : ''}`).digest('base64url').slice(0, 22);

/** The request id a client item records for its merged submission `n` (`submissions[n-2]`); none for submission 1. */
export function submissionRequestId(item: Item, submission: number): string | undefined {
  const listed = Array.isArray(item.submissions) ? (item.submissions as Item[])[submission - 2] : undefined;
  return typeof listed?.request_id === 'string' && listed.request_id ? listed.request_id : undefined;
}

/** The submission a client change records: its insert (1), or a merge (the raised `submission_count`); undefined for any other change. */
export function submissionOf(kind: StreamChange['kind'], before: Item | undefined, after: Item | undefined): number | undefined {
  if (after?.entity !== 'client' || typeof after.id !== 'string') return undefined;
  // A client the CRM inserts keeps its stream-position id (the CRM may reuse ids); one it holds may still take merged leads.
  if (kind === 'insert') return after.source === 'api' ? 1 : undefined;
  const count = Number(after.submission_count);
  return kind === 'modify' && Number.isInteger(count) && count > Number(before?.submission_count ?? 1) ? count : undefined;
}
