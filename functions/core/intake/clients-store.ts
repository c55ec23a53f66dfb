/**
 * The clients store: the clients table's items, the only module in functions/core that writes them
 * or reads them by key (docs/decisions.md "The clients store lives in intake"). Leads write clients
 * here (create-lead.ts), so do the CRM records (crm/entities.ts: crm may import intake); the lead's
 * trail reads one here (settings/lead-trail.ts), the inbox (crm/notifications.ts) and the request log
 * (settings/request-log-read.ts) read pages of the partition newest first (`newestClients`), each
 * through a named selection. Tests put the in-memory twin in its place (`clientsPort.with`).
 *
 * What a lead writes is one PutItem (a new client, its notification an attribute of the item) or one
 * UpdateItem (a merged submission): no transaction (docs/decisions.md "Lead write cost").
 */
import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import { DeleteCommand, GetCommand, PutCommand, QueryCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import type { Deps } from '../platform/deps.js';
import { keys } from '../platform/model.js';
import { queryAll, queryNewest } from '../platform/dynamo-store.js';
import { REQUEST_LOG_CLIENT_FIELDS } from '../tenancy/request-log-fields.js';
import type { MatchVia } from '../platform/match-key.js';
import { depsPort } from '../platform/deps-port.js';

/** A client item as stored (its keys, `entity: 'client'`, the client's fields, `matchKey` when it has one). */
export type ClientItem = Record<string, unknown> & { pk: string; sk: string; id: string; organization_id: string };

export interface EarlierClient { id: string; via: MatchVia }

/** A later submission attached to an earlier client: fields to fill where empty, the submission listed, the team's notification. */
export interface MergedSubmission {
  /** Fields filled only where the client has none. */
  fill: Record<string, unknown>;
  submission: Record<string, unknown>;
  notification: Record<string, unknown>;
  at: string;
  /** The list's bound: past it the merge is `full`. */
  maxListed: number;
}

/** What a merge came to: merged, or not (`gone`: the client was deleted; `full`: its list is full or the item too large). */
export type MergeResult = 'merged' | 'gone' | 'full';

/**
 * What a read of pages of clients selects, and of each client, which fields:
 * - `notification`: clients with a notification (the inbox), `id` and `notification`;
 * - `leadRequest`: clients a lead created through the API (with a `request_id`; the CRM's have none),
 *   REQUEST_LOG_CLIENT_FIELDS alone (the settings API's IAM grant on clients allows no more).
 */
export type ClientSelection = 'notification' | 'leadRequest';
export const SELECTED_FIELDS: Record<ClientSelection, readonly string[]> = { notification: ['id', 'notification'], leadRequest: REQUEST_LOG_CLIENT_FIELDS };

/** A newest-first read: the clients selected, and whether the range was read to its end; when not, `reached` is the sort key of the last client evaluated (all above it were read, selected or not). */
export interface ClientsPage { items: Record<string, unknown>[]; complete: boolean; reached?: string }

export interface ClientsStore {
  /**
   * Puts a new client under a fresh id. An item already there is this lead's own (a retried put
   * whose answer was lost, or the adopting retry's): `existed`, not an error.
   */
  putOnce(item: ClientItem): Promise<'written' | 'existed'>;
  /** Attaches a submission to the client, when it exists with room in its list. */
  mergeOnce(organizationId: string, clientId: string, merge: MergedSubmission): Promise<MergeResult>;
  /** The newest client under the first of `tries` (match keys, in order) that has one. */
  findEarlier(organizationId: string, tries: { via: MatchVia; matchKey: string }[]): Promise<EarlierClient | undefined>;
  /** Whether the client exists (a consistent read). */
  clientExists(organizationId: string, clientId: string): Promise<boolean>;
  /** The client, or only `fields` of it (the trail's IAM grant allows no more); consistent when asked. */
  getClient(organizationId: string, clientId: string, options?: { fields?: readonly string[]; consistent?: boolean }): Promise<Record<string, unknown> | undefined>;
  /** The CRM's new client; false when the id is taken. */
  createClient(item: ClientItem): Promise<boolean>;
  /** Sets `set` (undefined values left alone) and removes `remove`; undefined when there is no such client. */
  updateClient(organizationId: string, clientId: string, change: { set: Record<string, unknown>; remove?: string[] }): Promise<Record<string, unknown> | undefined>;
  /** The deleted client; undefined when there was none. */
  deleteClient(organizationId: string, clientId: string): Promise<Record<string, unknown> | undefined>;
  /**
   * The selected clients between two sort keys (inclusive), newest first: pages of `pageSize` clients
   * evaluated until `limit` are selected (the last page may bring more), `maxPages`, or the range's end.
   */
  newestClients(organizationId: string, between: [string, string], options: { select: ClientSelection; limit: number; pageSize: number; maxPages: number }): Promise<ClientsPage>;
  /** Every selected client between two sort keys (inclusive), oldest first. */
  clientsBetween(organizationId: string, between: [string, string], select: ClientSelection): Promise<Record<string, unknown>[]>;
}

/** The filter and projection of each selection, as DynamoDB reads them. */
const SELECTIONS: Record<ClientSelection, { filter: string; projection: string; names?: Record<string, string>; values?: Record<string, unknown> }> = {
  notification: { filter: 'attribute_exists(notification)', projection: 'id, notification' },
  leadRequest: (() => {
    const names = Object.fromEntries(REQUEST_LOG_CLIENT_FIELDS.map((f) => [`#${f}`, f]));
    return { filter: 'attribute_exists(#request_id) AND #source = :api', values: { ':api': 'api' }, projection: Object.keys(names).join(', '), names };
  })(),
};

export function dynamoClientsStore(deps: Deps): ClientsStore {
  const TableName = deps.tables.clients;
  return {
    async putOnce(item) {
      try {
        await deps.doc.send(new PutCommand({ TableName, Item: item, ConditionExpression: 'attribute_not_exists(pk)' }));
        return 'written';
      } catch (error) {
        if (error instanceof ConditionalCheckFailedException) return 'existed';
        throw error;
      }
    },

    async mergeOnce(organizationId, clientId, { fill, submission, notification, at, maxListed }) {
      const names: Record<string, string> = {};
      const values: Record<string, unknown> = { ':at': at, ':one': 1, ':sub': [submission], ':empty': [], ':max': maxListed, ':ntf': notification };
      const sets = ['updated_at = :at', 'submission_count = if_not_exists(submission_count, :one) + :one', 'submissions = list_append(if_not_exists(submissions, :empty), :sub)', 'notification = :ntf'];
      for (const [field, value] of Object.entries(fill)) {
        if (value === undefined) continue;
        names[`#${field}`] = field;
        values[`:${field}`] = value;
        sets.push(`#${field} = if_not_exists(#${field}, :${field})`);
      }
      try {
        await deps.doc.send(new UpdateCommand({
          TableName,
          Key: keys.client(organizationId, clientId),
          UpdateExpression: `SET ${sets.join(', ')}`,
          ConditionExpression: 'attribute_exists(pk) AND (attribute_not_exists(submissions) OR size(submissions) < :max)',
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
          ...(Object.keys(names).length ? { ExpressionAttributeNames: names } : {}),
          ExpressionAttributeValues: values,
        }));
        return 'merged';
      } catch (error) {
        if (error instanceof ConditionalCheckFailedException) return error.Item ? 'full' : 'gone';
        // The item would pass 400 KB: full, not a 500.
        if ((error as Error).name === 'ValidationException') return 'full';
        throw error;
      }
    },

    async findEarlier(organizationId, tries) {
      for (const { via, matchKey } of tries) {
        const { Items } = await deps.doc.send(new QueryCommand({
          TableName, IndexName: 'match', KeyConditionExpression: 'matchKey = :k', ExpressionAttributeValues: { ':k': matchKey }, ScanIndexForward: false, Limit: 1,
        }));
        const [found] = Items ?? [];
        // The hash carries the organization; the key must say so too.
        if (found?.pk === keys.org(organizationId).pk && String(found.sk).startsWith('CLIENT#')) return { id: String(found.sk).slice('CLIENT#'.length), via };
      }
      return undefined;
    },

    async clientExists(organizationId, clientId) {
      const { Item } = await deps.doc.send(new GetCommand({ TableName, Key: keys.client(organizationId, clientId), ProjectionExpression: 'id', ConsistentRead: true }));
      return Boolean(Item);
    },

    async getClient(organizationId, clientId, options = {}) {
      const names = options.fields && Object.fromEntries(options.fields.map((f, i) => [`#f${i}`, f]));
      const { Item } = await deps.doc.send(new GetCommand({
        TableName, Key: keys.client(organizationId, clientId),
        ...(names ? { ProjectionExpression: Object.keys(names).join(', '), ExpressionAttributeNames: names } : {}),
        ...(options.consistent ? { ConsistentRead: true } : {}),
      }));
      return Item;
    },

    async createClient(item) {
      return (await this.putOnce(item)) === 'written';
    },

    async updateClient(organizationId, clientId, { set, remove = [] }) {
      const entries = Object.entries(set).filter(([, v]) => v !== undefined);
      const names = Object.fromEntries([...entries.map(([k], i) => [`#f${i}`, k]), ...remove.map((k, i) => [`#r${i}`, k])]);
      const values = Object.fromEntries(entries.map(([, v], i) => [`:v${i}`, v]));
      try {
        const { Attributes } = await deps.doc.send(new UpdateCommand({
          TableName, Key: keys.client(organizationId, clientId),
          UpdateExpression: `SET ${entries.map((_, i) => `#f${i} = :v${i}`).join(', ')}${remove.length ? ` REMOVE ${remove.map((_, i) => `#r${i}`).join(', ')}` : ''}`,
          ConditionExpression: 'attribute_exists(pk)',
          ExpressionAttributeNames: names,
          ExpressionAttributeValues: values,
          ReturnValues: 'ALL_NEW',
        }));
        return Attributes;
      } catch (error) {
        if (error instanceof ConditionalCheckFailedException) return undefined;
        throw error;
      }
    },

    async deleteClient(organizationId, clientId) {
      const { Attributes } = await deps.doc.send(new DeleteCommand({ TableName, Key: keys.client(organizationId, clientId), ReturnValues: 'ALL_OLD' }));
      return Attributes;
    },

    async newestClients(organizationId, between, { select, ...bounds }) {
      const { filter, projection, names, values } = SELECTIONS[select];
      const { items, complete, reached } = await queryNewest(deps, { table: TableName, pk: keys.org(organizationId).pk, between, ...bounds, filter, projection, names, values });
      return { items, complete, ...(reached ? { reached } : {}) };
    },

    async clientsBetween(organizationId, [low, high], select) {
      const { filter, projection, names, values } = SELECTIONS[select];
      return queryAll(deps, {
        TableName, FilterExpression: filter, ProjectionExpression: projection,
        ...(names ? { ExpressionAttributeNames: names } : {}),
        KeyConditionExpression: 'pk = :p AND sk BETWEEN :a AND :b', ExpressionAttributeValues: { ':p': keys.org(organizationId).pk, ':a': low, ':b': high, ...values },
      });
    },
  };
}

/** The clients store of these deps (the in-memory twin in tests). */
export const clientsPort = depsPort<ClientsStore>('clientsStore', dynamoClientsStore);
export const clientsStore = clientsPort.of;
