/**
 * The deliveries table's one writer (as queue.ts is the delivery messages' one producer): the
 * DynamoDB implementation of the delivery store (delivery-state.ts). Every change to a delivery
 * record is a named transition carried out as one UpdateItem that writes only what it changes,
 * conditional on the state it leaves (and, where the write was derived from a read, on the
 * `version` read); new records and their events' payload items are BatchWriteItem puts. How deliveries are stored (docs/data-model.md,
 * docs/capacity.md counts every write): an event's payload once, in an `EVENT#` item beside its
 * deliveries, and per (event, endpoint) a small record with the status and the attempts. The id
 * index (gsi1) and the due-time index (`due`) are keys-only, so an attempt or a status never writes
 * an index; only parking a retry, or clearing it, writes the sparse due index.
 */
import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import { BatchGetCommand, BatchWriteCommand, GetCommand, QueryCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { MetricUnit } from '@aws-lambda-powertools/metrics';
import type { Deps } from '../platform/deps.js';
import { logger, metrics } from '../platform/observability.js';
import { inBatches } from '../platform/batches.js';
import { backoffMs, BACKOFFS, sleep } from '../platform/retry.js';
import { keys } from '../platform/model.js';
import { queryAll, queryPages, scanAll } from '../platform/dynamo-store.js';
import { MAX_KEPT_ATTEMPTS } from './attempt-log.js';
import { changeOf, holds, targetOf, type Change, type CreatedKey, type DeliveryStore, type DueKey, type Key, type StoredItem } from './delivery-state.js';

/** The index of delivery records by creation (lib/topology.ts `deliveries.globalIndexes`). */
export const BY_CREATED_INDEX = 'byCreated';

/** Backs off between rounds of unprocessed items (throttling, BACKOFFS.batchUnprocessed); gives up after this many. */
const MAX_ROUNDS = 8;
const backoff = (round: number) => sleep(backoffMs(round, BACKOFFS.batchUnprocessed));

/** Puts every item with BatchWriteItem (25 per call, in parallel), retrying what DynamoDB leaves unprocessed. */
async function putAll(deps: Deps, items: StoredItem[]): Promise<void> {
  const table = deps.tables.deliveries;
  await Promise.all(inBatches(items, 25).map(async (batch) => {
    let requests = batch.map((Item) => ({ PutRequest: { Item } }));
    for (let round = 0; requests.length > 0; round++) {
      if (round >= MAX_ROUNDS) throw new Error(`BatchWriteItem left ${requests.length} item(s) unprocessed after ${MAX_ROUNDS} rounds`);
      if (round > 0) await backoff(round);
      const out = await deps.doc.send(new BatchWriteCommand({ RequestItems: { [table]: requests } }));
      requests = (out.UnprocessedItems?.[table] ?? []) as typeof requests;
    }
  }));
}

/** Names for a projection (status and others are reserved words). */
const projected = (projection?: string[]) => projection && {
  ProjectionExpression: projection.map((_, i) => `#p${i}`).join(', '),
  ExpressionAttributeNames: Object.fromEntries(projection.map((p, i) => [`#p${i}`, p])),
};

/** Reads items by key with BatchGetItem (100 per call, in parallel), retrying unprocessed keys; missing ones are absent. */
async function getAll(deps: Deps, keyList: Key[], options: { consistent?: boolean; projection?: string[] } = {}): Promise<StoredItem[]> {
  const table = deps.tables.deliveries;
  const unique = [...new Map(keyList.map((k) => [`${k.pk}\u0000${k.sk}`, k])).values()];
  const pages = await Promise.all(inBatches(unique, 100).map(async (batch) => {
    const found: StoredItem[] = [];
    let pending: Key[] = batch;
    for (let round = 0; pending.length > 0; round++) {
      if (round >= MAX_ROUNDS) throw new Error(`BatchGetItem left ${pending.length} key(s) unprocessed after ${MAX_ROUNDS} rounds`);
      if (round > 0) await backoff(round);
      const out = await deps.doc.send(new BatchGetCommand({
        RequestItems: { [table]: { Keys: pending, ConsistentRead: options.consistent ?? false, ...projected(options.projection) } },
      }));
      found.push(...(out.Responses?.[table] ?? []));
      pending = (out.UnprocessedKeys?.[table]?.Keys ?? []) as Key[];
    }
    return found;
  }));
  return pages.flat();
}

/** Attribute names that are (or may become) reserved words. */
const NAMES: Record<string, string> = { status: '#s', version: '#ver' };

/** A change as an UpdateItem's expressions (`list_append` cannot trim: trimAttempts follows); a transition adds 1 to `version`. */
export function updateOf(change: Change) {
  const values: Record<string, unknown> = {};
  const name = (attribute: string) => NAMES[attribute] ?? attribute;
  const sets = Object.entries(change.set).map(([attribute, value], i) => {
    values[`:v${i}`] = value;
    return `${name(attribute)} = :v${i}`;
  });
  if (change.append) {
    sets.push('attempts = list_append(if_not_exists(attempts, :empty), :a)');
    Object.assign(values, { ':a': [change.append], ':empty': [] });
  }
  sets.push('#ver = if_not_exists(#ver, :zero) + :one');
  Object.assign(values, { ':zero': 0, ':one': 1 });
  const removes = change.remove.filter((a) => !(a in change.set)).map(name);
  // None stored (Change.create): the record's other attributes, each kept if the record exists.
  const created: Record<string, string> = {};
  const creates = change.create && holds(change.leaves, change.create);
  if (creates) {
    Object.entries(change.create!).filter(([a, v]) => v !== undefined && !['pk', 'sk', 'version'].includes(a) && !(a in change.set) && !change.remove.includes(a) && !(a === 'attempts' && change.append))
      .forEach(([attribute, value], i) => {
        created[`#c${i}`] = attribute;
        values[`:c${i}`] = value;
        sets.push(`#c${i} = if_not_exists(#c${i}, :c${i})`);
      });
  }
  const { leaves } = change;
  const conditions: string[] = [];
  if ('dueAt' in leaves) {
    conditions.push('dueAt = :seen');
    values[':seen'] = leaves.dueAt;
  } else {
    conditions.push('attribute_exists(pk)');
    if (leaves.status) conditions.push('#s = :was');
    if (leaves.notStatus) conditions.push('#s <> :was');
    if (leaves.status ?? leaves.notStatus) values[':was'] = leaves.status ?? leaves.notStatus;
    if (leaves.notDeliveredAt) {
      conditions.push('(attribute_not_exists(deliveredAt) OR deliveredAt <> :at)');
      values[':at'] = leaves.notDeliveredAt;
    }
    if (leaves.version !== undefined) {
      conditions.push(leaves.version === 0 ? 'attribute_not_exists(#ver)' : '#ver = :ver');
      if (leaves.version !== 0) values[':ver'] = leaves.version;
    }
    if (leaves.roundFrom !== undefined) {
      conditions.push('(attribute_not_exists(redrivenAt) OR redrivenAt <= :round)');
      values[':round'] = leaves.roundFrom;
    }
  }
  const expressions = `${sets.join()} ${conditions.join()}`;
  const names = { ...Object.fromEntries(Object.entries(NAMES).filter(([, n]) => new RegExp(`${n}\\b`).test(expressions)).map(([a, n]) => [n, a])), ...created };
  return {
    UpdateExpression: [sets.length ? `SET ${sets.join(', ')}` : '', removes.length ? `REMOVE ${removes.join(', ')}` : ''].join(' ').trim(),
    ConditionExpression: creates ? `attribute_not_exists(pk) OR (${conditions.join(' AND ')})` : conditions.join(' AND '),
    ...(Object.keys(names).length ? { ExpressionAttributeNames: names } : {}),
    ...(Object.keys(values).length ? { ExpressionAttributeValues: values } : {}),
  };
}

/**
 * After an UpdateItem appended an attempt: when the list it returned (`ReturnValues: UPDATED_NEW`)
 * is over the bound (attempt-log.ts), drops its oldest entries and counts them, conditional on the
 * list still having that length. A writer that appended meanwhile makes the condition fail: that
 * writer's own trim does the work instead. Best effort: the transition has landed, so a failed trim
 * (throttled) must not fail it (its message would be attempted again); the next append trims
 * whatever is over the bound. It leaves `version` alone: no transition rewrites the log whole.
 */
async function trimAttempts(deps: Deps, key: Key, updated: Record<string, unknown> | undefined): Promise<void> {
  const length = Array.isArray(updated?.attempts) ? updated.attempts.length : 0;
  const excess = length - MAX_KEPT_ATTEMPTS;
  if (excess <= 0) return;
  try {
    await deps.doc.send(new UpdateCommand({
      TableName: deps.tables.deliveries,
      Key: key,
      UpdateExpression: `REMOVE ${Array.from({ length: excess }, (_, i) => `attempts[${i}]`).join(', ')} SET olderAttempts = if_not_exists(olderAttempts, :zero) + :n`,
      ConditionExpression: 'size(attempts) = :length',
      ExpressionAttributeValues: { ':zero': 0, ':n': excess, ':length': length },
    }));
  } catch (error) {
    if (isConditionFailure(error)) return;
    logger.warn('trimming a delivery’s attempt log failed; the next attempt trims it', { error: error as Error });
    metrics.addMetric('AttemptLogTrimsFailed', MetricUnit.Count, 1);
  }
}

const isConditionFailure = (error: unknown) => error instanceof ConditionalCheckFailedException || (error as Error).name === 'ConditionalCheckFailedException';

/** The deliveries table as the delivery stage's store. */
export function dynamoDeliveryStore(deps: Deps): DeliveryStore {
  const table = () => deps.tables.deliveries;
  return {
    get: (keyList, options) => getAll(deps, keyList, options),
    getOne: async (key, options = {}) => (await deps.doc.send(new GetCommand({
      TableName: table(), Key: key, ConsistentRead: options.consistent ?? false, ...projected(options.projection),
    }))).Item,
    deliveriesOf: (organizationId, options = {}) => queryAll(deps, {
      TableName: table(),
      KeyConditionExpression: 'pk = :pk AND begins_with(sk, :sk)',
      ExpressionAttributeValues: { ':pk': keys.org(organizationId).pk, ':sk': keys.deliveryPrefix },
      ...projected(options.projection),
      ConsistentRead: true,
    }),
    async newestDeliveries(organizationId, query) {
      const range = query.since && query.until ? ' AND createdAt BETWEEN :since AND :until' : query.since ? ' AND createdAt >= :since' : query.until ? ' AND createdAt <= :until' : '';
      const out = await deps.doc.send(new QueryCommand({
        TableName: table(), IndexName: BY_CREATED_INDEX, ScanIndexForward: false,
        KeyConditionExpression: `pk = :pk${range}`,
        ExpressionAttributeValues: { ':pk': keys.org(organizationId).pk, ...(query.since ? { ':since': query.since } : {}), ...(query.until ? { ':until': query.until } : {}) },
        Limit: query.limit, ExclusiveStartKey: query.after,
      }));
      const createdKey = (i: Record<string, unknown>): CreatedKey => ({ pk: i.pk as string, sk: i.sk as string, createdAt: i.createdAt as string });
      return { keys: (out.Items ?? []).map(createdKey), ...(out.LastEvaluatedKey ? { next: createdKey(out.LastEvaluatedKey) } : {}) };
    },
    async keyOf(deliveryId) {
      const { Items = [] } = await deps.doc.send(new QueryCommand({
        TableName: table(), IndexName: 'gsi1',
        KeyConditionExpression: 'gsi1pk = :pk', ExpressionAttributeValues: { ':pk': keys.deliveryIndex(deliveryId).gsi1pk },
      }));
      return Items[0] && { pk: Items[0].pk as string, sk: Items[0].sk as string };
    },
    async dueIn(shard, horizon, cap) {
      const found: DueKey[] = [];
      for await (const page of queryPages(deps, {
        TableName: table(), IndexName: 'due',
        KeyConditionExpression: 'duePk = :s AND dueAt <= :h', ExpressionAttributeValues: { ':s': shard, ':h': horizon },
      })) {
        found.push(...page.map((i) => ({ pk: i.pk as string, sk: i.sk as string, dueAt: Number(i.dueAt) })));
        if (found.length > cap) return { keys: found.slice(0, cap), complete: false }; // exactly `cap`: complete only if nothing follows
      }
      return { keys: found, complete: true };
    },
    requeueable: () => scanAll(deps, {
      TableName: table(),
      FilterExpression: '(#s = :p AND #e = :delivery AND attribute_not_exists(dueAt)) OR #e = :event',
      ExpressionAttributeNames: { '#s': 'status', '#e': 'entity' },
      ExpressionAttributeValues: { ':p': 'pending', ':delivery': 'delivery', ':event': 'event' },
    }),
    recorded: (items) => putAll(deps, items),
    async transition(ref, t) {
      const change = changeOf(ref, t, deps.now());
      const key = targetOf(ref, t);
      try {
        const { Attributes } = await deps.doc.send(new UpdateCommand({
          TableName: table(), Key: key, ...updateOf(change), ...(change.append ? { ReturnValues: 'UPDATED_NEW' as const } : {}),
        }));
        if (change.append) await trimAttempts(deps, key, Attributes); // the log stays bounded (attempt-log.ts)
        return true;
      } catch (error) {
        if (isConditionFailure(error)) return false;
        throw error;
      }
    },
  };
}
