/**
 * The receiver check (docs/webhooks.md#checking-a-receiver): a short, fixed series of `webhook.test`
 * events (`"test": true`) sent to one endpoint, each judged by the receiver's answer. A correctly
 * signed one must be accepted (2xx); forged, altered, unsigned, stale, future-dated and
 * retired-secret ones must be refused (any non-2xx answer); the first request sent again is
 * reported as advice only (a deduplicating receiver may answer it 2xx).
 *
 * The requests are sequential, each with a short time-out, all within a budget well under the
 * settings function's time-out; they pass the SSRF guard at connect time and take the endpoint's
 * rate-limit lanes like deliveries, and an open circuit refuses the check. They are not delivery
 * attempts: nothing is queued or retried, and their answers (mostly refusals asked for) never
 * count toward the circuit or the endpoint's health. Each send is recorded in the delivery log as
 * a test delivery with its one attempt (the replay as the first one's second attempt), and the
 * result is kept on the endpoint (the settings page shows it when it opens).
 *
 * Which signing material signs is delivery/check-signer.ts's: the check never names a scheme.
 */
import type { LookupFunction } from 'node:net';
import type { Deps } from '../platform/deps.js';
import { conflict, tooManyRequests } from '../platform/errors.js';
import type { DeliveryAttempt, EventPayload, StoredCheck, WebhookEndpoint } from '../platform/model.js';
import { logger } from '../platform/observability.js';
import { sleep } from '../platform/retry.js';
import { activeSecrets, requireEndpoint } from '../delivery/endpoints.js';
import { endpointStore } from '../delivery/endpoint-store.js';
import { signerFor, type CheckSigner } from '../delivery/check-signer.js';
import { postWebhook, type PostResult } from '../delivery/http-client.js';
import { allowListFor } from '../delivery/ssrf.js';
import { gate } from '../delivery/circuit-breaker.js';
import { takeRateSlot } from '../delivery/delivery-throttle.js';
import { sendableHeaders } from '../delivery/endpoint-fields.js';
import { secretsOf } from '../delivery/attempt-log.js';
import { attemptRecord } from '../delivery/deliver.js';
import { deliveryIdFor, recordDeliveries } from '../delivery/queue.js';
import { deliveryStore, transition } from '../delivery/delivery-port.js';
import { checkRateLimit } from '../tenancy/rate-limit.js';
import { requireOrganization } from '../tenancy/organizations.js';
import { webhookTestEvent } from './catalog.js';

export type RuleName =
  | 'signed' | 'wrong-signature' | 'body-changed' | 'no-signature'
  | 'stale-timestamp' | 'future-timestamp' | 'replay' | 'retired-secret';

/** Where each rule's advice points (docs/webhooks.md). */
export const CHECK_DOCS = 'docs/webhooks.md#checking-a-receiver';

/** What each rule expects and, when it is not met, what to change. In the order the check sends them. */
export const RULES: Record<RuleName, { expected: string; advice: string }> = {
  signed: {
    expected: '2xx',
    advice: 'Accept a correctly signed event with a 2xx answer within a few seconds: check the URL, that your receiver verifies with the endpoint\'s current secret, and that it answers before doing slow work.',
  },
  'wrong-signature': {
    expected: 'refusal (non-2xx)',
    advice: 'Verify webhook-signature against the signing secret and refuse (401/400) when no signature matches; never accept an event only because the header is present.',
  },
  'body-changed': {
    expected: 'refusal (non-2xx)',
    advice: 'Verify the signature over the raw body exactly as received (before any JSON parsing or re-serialization), and refuse when it does not match.',
  },
  'no-signature': {
    expected: 'refusal (non-2xx)',
    advice: 'Refuse a request without a webhook-signature header; verification must not be optional.',
  },
  'stale-timestamp': {
    expected: 'refusal (non-2xx)',
    advice: 'Refuse a webhook-timestamp more than 5 minutes old (the standardwebhooks libraries do): a captured request must not work later.',
  },
  'future-timestamp': {
    expected: 'refusal (non-2xx)',
    advice: 'Refuse a webhook-timestamp more than 5 minutes in the future, not only stale ones.',
  },
  replay: {
    expected: 'refusal or idempotent 2xx',
    advice: 'The same webhook-id was accepted twice: make sure your receiver processes each webhook-id once (keep the ids it has seen for at least the 5-minute tolerance).',
  },
  'retired-secret': {
    expected: 'refusal (non-2xx)',
    advice: 'An event signed only with the secret retired by your last rotation was accepted: remove the old secret from your receiver once the rotation\'s grace ends.',
  },
};

