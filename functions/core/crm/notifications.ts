/**
 * The organization's notification inbox, which the CRM's UI reads (docs/leads.md). A lead's
 * notification is stored on its client item (attribute `notification`), so it is written in the
 * same single-item write as the client and can never be missing for a created lead. Inbox items
 * written by earlier versions (`NOTIFICATION#…` in the organizations table) are listed too.
 *
 * Cost: client ids are time-ordered (ids.ts), so the newest clients sort last in the partition and
 * the inbox is read newest-first, a bounded number of pages, without an index. Clients with the
 * older random ids (and the old inbox items) are read only while the organization has fewer
 * time-ordered clients than asked for, i.e. only until it has received that many leads.
 */
import type { Deps } from '../platform/deps.js';
import { timePart } from '../platform/ids.js';
import { keys } from '../platform/model.js';
import { clientsStore } from '../intake/clients-store.js';
import { organizationStore } from '../tenancy/organization-store.js';

export interface Notification { id: string; type: string; title: string; clientId?: string; createdAt: string }

/** Time-ordered client ids are not older than this (the format's introduction). */
const TIME_ORDERED_SINCE = Date.parse('2026-11-01T00:00:00Z');
/** Pages of the newest-first read; with clients that carry no notification, the inbox may show fewer. */
const MAX_PAGES = 5;
const PAGE_SIZE = 100;

const fromClient = ({ id, notification }: Record<string, unknown>): Notification => {
  const n = notification as Record<string, string>;
  return { id: n.id, type: n.type, title: n.title, clientId: id as string, createdAt: n.createdAt };
};

/** Newest first: at most `limit` (default 50). */
export async function listNotifications(deps: Deps, organizationId: string, options: { limit?: number } = {}): Promise<Notification[]> {
  const limit = options.limit ?? 50;
  const clients = clientsStore(deps);
  const clientSk = (id: string) => keys.client(organizationId, id).sk;
  const [low, high] = [clientSk(`cli_${timePart(TIME_ORDERED_SINCE)}`), clientSk(`cli_${timePart(deps.now() + 86_400_000)}~`)];

  // Clients with time-ordered ids, newest first, until `limit` notifications or MAX_PAGES pages.
  const newest = await clients.newestClients(organizationId, [low, high], { select: 'notification', limit, pageSize: Math.min(PAGE_SIZE, limit), maxPages: MAX_PAGES });
  const found = newest.items.map(fromClient);
  // Fewer than asked for and the time-ordered range read to its end: the older items may hold the rest.
  if (found.length < limit && newest.complete) {
    const [below, above, legacy] = await Promise.all([
      clients.clientsBetween(organizationId, [clientSk(''), low], 'notification'),
      clients.clientsBetween(organizationId, [high, clientSk('~')], 'notification'),
      organizationStore(deps).legacyNotifications(organizationId),
    ]);
    found.push(...below.map(fromClient), ...above.map(fromClient), ...legacy);
  }
  return found.sort((a, b) => b.createdAt.localeCompare(a.createdAt)).slice(0, limit);
}
