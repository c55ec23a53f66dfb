/** The organization's notification inbox, which the CRM's UI reads (DESIGN §6). */
import { QueryCommand } from '@aws-sdk/lib-dynamodb';
import type { Deps } from './clients.js';
import { keys } from './model.js';

export interface Notification { id: string; type: string; title: string; clientId?: string; createdAt: string }

export async function listNotifications(deps: Deps, organizationId: string, options: { limit?: number } = {}): Promise<Notification[]> {
  const { Items } = await deps.doc.send(new QueryCommand({
    TableName: deps.tables.organizations,
    KeyConditionExpression: 'pk = :p AND begins_with(sk, :s)',
    ExpressionAttributeValues: { ':p': keys.org(organizationId).pk, ':s': keys.notificationPrefix },
    ScanIndexForward: false,
    Limit: options.limit ?? 50,
  }));
  return (Items ?? []).map((i) => ({ id: i.id, type: i.type, title: i.title, clientId: i.clientId, createdAt: i.createdAt }));
}
