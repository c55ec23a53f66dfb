/**
 * The management API's shapes (the contract of docs/settings.md, /api/settings/...): keys, endpoints and
 * deliveries as an organization's admin sees them. Never a key, a hash or a signing secret: those
 * appear only in the responses that create them (handle-settings-request.ts adds them there).
 */
import type { ApiKeySummary } from '../tenancy/api-keys.js';
import { API_KEY_PREFIX, PUBLISHABLE_KEY_PREFIX } from '../tenancy/api-keys.js';
import type { EndpointSummary } from '../delivery/endpoints.js';
import type { DeliveryRecord } from '../platform/model.js';
import { checkAnswer, type CheckAnswer } from '../events/receiver-check.js';

export interface KeyView {
  id: string;
  name: string;
  kind: 'secret' | 'publishable';
  /** What the key starts with and, where kept, its last 4 characters (`crm_live_…x7Qa`): keys are told apart by these and their id. */
  prefix: string;
  /** The key's last 4 characters; null for a key made before they were kept. */
  last4: string | null;
  status: ApiKeySummary['status'];
  createdAt: string;
  lastUsedAt: string | null;
  expiresAt: string | null;
  /** Publishable keys only (docs/leads.md#lead-forms-in-public-pages-publishable-keys); null: not set (no cap, the default per-address limit and honeypot field). */
  origins?: string[];
  thankYouUrl?: string | null;
  dailyCap?: number | null;
  perIpLimit?: number | null;
  honeypotField?: string | null;
}

export function keyView(key: Omit<ApiKeySummary, 'status'> & { status?: ApiKeySummary['status'] }, status: ApiKeySummary['status'] = key.status ?? 'active'): KeyView {
  const kind = key.kind === 'publishable' ? 'publishable' : 'secret';
  return {
    id: key.keyId,
    name: key.name,
    kind,
    prefix: `${kind === 'publishable' ? PUBLISHABLE_KEY_PREFIX : API_KEY_PREFIX}…${key.last4 ?? ''}`,
    last4: key.last4 ?? null,
    status,
    createdAt: key.createdAt,
    lastUsedAt: key.lastUsedAt ?? null,
    // A revoked key ends at its revocation.
    expiresAt: key.revokedAt ?? key.expiresAt ?? null,
    ...(kind === 'publishable' ? {
      origins: key.origins ?? [],
      thankYouUrl: key.thankYouUrl ?? null,
      dailyCap: key.dailyCap ?? null,
      perIpLimit: key.perIpLimit ?? null,
      honeypotField: key.honeypotField ?? null,
    } : {}),
  };
}

export interface EndpointView {
  id: string;
  url: string;
  events: string[];
  enabled: boolean;
  description: string | null;
  createdAt: string;
  updatedAt: string;
  /** `hmac` (`v1` signatures, a `whsec_` secret) or `ed25519` (`v1a`, verified with `public_key`). */
  signing: 'hmac' | 'ed25519';
  /** ed25519 endpoints: the current key's `whpk_…` (base64 of the raw 32-byte public key). */
  public_key?: string;
  /** Every key signing now, newest first, each retiring one with its end time (a rotation's or a scheme switch's grace). */
  signing_keys: { scheme: 'hmac' | 'ed25519'; public_key?: string; expires_at: string | null }[];
  secretCount: number;
  /** Custom headers by name, each value masked (never shown in full again). */
  headers: Record<string, string>;
  rateLimitPerSecond: number | null;
  disabledReason?: string;
  failingSince?: string;
  circuit?: { state: 'closed' | 'open' | 'half-open'; until?: string };
  /** The last receiver check (docs/webhooks.md#checking-a-receiver); null: never checked. */
  lastCheck: CheckAnswer | null;
}

export function endpointView(endpoint: EndpointSummary & { updatedAt?: string; circuit?: EndpointView['circuit'] }): EndpointView {
  return {
    id: endpoint.id,
    url: endpoint.url,
    events: endpoint.events,
    enabled: endpoint.enabled,
    description: endpoint.description ?? null,
    createdAt: endpoint.createdAt,
    updatedAt: endpoint.updatedAt ?? endpoint.createdAt,
    signing: endpoint.signing,
    ...(endpoint.publicKey ? { public_key: endpoint.publicKey } : {}),
    signing_keys: endpoint.signingKeys.map((k) => ({ scheme: k.scheme, ...(k.publicKey ? { public_key: k.publicKey } : {}), expires_at: k.expiresAt ?? null })),
    secretCount: endpoint.secretCount,
    headers: endpoint.headers,
    rateLimitPerSecond: endpoint.rateLimitPerSecond ?? null,
    ...(endpoint.disabledReason ? { disabledReason: endpoint.disabledReason } : {}),
    ...(endpoint.failingSince ? { failingSince: endpoint.failingSince } : {}),
    ...(endpoint.circuit ? { circuit: endpoint.circuit } : {}),
    lastCheck: endpoint.lastCheck ? checkAnswer(endpoint.lastCheck) : null,
  };
}

