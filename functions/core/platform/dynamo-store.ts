/**
 * What every store shares of DynamoDB (docs/architecture.md#stages-and-what-each-owns): the SDK's
 * clients as Deps carries them, the paginated reads (every page of a query or scan, the newest items
 * of a partition) and what DynamoDB's errors say (a cancelled transaction's reasons, a lost
 * transaction, a failed condition). Only store modules (and deps.ts, which builds the clients)
 * import it: `lint:deps` holds it to that, as it does the SDK itself.
 */
import { DynamoDBClient, ConditionalCheckFailedException, TransactionCanceledException, type CancellationReason } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, QueryCommand, ScanCommand, type QueryCommandInput, type QueryCommandOutput, type ScanCommandInput } from '@aws-sdk/lib-dynamodb';

export { DynamoDBClient, DynamoDBDocumentClient };

/** The DynamoDB clients of Deps (deps.ts createAwsClients); `capture` wraps a client for X-Ray. */
export function dynamoClients(config: { region?: string; endpoint?: string; credentials?: { accessKeyId: string; secretAccessKey: string } }, capture: <C>(client: C) => C): { dynamodb: DynamoDBClient; doc: DynamoDBDocumentClient } {
  const dynamodb = capture(new DynamoDBClient(config));
  const doc = DynamoDBDocumentClient.from(dynamodb, {
    marshallOptions: { removeUndefinedValues: true, convertClassInstanceToMap: false },
  });
  return { dynamodb, doc };
}


/** An item as the document client returns it. */
export type Item = NonNullable<QueryCommandOutput['Items']>[number];
type StartKey = Record<string, unknown> | undefined;

/** Each page of a query, in order, until DynamoDB reports no more. */
export async function* queryPages(deps: { doc: DynamoDBDocumentClient }, input: QueryCommandInput): AsyncGenerator<Item[]> {
  let start: StartKey;
  do {
    const page = await deps.doc.send(new QueryCommand({ ...input, ExclusiveStartKey: start }));
    yield page.Items ?? [];
    start = page.LastEvaluatedKey;
  } while (start);
}

/** Every item a query matches, all pages read. */
export async function queryAll(deps: { doc: DynamoDBDocumentClient }, input: QueryCommandInput): Promise<Item[]> {
  const out: Item[] = [];
  for await (const items of queryPages(deps, input)) out.push(...items);
  return out;
}

/** Every item a scan matches, all pages read (local tools only: a scan reads the whole table). */
export async function scanAll(deps: { doc: DynamoDBDocumentClient }, input: ScanCommandInput): Promise<Item[]> {
  const out: Item[] = [];
  let start: StartKey;
  do {
    const page = await deps.doc.send(new ScanCommand({ ...input, ExclusiveStartKey: start }));
    out.push(...(page.Items ?? []));
    start = page.LastEvaluatedKey;
  } while (start);
  return out;
}

export interface NewestQuery {
  table: string;
  pk: string;
  /** Sort keys starting with this prefix, or between `between[0]` and `between[1]` (inclusive). */
  skPrefix?: string;
  between?: [string, string];
  /** How many items are wanted. */
  limit: number;
  /** Items per page (default `limit`). */
  pageSize?: number;
  /** Pages read at most (default: until `limit` items or the end of the range). */
  maxPages?: number;
  /** A FilterExpression, a ProjectionExpression (read with Select SPECIFIC_ATTRIBUTES, as IAM grants on attributes require) and the names and values they use. */
  filter?: string;
  projection?: string;
  names?: Record<string, string>;
  values?: Item;
}

/**
 * The newest items of a partition, by descending sort key: pages are read until `limit` items
 * (a filter may drop some of a page), `maxPages`, or the end of the range. The last page may
 * bring the total above `limit`. `complete` tells whether the range was read to its end; when not,
 * `reached` is the sort key of the last item evaluated (everything above it was read, filtered or not).
 */
export async function queryNewest(deps: { doc: DynamoDBDocumentClient }, query: NewestQuery): Promise<{ items: Item[]; complete: boolean; reached?: string }> {
  const range = query.between
    ? { condition: 'pk = :pk AND sk BETWEEN :lo AND :hi', values: { ':lo': query.between[0], ':hi': query.between[1] } }
    : query.skPrefix !== undefined
      ? { condition: 'pk = :pk AND begins_with(sk, :sk)', values: { ':sk': query.skPrefix } }
      : { condition: 'pk = :pk', values: {} };
  const items: Item[] = [];
  let start: StartKey;
  for (let page = 0; page < (query.maxPages ?? Infinity) && items.length < query.limit; page++) {
    const out = await deps.doc.send(new QueryCommand({
      TableName: query.table,
      ...(query.filter ? { FilterExpression: query.filter } : {}),
      ...(query.projection ? { ProjectionExpression: query.projection, Select: 'SPECIFIC_ATTRIBUTES' as const } : {}),
      ...(query.names ? { ExpressionAttributeNames: query.names } : {}),
      KeyConditionExpression: range.condition,
      ExpressionAttributeValues: { ':pk': query.pk, ...range.values, ...query.values },
      ScanIndexForward: false,
      Limit: query.pageSize ?? query.limit,
      ExclusiveStartKey: start,
    }));
    items.push(...(out.Items ?? []));
    start = out.LastEvaluatedKey;
    if (!start) return { items, complete: true };
  }
  return { items, complete: false, reached: typeof start?.sk === 'string' ? start.sk : undefined };
}

export type { CancellationReason };

/** The per-item reasons of a cancelled transaction, or undefined when the error is not one. */
export const cancellationReasons = (error: unknown): CancellationReason[] | undefined =>
  error instanceof TransactionCanceledException ? error.CancellationReasons ?? [] : undefined;

/** A transaction cancelled only because another transaction touched the same item (real DynamoDB, not Local). */
export const isTransactionConflict = (reasons: CancellationReason[]) => reasons.some((r) => r.Code === 'TransactionConflict');

/** A conditional write whose condition failed (by class, or by name when the error crossed a module boundary). */
export const isConditionFailure = (error: unknown): error is ConditionalCheckFailedException =>
  error instanceof ConditionalCheckFailedException || (error as Error | undefined)?.name === 'ConditionalCheckFailedException';