/** The order of the series; the replay re-sends the first request. */
export const RULE_ORDER = Object.keys(RULES) as RuleName[];

/** Rules that are advice only: never a failed verdict (the check cannot tell a deduplicating receiver from a careless one). */
const ADVISORY = new Set<RuleName>(['replay']);

/** Why a rule was not checked or got no answer (StoredCheck note), as the answer says it. */
const NOTES: Record<string, string> = {
  'no-retired-secret': 'Not checked: the endpoint holds no secret retired by a rotation (a rotation with grace 0 drops the old one at once).',
  'in-grace': 'Not checked yet: a rotation\'s grace is running; the retired secret is checked once it ends.',
  'not-run': 'Not checked: the receiver did not answer the correctly signed event, or the check\'s time ran out.',
  ETIMEDOUT: 'No answer within the check\'s per-request time-out.',
  ESSRF: 'Refused before connecting: the URL resolves to an address events are never sent to (docs/webhooks.md#security).',
};

export interface RuleResult { rule: RuleName; expected: string; status: number | null; ok: boolean; advice: string | null }
export interface CheckAnswer { verdict: 'pass' | 'fail'; checked_at: string; rules: RuleResult[] }

/** A kept check as the API answers it: each rule with what it expects and, unless it was met, advice linking into the docs. */
export function checkAnswer(stored: StoredCheck): CheckAnswer {
  return {
    verdict: stored.verdict,
    checked_at: stored.checkedAt,
    rules: stored.rules.map(({ rule, status, ok, note }) => {
      const known = RULES[rule as RuleName];
      const noteText = note ? NOTES[note] ?? `No answer (${note}).` : undefined;
      const advisory = ADVISORY.has(rule as RuleName) && status !== null && status >= 200 && status < 300;
      const advice = ok && !advisory && !noteText ? null : [noteText, !ok || advisory ? known?.advice : undefined, `See ${CHECK_DOCS}-${rule}.`].filter(Boolean).join(' ');
      return { rule: rule as RuleName, expected: known?.expected ?? '', status, ok, advice };
    }),
  };
}

/** One request of the series: its headers and body as sent. */
interface Planned { rule: RuleName; event: EventPayload; headers: Record<string, string>; body: string }

/** The series for this endpoint at `nowMs`: fresh events, each signed (or not) as its rule says. */
function plan(organizationId: string, signer: CheckSigner, nowMs: number, custom: Record<string, string>): (Planned | { rule: RuleName; note: string })[] {
  const seconds = Math.floor(nowMs / 1000);
  const fresh = (): { event: EventPayload; body: string } => {
    const event: EventPayload = { ...webhookTestEvent(organizationId, new Date(nowMs)), test: true };
    return { event, body: JSON.stringify(event) };
  };
  const signed = (rule: RuleName, how: (content: { id: string; timestamp: number; body: string }) => Record<string, string>, timestamp = seconds): Planned => {
    const { event, body } = fresh();
    return { rule, event, body, headers: { ...custom, ...how({ id: event.id, timestamp, body }) } };
  };
  const first = signed('signed', signer.current);
  const changed = signed('body-changed', signer.current);
  // One byte of the event id in the body, after signing: still valid JSON, no longer what was signed.
  const at = changed.body.indexOf(changed.event.id) + changed.event.id.length - 1;
  changed.body = changed.body.slice(0, at) + (changed.body[at] === 'A' ? 'B' : 'A') + changed.body.slice(at + 1);
  const unsigned = signed('no-signature', signer.current);
  delete unsigned.headers['webhook-signature'];
  return [
    first,
    signed('wrong-signature', signer.forged),
    changed,
    unsigned,
    signed('stale-timestamp', signer.current, seconds - 600),
    signed('future-timestamp', signer.current, seconds + 600),
    { ...first, rule: 'replay' },
    signer.retired ? signed('retired-secret', signer.retired) : { rule: 'retired-secret', note: signer.graceUntil ? 'in-grace' : 'no-retired-secret' },
  ];
}

