/**
 * The organization's notification inbox, which the CRM's UI reads (DESIGN §6). A lead's
 * notification is stored on its client item (attribute `notification`), so it is written in the
 * same single-item write as the client and can never be missing for a created lead. Inbox items
 * written by earlier versions (`NOTIFICATION#…` in the organizations table) are listed too.
 */
import { QueryCommand, type QueryCommandInput } from '@aws-sdk/lib-dynamodb';
import type { Deps } from './clients.js';
import { keys } from './model.js';

export interface Notification { id: string; type: string; title: string; clientId?: string; createdAt: string }

async function queryAll(deps: Deps, input: QueryCommandInput): Promise<Record<string, unknown>[]> {
  const out: Record<string, unknown>[] = [];
  let start: Record<string, unknown> | undefined;
  do {
    const page = await deps.doc.send(new QueryCommand({ ...input, ExclusiveStartKey: start }));
    out.push(...(page.Items ?? []));
    start = page.LastEvaluatedKey;
  } while (start);
  return out;
}

/** Newest first. Reads the organization's client partition (notification attribute only). */
export async function listNotifications(deps: Deps, organizationId: string, options: { limit?: number } = {}): Promise<Notification[]> {
  const pk = keys.org(organizationId).pk;
  const [clients, legacy] = await Promise.all([
    queryAll(deps, {
      TableName: deps.tables.clients,
      KeyConditionExpression: 'pk = :p AND begins_with(sk, :s)',
      FilterExpression: 'attribute_exists(notification)',
      ProjectionExpression: 'id, notification',
      ExpressionAttributeValues: { ':p': pk, ':s': 'CLIENT#' },
    }),
    queryAll(deps, {
      TableName: deps.tables.organizations,
      KeyConditionExpression: 'pk = :p AND begins_with(sk, :s)',
      ExpressionAttributeValues: { ':p': pk, ':s': keys.notificationPrefix },
    }),
  ]);
  const fromClients = clients.map(({ id, notification }) => {
    const n = notification as Record<string, string>;
    return { id: n.id, type: n.type, title: n.title, clientId: id as string, createdAt: n.createdAt };
  });
  const fromInbox = legacy.map((i) => ({ id: i.id, type: i.type, title: i.title, clientId: i.clientId, createdAt: i.createdAt }) as Notification);
  return [...fromClients, ...fromInbox].sort((a, b) => b.createdAt.localeCompare(a.createdAt)).slice(0, options.limit ?? 50);
}
