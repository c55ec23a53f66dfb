/**
 * Reads an organization's request log, newest first, from its two sources (docs/settings.md
 * "Request log"): the `REQUEST#` rows (tenancy/request-log.ts writes them) and the clients that
 * created leads, each of which is its request's row (intake/create-lead.ts: `request_id`, `key_id`,
 * `created_at`; read through the clients store, which is intake's: hence this module is settings').
 * Both are time-ordered (client ids: docs/data-model.md "Client ids"), so a page is
 * a merge of two newest-first reads, each bounded below by the log's retention.
 */
import type { Deps } from '../platform/deps.js';
import { TIME_PART_LENGTH, timePart } from '../platform/ids.js';
import { keys } from '../platform/model.js';
import { requestLogStore, type RequestEntry } from '../tenancy/request-log-store.js';
import { clientsStore } from '../intake/clients-store.js';

/** The route a created lead's row shows: the lead endpoint's (functions/front-door/routes.ts). */
const LEAD_ROUTE = '/api/webhook/leads';
/**
 * Clients evaluated per page (at most; a page of the log asks `limit + 1`) and pages per read: a run
 * of clients the CRM wrote costs at most this many items' reads per call, each Query page at most 1 MB
 * (docs/settings.md "Request log": the read's cost).
 */
const CLIENT_PAGE = 100;
const CLIENT_PAGES = 5;
/** Reads `crm logs` makes at most before it stops and says so (an import's stretch of clients is read 5 pages a call). */
export const MAX_LIST_CALLS = 20;

/** A row of the request log as read: a created lead's (from its client) has no duration. */
export type LoggedRequest = Omit<RequestEntry, 'latencyMs' | 'recordedOnClient'> & { at: string; latencyMs?: number };

/** Where a page ended in each source: the next reads start below these sort keys (exclusive); null once a source is read to its end. */
export interface RequestLogPosition { request: string | null; client: string | null }
type Source = keyof RequestLogPosition;

/**
 * Exactly the positions this reader hands out (a cursor is refused otherwise): a `REQUEST#<at>#<request id>`
 * sort key or the read's start (`REQUEST#\uffff`), a `CLIENT#<client id>` sort key or the same-time
 * bound `CLIENT#cli_<time part>~`; null once read to the end. Bounds the position's length too (DynamoDB refuses range keys over 1 KB).
 */
const POSITION: Record<Source, RegExp> = {
  request: /^REQUEST#(?:\uffff|\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z#[A-Za-z0-9_-]{1,64})$/,
  client: /^CLIENT#cli_[0-9A-Za-z]{9,32}~?$/,
};
export const isPosition = (source: Source, value: unknown): value is string | null => value === null || (typeof value === 'string' && POSITION[source].test(value));

/** The clients' position of the same time as a `REQUEST#` sort key: below it, every client of that millisecond and older (rows of one time give the request's first). */
const clientAt = (time: number) => keys.client('', `cli_${timePart(time)}~`).sk;
/** The time of a `REQUEST#<at>#<request id>` sort key (`at`: an ISO 8601 time, 24 characters). */
const timeOfRequestKey = (sk: string) => Date.parse(sk.slice(keys.requestPrefix.length, keys.requestPrefix.length + 24));
/** A cursor of the previous format (a `REQUEST#` sort key alone, handed out before clients were rows): the position it means in both sources. */
export function positionOfRequestKey(sk: string): RequestLogPosition | undefined {
  if (!isPosition('request', sk) || sk === `${keys.requestPrefix}\uffff`) return undefined;
  return { request: sk, client: clientAt(timeOfRequestKey(sk)) };
}

interface Row { source: Source; key: string; sk: string; entry: LoggedRequest }
/** One source's read: its rows, and unless read to the end of its range, the last item it evaluated (`floor`, `floorSk`). */
interface SourceRead { rows: Row[]; complete: boolean; floor?: string; floorSk?: string }

/** A client's row: the request that created it, a lead answered 201 (or the `request_status` it records: a form's 303). */
const clientEntry = (item: Record<string, unknown>): LoggedRequest => ({
  at: String(item.created_at), requestId: String(item.request_id), keyId: String(item.key_id),
  method: 'POST', route: LEAD_ROUTE, status: typeof item.request_status === 'number' ? item.request_status : 201, clientId: String(item.id),
});

/** A row's place in the merged order: its time (as the ids' base62 time part), then its source, then its sort key. */
const requestKey = (sk: string) => `${timePart(timeOfRequestKey(sk))}R${sk}`;
const clientPrefix = 'CLIENT#cli_';
const clientKey = (sk: string) => `${sk.slice(clientPrefix.length, clientPrefix.length + TIME_PART_LENGTH)}C${sk}`;

/**
 * The greatest sort key below `sk`, as far as this table's keys go (ASCII): BETWEEN includes its
 * bounds, and a read that included the previous page's last item would spend a page of one on it.
 */
const justBelow = (sk: string) => `${sk.slice(0, -1)}${String.fromCharCode(sk.charCodeAt(sk.length - 1) - 1)}\uffff`;

const toKeys: Record<Source, (sk: string) => string> = { request: requestKey, client: clientKey };

/** One source's newest items between two sort keys: each item's sort key and row, and how far the read went (queryNewest's `complete`, `reached`). */
interface SourceItems { rows: { sk: string; entry: LoggedRequest }[]; complete: boolean; reached?: string }

/**
 * The clients that created leads, newest first, as rows of the log: the clients store's `leadRequest`
 * selection (REQUEST_LOG_CLIENT_FIELDS alone: the settings API's IAM grant).
 */
