/**
 * The daily digest (docs/notifications.md "The notices"): once a day, for each organization with a
 * digest recipient, the day before (UTC) in one notice: leads by source, deliveries delivered and
 * failed per endpoint, and the failed deliveries waiting in the dead-letter queue. Here because it
 * reads what the settings page reads (the request log's lead rows, the delivery lists) through the
 * same stores, never a scan: one Query of the day's clients (the `leadRequest` selection, which
 * projects no contact details) and the `byCreated` index's day of deliveries, at most
 * DIGEST_READ_BUDGET of them (past it the counts say "at least").
 *
 * The schedule runs hourly and acts in the hour `digestHourUtc` only, queueing one job per
 * organization (settings/digest-queue.ts); each digest is made from its own message, so however
 * many organizations there are, no invocation does more than one's reads. The notice's key is the
 * organization and the day, so a second run in that hour (or a job received twice) sends nothing twice.
 */
import type { Deps } from '../platform/deps.js';
import { timePart } from '../platform/ids.js';
import { keys } from '../platform/model.js';
import { clientsStore } from '../intake/clients-store.js';
import { currentEndpoints } from '../delivery/endpoints.js';
import { leadSourceOf } from '../delivery/statistics.js';
import { endpointOrigin, type DigestData } from '../notify/compose.js';
import type { NoticeMessage } from '../notify/notice.js';
import { produceNotices } from '../notify/produce.js';
import { recipientStore } from '../notify/recipient-store.js';
import { pageDeliverySummaries } from './delivery-summaries.js';
import { digestQueuePort, type DigestJob } from './digest-queue.js';

/** Deliveries one organization's digest looks at, at most. */
export const DIGEST_READ_BUDGET = 5_000;
/** Organizations digested at once. */
const CONCURRENCY = 4;

const DAY_MS = 86_400_000;

/** The day a run at `now` digests: the day before, in the digest hour only. */
export function digestDay(now: number, hourUtc: number): string | undefined {
  if (new Date(now).getUTCHours() !== hourUtc) return undefined;
  return new Date(now - DAY_MS).toISOString().slice(0, 10);
}

/** Leads by source, by the leads statistics' names (delivery/statistics.ts leadSourceOf): lead endpoint, page key, no-script form. */
async function leadsBySource(deps: Deps, organizationId: string, start: number): Promise<Record<string, number>> {
  const sk = (id: string) => keys.client(organizationId, id).sk;
  // Client ids are time-ordered (intake/lead-client.ts): the day's clients are one key range.
  const rows = await clientsStore(deps).clientsBetween(organizationId, [sk(`cli_${timePart(start)}`), sk(`cli_${timePart(start + DAY_MS - 1)}~`)], 'leadRequest');
  const out: Record<string, number> = {};
  for (const row of rows) {
    const source = leadSourceOf(row);
    out[source] = (out[source] ?? 0) + 1;
  }
  return out;
}

/** One organization's digest of `day` (`YYYY-MM-DD`). */
export async function digestOf(deps: Deps, organizationId: string, day: string): Promise<DigestData> {
  const start = Date.parse(`${day}T00:00:00.000Z`);
  const [leads, endpoints, deliveries] = await Promise.all([
    leadsBySource(deps, organizationId, start),
    currentEndpoints(deps, organizationId),
    pageDeliverySummaries(deps, organizationId, {
      since: new Date(start).toISOString(), until: new Date(start + DAY_MS - 1).toISOString(), limit: DIGEST_READ_BUDGET, budget: DIGEST_READ_BUDGET,
    }),
  ]);
  const byEndpoint = new Map<string, { delivered: number; failed: number; pending: number }>();
  let deadLetters = 0;
  for (const d of deliveries.items) {
    const counts = byEndpoint.get(d.endpointId) ?? { delivered: 0, failed: 0, pending: 0 };
    if (d.status === 'delivered') counts.delivered += 1;
    else if (d.status === 'failed') {
      counts.failed += 1;
      deadLetters += 1;
    } else if (d.status === 'pending') counts.pending += 1;
    byEndpoint.set(d.endpointId, counts);
  }
  // Origins alone: a webhook URL may be a capability (notify/compose.ts endpointOrigin).
  const urls = new Map(endpoints.flatMap((e) => { const origin = endpointOrigin(e.url); return origin ? [[e.id, origin] as const] : []; }));
  return {
    day, leadsBySource: leads,
    endpoints: [...byEndpoint].map(([endpointId, c]) => ({ endpointId, ...(urls.has(endpointId) ? { url: urls.get(endpointId) } : {}), ...c })),
    deadLetters,
    ...(deliveries.next ? { partial: true } : {}),
  };
}

/** The digests of `day` for these organizations, handed to the notices queue. */
export async function produceDigests(deps: Deps, organizationIds: string[], day: string): Promise<number> {
  const at = new Date(deps.now()).toISOString();
  let produced = 0;
  for (let i = 0; i < organizationIds.length; i += CONCURRENCY) {
    const messages: NoticeMessage[] = await Promise.all(organizationIds.slice(i, i + CONCURRENCY).map(async (organizationId) => ({
      organizationId, kind: 'daily_digest' as const, key: `daily_digest|${organizationId}|${day}`, at, data: { ...(await digestOf(deps, organizationId, day)) },
    })));
    await produceNotices(deps, messages);
    produced += messages.length;
  }
  return produced;
}

/**
 * A scheduled run: in the digest hour, one digest job per organization in the recipients' digest
 * index, queued for the day before (the digests themselves are made one per message, each within
 * its own invocation: digestJob); otherwise nothing (no read).
 */
export async function runDailyDigest(deps: Deps): Promise<{ day?: string; queued: number }> {
  const day = digestDay(deps.now(), deps.config.digestHourUtc);
  if (!day) return { queued: 0 };
  // Organizations whose digest recipient is not confirmed yet get one too, which the mailer sends to nobody: one Query instead of one per organization.
  const organizationIds = await recipientStore(deps).digestOrganizations();
  await digestQueuePort.of(deps).enqueue(organizationIds.map((organizationId) => ({ organizationId, day })));
  return { day, queued: organizationIds.length };
}

/** One queued job: that organization's digest of that day, handed to the notices queue (its key makes a job received twice one e-mail). */
export async function digestJob(deps: Deps, job: DigestJob): Promise<void> {
  await produceDigests(deps, [job.organizationId], job.day);
}