const accepted = (result: PostResult) => result.status !== undefined && result.status >= 200 && result.status < 300;
const refused = (result: PostResult) => result.status !== undefined && !accepted(result);

/** Whether a rule's answer is what it expects. */
function judged(rule: RuleName, result: PostResult): boolean {
  if (rule === 'signed') return accepted(result);
  if (rule === 'replay') return result.status !== undefined;
  return refused(result);
}

export interface CheckOptions {
  /** The SSRF guard as a lookup (tests decide on a stubbed resolver); default: the stage's allow-list. */
  lookup?: LookupFunction;
}

/** Checks of one endpoint in any 60 s (tenancy/rate-limit.ts: closed sub-windows, never over-admitting). */
export const CHECKS_PER_MINUTE = 1;
/**
 * Checks of one organization in any 60 s, and of one URL origin per organization: an endpoint
 * deleted and added again is a new id, so the per-endpoint limit alone would let the check's
 * requests be aimed at a host as fast as the settings API allows calls (docs/webhooks.md#checking-a-receiver).
 */
export const ORGANIZATION_CHECKS_PER_MINUTE = 3;
export const ORIGIN_CHECKS_PER_MINUTE = 1;

/** The check's limits, most specific first: a refusal by one leaves the broader ones untouched. */
const checkLimits = (organizationId: string, endpoint: WebhookEndpoint): [key: string, limit: number][] => [
  [`receiver-check#${organizationId}#${endpoint.id}`, CHECKS_PER_MINUTE],
  [`receiver-check#${organizationId}#origin#${new URL(endpoint.url).origin}`, ORIGIN_CHECKS_PER_MINUTE],
  [`receiver-check#${organizationId}`, ORGANIZATION_CHECKS_PER_MINUTE],
];

/**
 * Runs the check on an endpoint of the organization and keeps its result on the endpoint. 404 for
 * an endpoint not of the organization; 409 for a disabled endpoint or an open circuit; 429 with
 * Retry-After for a second check of the endpoint or of its URL's origin within a minute, or a
 * fourth of the organization.
 */
export async function checkReceiver(deps: Deps, organizationId: string, endpointId: string, options: CheckOptions = {}): Promise<CheckAnswer> {
  await requireOrganization(deps, organizationId);
  const endpoint = await requireEndpoint(deps, organizationId, endpointId);
  if (!endpoint.enabled) throw conflict(`The endpoint ${endpoint.id} is disabled: enable it, then check it.`);
  const circuit = gate(endpoint.circuit, deps.now(), deps.config);
  if (circuit.kind === 'park') throw conflict(`The endpoint ${endpoint.id} is paused (${circuit.reason}): check it once its circuit half-opens.`);
  // As a delivery (deliver.ts): outside the local stack nothing is sent in cleartext, whatever an old item holds.
  if (!deps.config.local && !endpoint.url.startsWith('https:')) throw conflict(`The endpoint ${endpoint.id}'s URL is not https: update it, then check it.`);
  if (activeSecrets(endpoint, deps.now()).length === 0) throw conflict(`The endpoint ${endpoint.id} has no active signing secret: rotate it, then check it.`);
  // Counted once nothing else refuses it: a refused check does not make the next one wait.
  for (const [key, allowed] of checkLimits(organizationId, endpoint)) {
    const limit = await checkRateLimit(deps, key, allowed);
    if (!limit.allowed) throw tooManyRequests(limit.retryAfterSeconds ?? 60);
  }

  const started = deps.now();
  const signer = signerFor(endpoint, started);
  const series = plan(organizationId, signer, started, sendableHeaders(endpoint.headers).headers);
  const stored: StoredCheck['rules'] = [];
  const sent: { planned: Planned; result: PostResult }[] = [];
  let stop = false;
  for (const step of series) {
    let outcome: StoredCheck['rules'][number];
    if ('note' in step) {
      outcome = { rule: step.rule, status: null, ok: true, note: step.note };
    } else if (stop) {
      outcome = { rule: step.rule, status: null, ok: ADVISORY.has(step.rule), note: 'not-run' };
    } else {
      const result = await send(deps, endpoint, step, started, options.lookup);
      if (result) sent.push({ planned: step, result });
      const ok = result ? judged(step.rule, result) : ADVISORY.has(step.rule);
      outcome = { rule: step.rule, status: result?.status ?? null, ok, ...(result?.status === undefined ? { note: result?.errorCode ?? 'not-run' } : {}) };
      // Nothing answered the one event it must accept: the refusals would prove nothing.
      if (step.rule === 'signed' && outcome.status === null) stop = true;
    }
    stored.push(outcome);
  }
  const verdict = stored.every((r) => r.ok || ADVISORY.has(r.rule as RuleName)) ? 'pass' : 'fail';
  const check: StoredCheck = { verdict, checkedAt: new Date(started).toISOString(), rules: stored };
  logger.info('receiver check', { organizationId, endpointId: endpoint.id, verdict, failed: stored.filter((r) => !r.ok).map((r) => r.rule), latencyMs: deps.now() - started });
  await recordSends(deps, endpoint, sent);
  await endpointStore(deps).recordCheck(endpoint, check);
  return checkAnswer(check);
}