export type DeliveryStatusView = 'pending' | 'delivered' | 'retrying' | 'failed' | 'skipped';

export interface DeliverySummaryView {
  id: string;
  eventId: string;
  eventType: string;
  endpointId: string;
  url: string | null;
  status: DeliveryStatusView;
  attemptCount: number;
  lastStatusCode: number | null;
  createdAt: string;
  updatedAt: string;
  nextAttemptAt: string | null;
  /** Why it was skipped or failed without an attempt. */
  reason: string | null;
}

export interface DeliveryDetailView extends DeliverySummaryView {
  payload: object;
  attempts: AttemptView[];
}

export interface AttemptView {
  /** The attempt's number over the delivery's whole life: a re-delivery continues it (#1, #2, then #3 manual). */
  number: number;
  /** The number within its round (the first round's automatic retries, or a re-delivery's): what the retry schedule counts. */
  attempt: number;
  /** The first attempt of a round someone started (a re-delivery from the page, the CLI or a dead-letter redeliver). */
  manual: boolean;
  at: string;
  statusCode: number | null;
  durationMs: number;
  error: string | null;
  responseExcerpt: string | null;
  /** What was sent and what came back (null for attempts recorded before headers were kept). */
  requestHeaders: Record<string, string> | null;
  responseHeaders: Record<string, string> | null;
}

/**
 * The kept attempts numbered over the delivery's life. A round's first attempt is number 1 of that
 * round (queue.ts attemptNumberOf); every round after the first was begun by a redelivery, so an
 * attempt numbered 1 that is not the delivery's very first attempt is a manual one.
 */
export function attemptViews(record: Pick<DeliveryRecord, 'attempts' | 'olderAttempts'>): AttemptView[] {
  const older = Number(record.olderAttempts ?? 0);
  return (record.attempts ?? []).map((a, i) => ({
    number: older + i + 1,
    attempt: a.attempt,
    manual: a.attempt === 1 && older + i > 0,
    at: a.at,
    statusCode: a.statusCode ?? null,
    durationMs: a.latencyMs,
    error: a.error ?? null,
    responseExcerpt: a.responseBody ?? null,
    requestHeaders: a.requestHeaders ?? null,
    responseHeaders: a.responseHeaders ?? null,
  }));
}

/** A pending delivery with a next attempt scheduled is "retrying" (a re-queued one is pending again). */
export const isRetrying = (record: Pick<DeliveryRecord, 'status' | 'nextAttemptAt'>) => record.status === 'pending' && Boolean(record.nextAttemptAt);

/** Re-queued (a redelivery, Retry now) and no attempt recorded since: "Retry now" again is a 409. */
export const awaitingRedelivery = (record: Pick<DeliveryRecord, 'status' | 'redrivenAt' | 'attempts'>) =>
  record.status === 'pending' && Boolean(record.redrivenAt) && !(record.attempts ?? []).some((a) => a.at >= record.redrivenAt!);


export function deliverySummary(record: Omit<DeliveryRecord, 'payload'>, urls: ReadonlyMap<string, string>): DeliverySummaryView {
  const attempts = record.attempts ?? [];
  const last = attempts.at(-1);
  return {
    id: record.id,
    eventId: record.eventId,
    eventType: record.eventType,
    endpointId: record.endpointId,
    url: urls.get(record.endpointId) ?? null,
    status: isRetrying(record) ? 'retrying' : record.status,
    attemptCount: attempts.length + (record.olderAttempts ?? 0), // the record keeps the recent ones, counts the rest
    lastStatusCode: last?.statusCode ?? null,
    createdAt: record.createdAt,
    updatedAt: record.updatedAt ?? record.createdAt,
    nextAttemptAt: record.nextAttemptAt ?? null,
    reason: record.reason ?? null,
  };
}

export function deliveryDetail(record: DeliveryRecord, urls: ReadonlyMap<string, string>): DeliveryDetailView {
  return {
    ...deliverySummary(record, urls),
    payload: record.payload,
    attempts: attemptViews(record),
  };
}
