/**
 * The notices of an endpoint in trouble (docs/notifications.md "The notices"): `endpoint.paused` when
 * its circuit opens (circuit-store.ts: only the write that finds the circuit closed opens it, so
 * one notice per pause, keyed by the endpoint and the time it opened; a failed probe re-opening
 * it is the same pause) and `endpoint.disabled` when it is disabled (endpoints.ts: only the write
 * that finds it enabled). Handed to the notices queue, never to a mail server; a notice the queue
 * refuses is kept for the sweeper to re-drive (notify/produce.ts handOverNotices), never a failed delivery.
 */
import { MetricUnit } from '@aws-lambda-powertools/metrics';
import type { Deps } from '../platform/deps.js';
import type { WebhookEndpoint } from '../platform/model.js';
import { logger, metrics } from '../platform/observability.js';
import { endpointOrigin, type EndpointNoticeData } from '../notify/compose.js';
import type { MessageKind } from '../notify/notice.js';
import { handOverNotices } from '../notify/produce.js';
import { deliveryStore } from './delivery-port.js';
import type { DeliveryRef } from './delivery-state.js';
import { attemptError, secretsOf } from './attempt-log.js';
import { redactor } from './redaction.js';

/** A last error shown in a notice: a receiver's text, bounded. */
const ERROR_MAX = 300;

async function produce(deps: Deps, endpoint: WebhookEndpoint, kind: Extract<MessageKind, `endpoint.${string}`>, data: EndpointNoticeData): Promise<void> {
  const { organizationId, id } = endpoint;
  try {
    await handOverNotices(deps, [{ organizationId, kind, key: `${kind}|${organizationId}|${id}|${data.since}`, at: new Date(deps.now()).toISOString(), data: { ...data } }]);
  } catch (error) {
    metrics.addMetric('NoticesNotQueued', MetricUnit.Count, 1);
    logger.error('an endpoint notice could not be queued nor kept', { organizationId, endpointId: id, kind, error: error as Error });
  }
}

/** The endpoint as a notice names it: its origin, never its full URL (often a capability: compose.ts endpointOrigin). */
const described = (endpoint: WebhookEndpoint) => ({
  endpointId: endpoint.id, ...(endpointOrigin(endpoint.url) ? { url: endpointOrigin(endpoint.url) } : {}), ...(endpoint.description ? { description: endpoint.description } : {}),
});

/**
 * Deliveries to the endpoint waiting (pending) among the organization's WAITING_LOOK newest: one
 * Query of the keys-only `byCreated` index and one BatchGetItem of three attributes, once per pause.
 * `also`: the delivery whose failed attempt paused it, which waits for its retry: counted whether
 * or not its record is written yet (its first outcome writes it, after this count).
 * Undefined when it cannot be read (the notice goes without it).
 */
export const WAITING_LOOK = 200;
async function waitingDeliveries(deps: Deps, endpoint: WebhookEndpoint, also?: DeliveryRef): Promise<number | undefined> {
  try {
    const store = deliveryStore(deps);
    const { keys } = await store.newestDeliveries(endpoint.organizationId, { limit: WAITING_LOOK });
    const records = await store.get(keys.map(({ pk, sk }) => ({ pk, sk })), { projection: ['id', 'endpointId', 'status'] });
    const waiting = records.filter((r) => r.endpointId === endpoint.id && r.status === 'pending');
    return waiting.length + (also && !waiting.some((r) => r.id === also.deliveryId) ? 1 : 0);
  } catch (error) {
    logger.warn('the deliveries waiting for a paused endpoint could not be counted', { organizationId: endpoint.organizationId, endpointId: endpoint.id, error: (error as Error).message });
    return undefined;
  }
}

/** The endpoint's circuit opened at `since` until `until` (ISO), after an attempt that failed with `lastError`. */
export async function noticePaused(deps: Deps, endpoint: WebhookEndpoint, pause: { since: string; until: string; lastError?: string; waiting?: DeliveryRef }): Promise<void> {
  const waiting = await waitingDeliveries(deps, endpoint, pause.waiting);
  await produce(deps, endpoint, 'endpoint.paused', {
    ...described(endpoint), since: pause.since, until: pause.until, ...(pause.lastError ? { lastError: pause.lastError.slice(0, ERROR_MAX) } : {}),
    ...(waiting !== undefined ? { waiting } : {}),
  });
}

/** The endpoint was disabled at `since` (ISO) for `reason`. */
export const noticeDisabled = (deps: Deps, endpoint: WebhookEndpoint, disable: { since: string; reason: string; lastError?: string }) =>
  produce(deps, endpoint, 'endpoint.disabled', {
    ...described(endpoint), since: disable.since, reason: disable.reason, ...(disable.lastError ? { lastError: disable.lastError.slice(0, ERROR_MAX) } : {}),
  });

/**
 * What an attempt's failure says, for a notice: its status, else its error as the attempt log keeps
 * it (attempt-log.ts attemptError): the endpoint's secrets (its signing secrets, header values)
 * redacted, for a receiver or a proxy may echo them.
 */
export const failureOf = (result: { ok: boolean; status?: number; error?: string; errorCode?: string }, endpoint: Pick<WebhookEndpoint, 'headers' | 'secrets'>): string | undefined =>
  (result.ok ? undefined : [result.status ? `HTTP ${result.status}` : undefined, attemptError(result, redactor(secretsOf(endpoint))) ?? result.errorCode].filter(Boolean).join(': ') || 'failed');