async function readLeadClientsNewest(
  deps: Deps, organizationId: string, between: [string, string], options: { limit: number; pageSize: number; maxPages: number },
): Promise<SourceItems> {
  const { items, complete, reached } = await clientsStore(deps).newestClients(organizationId, between, { select: 'leadRequest', ...options });
  return { rows: items.map((item) => ({ sk: String(item.sk), entry: clientEntry(item) })), complete, ...(reached ? { reached } : {}) };
}

/**
 * Up to `limit` rows newest first below `before` (a previous page's position), and the position to
 * read on from (null: no more). A read of clients stops after CLIENT_PAGES pages (a run of clients
 * the CRM wrote is filtered out): it then bounds the page, whose rows are all newer than where it
 * stopped, so no row of either source is skipped or repeated (a page may then hold fewer rows, even none).
 */
export async function readRequestLog(
  deps: Deps, organizationId: string,
  options: { limit: number; before?: RequestLogPosition; /** Bounds of the clients' read (default CLIENT_PAGE, CLIENT_PAGES). */ clientReads?: { pageSize: number; maxPages: number } },
): Promise<{ rows: LoggedRequest[]; next: RequestLogPosition | null }> {
  const oldest = deps.now() - deps.config.retentionDays * 86_400_000;
  const before = options.before ?? { request: `${keys.requestPrefix}\uffff`, client: clientAt(deps.now() + 86_400_000) };
  const read = async (source: Source, lower: string, readItems: (between: [string, string]) => Promise<SourceItems>): Promise<SourceRead> => {
    const upper = before[source];
    // Read to its end, or a position older than the retention (a cursor kept past it): nothing left to query (BETWEEN refuses an upper bound below the lower).
    if (upper === null || justBelow(upper) < lower) return { rows: [], complete: true };
    const toKey = toKeys[source];
    const { rows: found, complete, reached } = await readItems([lower, justBelow(upper)]);
    const rows = found.map(({ sk, entry }) => ({ source, key: toKey(sk), sk, entry }));
    const floorSk = complete ? undefined : (reached ?? found.at(-1)?.sk ?? upper);
    return { rows, complete, ...(floorSk ? { floor: toKey(floorSk), floorSk } : {}) };
  };
  const [requests, clients] = await Promise.all([
    read('request', `${keys.requestPrefix}${new Date(oldest).toISOString()}`, async (between) => {
      const { rows, complete, reached } = await requestLogStore(deps).newestRequests(organizationId, between, options.limit + 1);
      return { rows: rows.map(({ sk, request }) => ({ sk, entry: request as LoggedRequest })), complete, ...(reached ? { reached } : {}) };
    }),
    read('client', keys.client(organizationId, `cli_${timePart(oldest)}`).sk, (between) => readLeadClientsNewest(deps, organizationId, between, {
      limit: options.limit + 1, ...(options.clientReads ?? { pageSize: Math.min(CLIENT_PAGE, options.limit + 1), maxPages: CLIENT_PAGES }),
    })),
  ]);
  // A source that stopped before its range's end may hold rows older than where it stopped: none below it is given yet.
  const bound = [requests, clients].reduce((b, s) => (s.floor !== undefined && s.floor > b ? s.floor : b), '');
  const merged = [...requests.rows, ...clients.rows].filter((r) => r.key >= bound).sort((a, b) => (a.key < b.key ? 1 : -1));
  const page = merged.slice(0, options.limit);
  const given = new Set(page);
  const positionOf = (source: Source, read: SourceRead): string | null => {
    const mine = read.rows.filter((r) => given.has(r));
    // Everything it read was given: on below where it stopped, or nothing more.
    if (mine.length === read.rows.length) return read.complete ? null : read.floorSk!;
    return mine.at(-1)?.sk ?? before[source];
  };
  const next = { request: positionOf('request', requests), client: positionOf('client', clients) };
  // A request answered other than its client records (a 5xx after the client's write) has both rows: the page gives the request's, what the caller saw.
  const answered = new Set(page.filter((r) => r.source === 'request').map((r) => r.entry.requestId));
  const shown = page.filter((r) => r.source === 'request' || !answered.has(r.entry.requestId));
  return { rows: shown.map((r) => r.entry), next: next.request === null && next.client === null ? null : next };
}

/**
 * The newest `limit` rows of the request log, both sources merged (request-log-read.ts), page after
 * page: `crm logs`. Stops after `maxCalls` reads (a long import of the CRM's clients is read and
 * filtered out a stretch a call): `more` then says rows may remain.
 */
export async function listRequestLog(deps: Deps, organizationId: string, options: { limit?: number; maxCalls?: number; clientReads?: { pageSize: number; maxPages: number } } = {}): Promise<{ rows: LoggedRequest[]; more: boolean; calls: number }> {
  const limit = options.limit ?? 50;
  const rows: LoggedRequest[] = [];
  let before: RequestLogPosition | undefined;
  let calls = 0;
  do {
    const page = await readRequestLog(deps, organizationId, { limit: limit - rows.length, before, clientReads: options.clientReads });
    calls++;
    rows.push(...page.rows);
    before = page.next ?? undefined;
  } while (before && rows.length < limit && calls < (options.maxCalls ?? MAX_LIST_CALLS));
  return { rows, more: before !== undefined && rows.length < limit, calls };
}

/** The rows of listRequestLog alone (tests and callers that read a short log). */
export const listRequests = async (deps: Deps, organizationId: string, options: { limit?: number } = {}) => (await listRequestLog(deps, organizationId, options)).rows;
