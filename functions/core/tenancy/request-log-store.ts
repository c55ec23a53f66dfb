/**
 * The request log's store (docs/settings.md "Request log"): an organization's `REQUEST#<at>#<request
 * id>` rows in the requestLog table, and the per-key per-minute counters of refused calls
 * (`REFUSED#<keyId>#<minute>`, sorted before `REQUEST#`, so a read of rows never meets them). The
 * only module that reads or writes them (the audit entries of the same table are settings/audit-log.ts's).
 * Every item carries `expiresAt` (TTL, epoch seconds): a row past it is absent from every read, as
 * DynamoDB may keep it for a while after. Tests substitute an in-memory twin
 * (test/support/memory-request-log-store.ts) through `withRequestLogStore`.
 */
import { PutCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import type { Deps } from '../platform/deps.js';
import { keys } from '../platform/model.js';
import { queryNewest } from '../platform/dynamo-store.js';

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

/** A stored row: the entry as recorded, and its time. */
export type StoredRequest = RequestEntry & { at: string };

/** Sorts before `REQUEST#`: the request log's reads never see the counters. */
export const REFUSED_PREFIX = 'REFUSED#';

/** One read of rows, newest first: each with its sort key; unless read to the range's end, the sort key of the last item evaluated (`reached`). */
export interface RequestRows { rows: { sk: string; request: StoredRequest }[]; complete: boolean; reached?: string }

export interface RequestLogStore {
  /** Writes a row, kept until `expiresAt` (epoch seconds). */
  appendRequest(organizationId: string, request: StoredRequest, expiresAt: number): Promise<void>;
  /** Counts one refused call of `keyId` in `minute` (epoch minutes); the count after it. */
  countRefusedCall(organizationId: string, keyId: string, minute: number, expiresAt: number): Promise<number>;
  /**
   * Up to `limit` rows with sort keys in `between` (inclusive), newest first (a read may bring a
   * page's worth more); `complete` when the range was read to its end.
   */
  newestRequests(organizationId: string, between: [string, string], limit: number): Promise<RequestRows>;
}

const rowOf = ({ pk: _pk, sk: _sk, expiresAt: _e, ...rest }: Record<string, unknown>) => rest as unknown as StoredRequest;

export function dynamoRequestLogStore(deps: Pick<Deps, 'doc' | 'tables' | 'now'>): RequestLogStore {
  const TableName = deps.tables.requestLog;
  return {
    async appendRequest(organizationId, request, expiresAt) {
      await deps.doc.send(new PutCommand({ TableName, Item: { ...keys.request(organizationId, request.at, request.requestId), ...request, expiresAt } }));
    },
    async countRefusedCall(organizationId, keyId, minute, expiresAt) {
      const { Attributes } = await deps.doc.send(new UpdateCommand({
        TableName,
        Key: { pk: keys.org(organizationId).pk, sk: `${REFUSED_PREFIX}${keyId}#${minute}` },
        UpdateExpression: 'ADD #count :one SET expiresAt = if_not_exists(expiresAt, :expiresAt)',
        ExpressionAttributeNames: { '#count': 'count' },
        ExpressionAttributeValues: { ':one': 1, ':expiresAt': expiresAt },
        ReturnValues: 'UPDATED_NEW',
      }));
      return Number(Attributes?.count ?? 0);
    },
    async newestRequests(organizationId, between, limit) {
      const { items, complete, reached } = await queryNewest(deps, { table: TableName, pk: keys.org(organizationId).pk, between, limit });
      const now = deps.now();
      // TTL deletion lags (up to days on AWS): a row past its expiry is dropped here, after the read, so `reached` still says how far it went.
      const rows = items.filter((item) => item.expiresAt === undefined || Number(item.expiresAt) * 1000 > now)
        .map((item) => ({ sk: String(item.sk), request: rowOf(item) }));
      return { rows, complete, ...(complete ? {} : { reached: reached ?? String(items.at(-1)?.sk) }) };
    },
  };
}

/** A symbol, so that deps copied with a spread keep their store. */
const port = Symbol('requestLogStore');
type WithRequestLogStore = Deps & { [port]?: RequestLogStore };

/** `deps` whose request log lives in `store` (an in-memory twin in tests) instead of DynamoDB. */
export const withRequestLogStore = (deps: Deps, store: RequestLogStore): Deps => ({ ...deps, [port]: store }) as WithRequestLogStore;

export const requestLogStore = (deps: Deps): RequestLogStore => (deps as WithRequestLogStore)[port] ?? dynamoRequestLogStore(deps);
