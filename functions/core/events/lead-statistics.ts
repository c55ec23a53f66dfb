/**
 * The new leads in a stream batch, for the leads statistics (docs/settings.md "Statistics"): a
 * client created by a lead request (it records the request that created it, lead-client.ts
 * rowOf) counts once, on its insert; a merge into an earlier client, an import or the CRM's own
 * writes are not new leads. Where it came from is the request's channel: the lead endpoint
 * (secret keys; clients written before channels were recorded count here), a page's script, or a
 * no-script form.
 */
import type { NewLead } from '../delivery/record-statistics.js';
import type { LeadSource } from '../delivery/statistics.js';
import type { StreamChange } from './stream-changes.js';

const sources: Record<string, LeadSource> = { page: 'page_key', form: 'no_script_form' };

export function newLeadsOf(changes: StreamChange[]): NewLead[] {
  return changes.flatMap(({ kind, newImage: item }) => {
    if (kind !== 'insert' || !item || item.entity !== 'client' || item.status !== 'lead') return [];
    if (typeof item.request_id !== 'string' || typeof item.organization_id !== 'string') return [];
    return [{ organizationId: item.organization_id, source: sources[String(item.request_channel)] ?? 'lead_endpoint' }];
  });
}