/**
 * One request of the series: through the endpoint's rate limit (waiting for a lane within the
 * budget) and the SSRF guard, with the short time-out. Undefined: the budget ran out first.
 */
async function send(deps: Deps, endpoint: WebhookEndpoint, step: Planned, started: number, lookup?: LookupFunction): Promise<PostResult | undefined> {
  const { receiverCheckBudgetMs: budget, receiverCheckTimeoutMs: perRequest } = deps.config;
  const left = () => started + budget - deps.now();
  for (;;) {
    if (left() <= 0) return undefined;
    const throttled = await takeRateSlot(deps, endpoint);
    if (!throttled) break;
    // A lane frees within a second; the delivery's long randomized wait is for queued deliveries, not this.
    await sleep(Math.min(1000, Math.max(50, throttled.untilMs - deps.now()), Math.max(0, left())));
  }
  const timeoutMs = Math.min(perRequest, left());
  if (timeoutMs <= 0) return undefined;
  return postWebhook({ url: endpoint.url, headers: step.headers, body: step.body, timeoutMs, ...(lookup ? { lookup } : { allow: allowListFor(deps.config) }) });
}

/**
 * The sends as test deliveries in the delivery log (recorded, never queued): one per event with its
 * attempt; the replay, the first event's second attempt. Each record is marked `check: true`: the
 * statistics do not count it and no bulk re-delivery sends it again (docs/webhooks.md#checking-a-receiver).
 * Best effort: the check's answer stands if the log cannot be written.
 */
async function recordSends(deps: Deps, endpoint: WebhookEndpoint, sent: { planned: Planned; result: PostResult }[]): Promise<void> {
  if (sent.length === 0) return;
  try {
    const events = [...new Map(sent.map(({ planned }) => [planned.event.id, planned.event])).values()];
    const recorded = await recordDeliveries(deps, events.map((event) => ({ event, endpoint, check: true as const })), { putPending: true });
    await deliveryStore(deps).recorded(recorded.events);
    const outcomes = new Map<string, { attempts: number; delivered: boolean }>();
    for (const { planned, result } of sent) {
      const deliveryId = deliveryIdFor(planned.event.id, endpoint.id);
      const before = outcomes.get(deliveryId) ?? { attempts: 0, delivered: false };
      // A refused replay of a delivered event: a delivered record stays delivered (the answer reports it).
      if (before.delivered && !accepted(result)) continue;
      const attempt: DeliveryAttempt = attemptRecord(deps, before.attempts + 1, result, secretsOf(endpoint));
      const expected = judged(planned.rule, result) ? 'as expected' : 'not as expected';
      const ref = { organizationId: endpoint.organizationId, deliveryId };
      if (accepted(result)) await transition(deps, ref, { to: 'delivered', attempt });
      else await transition(deps, ref, { to: 'failed', attempt, reason: `receiver check, ${planned.rule} (expects ${RULES[planned.rule].expected}): ${expected}` });
      outcomes.set(deliveryId, { attempts: before.attempts + 1, delivered: before.delivered || accepted(result) });
    }
  } catch (error) {
    logger.warn('the receiver check\'s sends were not all recorded in the delivery log', { organizationId: endpoint.organizationId, endpointId: endpoint.id, error: error as Error });
  }
}
