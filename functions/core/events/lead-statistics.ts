/**
 * The new leads in a stream batch, for the leads statistics (docs/settings.md "Statistics"): a
 * client created by a lead request (it records the request that created it, lead-client.ts
 * rowOf) counts once, on its insert; a merge into an earlier client, an import or the CRM's own
 * writes are not new leads. Where it came from is the request's channel: the lead endpoint
 * (secret keys; clients written before channels were recorded count here), a page's script, or a
 * no-script form. The organization is the item's key (`ORG#<id>`, docs/architecture.md#tenancy), as the
 * fan-out's: an item whose `organization_id` disagrees is no lead of either (the fan-out drops it
 * too), and an item `crm tables import` restores was counted when it first came in.
 */
import type { NewLead } from '../delivery/record-statistics.js';
import { leadSourceOf } from '../delivery/statistics.js';
import { orgIdOf } from '../platform/model.js';
import { restoredAtAttribute } from './derive.js';
import type { StreamChange } from './stream-changes.js';

export function newLeadsOf(changes: StreamChange[]): NewLead[] {
  return changes.flatMap(({ kind, keys, newImage: item }) => {
    if (kind !== 'insert' || !item || item.entity !== 'client' || item.status !== 'lead') return [];
    if (typeof item.request_id !== 'string' || item[restoredAtAttribute] !== undefined) return [];
    const pk = keys.pk ?? item.pk;
    if (typeof pk !== 'string' || !pk.startsWith('ORG#') || pk.length <= 4 || item.organization_id !== orgIdOf(pk)) return [];
    return [{ organizationId: orgIdOf(pk), source: leadSourceOf(item) }];
  });
}
