/**
 * GET /api/settings/deliveries reads an organization's deliveries without their payloads: a list
 * shows none, and the domain's listDeliveries (delivery/redrive.ts) fetches every listed delivery's
 * event item (up to the queue's 240 KiB each) for the CLI, i.e. every event of the organization on
 * each page of the settings list. Only the attributes a summary shows are projected. Delivery ids
 * are hashes, not time-ordered, so the partition is still read whole and sorted here (a
 * newest-first page read needs an index keyed by creation time).
 */
import type { Deps } from '../platform/deps.js';
import { keys, type DeliveryRecord } from '../platform/model.js';
import { queryAll } from '../platform/query.js';

/** What deliverySummary (views.ts) shows: no payload. */
export type DeliverySummaryRecord = Omit<DeliveryRecord, 'payload'>;

const shown = ['id', 'organizationId', 'endpointId', 'eventId', 'eventType', 'status', 'reason', 'attempts', 'olderAttempts', 'createdAt', 'updatedAt', 'nextAttemptAt', 'payloadOmitted'] as const;

export async function listDeliverySummaries(deps: Deps, organizationId: string): Promise<DeliverySummaryRecord[]> {
  const items = await queryAll(deps, {
    TableName: deps.tables.deliveries,
    KeyConditionExpression: 'pk = :pk AND begins_with(sk, :sk)',
    ExpressionAttributeValues: { ':pk': keys.org(organizationId).pk, ':sk': keys.deliveryPrefix },
    // Names, not the attributes themselves: status and others are DynamoDB reserved words.
    ProjectionExpression: shown.map((_, i) => `#a${i}`).join(', '),
    ExpressionAttributeNames: Object.fromEntries(shown.map((name, i) => [`#a${i}`, name])),
    ConsistentRead: true,
  });
  return items.map((item) => ({ ...item, attempts: item.attempts ?? [] }) as unknown as DeliverySummaryRecord);
}
