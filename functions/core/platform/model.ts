/**
 * The stored shapes and their keys. Every item is keyed by organization first (docs/architecture.md#tenancy), except
 * the API-key lookup item, which is keyed by the key's hash and names its one organization.
 * docs/data-model.md documents these for the CRM application that writes clients and work orders.
 */

export const keys = {
  org: (orgId: string) => ({ pk: `ORG#${orgId}`, sk: 'ORG' }),
  /**
   * All organizations, for `crm org list` (gsi1). Carried by a separate `ORGINDEX` item, not by the
   * organization item: gsi1 projects ALL, so every wallet debit would otherwise also write the index.
   */
  orgIndex: (createdAt: string, orgId: string) => ({ gsi1pk: 'ORGS', gsi1sk: `${createdAt}#${orgId}` }),
  orgIndexItem: (orgId: string) => ({ pk: `ORG#${orgId}`, sk: 'ORGINDEX' }),
  /** Lookup item of an API key: one GetItem by hash authenticates a request. */
  apiKeyByHash: (hashHex: string) => ({ pk: `APIKEY#${hashHex}`, sk: 'APIKEY' }),
  /** Index entry listing an organization's keys (gsi1). */
  apiKeyIndex: (orgId: string, keyId: string) => ({ gsi1pk: `ORG#${orgId}#APIKEYS`, gsi1sk: keyId }),
  endpoint: (orgId: string, endpointId: string) => ({ pk: `ORG#${orgId}`, sk: `ENDPOINT#${endpointId}` }),
  endpointPrefix: 'ENDPOINT#',
  /**
   * The organization's hand-off marker (events/fanout.ts): until when the fan-out hands its shares
   * to the bulk queue. Sorts before its endpoints, so the fan-out's Query of them reads it too.
   */
  handOff: (orgId: string) => ({ pk: `ORG#${orgId}`, sk: 'BULK#HANDOFF' }),
  /** An endpoint's delivery rate limit: when each of its lanes last admitted a delivery (delivery/delivery-throttle.ts). */
  endpointThrottle: (orgId: string, endpointId: string) => ({ pk: `ORG#${orgId}`, sk: `THROTTLE#${endpointId}` }),
  /**
   * Slot items, the bounds of an organization (docs/decisions.md "Settings writes"): its endpoint
   * count (`count`) and its live keys (`live`: key id → expiry or null, with a `version`). Every
   * write that adds or removes one changes them in the same transaction, under a condition.
   */
  endpointSlots: (orgId: string) => ({ pk: `ORG#${orgId}`, sk: 'SLOTS#ENDPOINTS' }),
  apiKeySlots: (orgId: string) => ({ pk: `ORG#${orgId}`, sk: 'SLOTS#KEYS' }),
  notification: (orgId: string, at: string, id: string) => ({ pk: `ORG#${orgId}`, sk: `NOTIFICATION#${at}#${id}` }),
  notificationPrefix: 'NOTIFICATION#',
  usage: (orgId: string, day: string) => ({ pk: `ORG#${orgId}`, sk: `USAGE#${day}` }),
  usagePrefix: 'USAGE#',
  client: (orgId: string, clientId: string) => ({ pk: `ORG#${orgId}`, sk: `CLIENT#${clientId}` }),
  workOrder: (orgId: string, id: string) => ({ pk: `ORG#${orgId}`, sk: `WORK_ORDER#${id}` }),
  invoice: (orgId: string, id: string) => ({ pk: `ORG#${orgId}`, sk: `INVOICE#${id}` }),
  booking: (orgId: string, id: string) => ({ pk: `ORG#${orgId}`, sk: `BOOKING#${id}` }),
  delivery: (orgId: string, deliveryId: string) => ({ pk: `ORG#${orgId}`, sk: `DELIVERY#${deliveryId}` }),
  deliveryPrefix: 'DELIVERY#',
  /** gsi1 entry: find a delivery by id alone (redeliver --delivery). */
  deliveryIndex: (deliveryId: string) => ({ gsi1pk: `DELIVERY#${deliveryId}`, gsi1sk: 'DELIVERY' }),
  /** An event's payload, stored once for all its deliveries (deliveries table). */
  event: (orgId: string, eventId: string) => ({ pk: `ORG#${orgId}`, sk: `EVENT#${eventId}` }),
  request: (orgId: string, at: string, requestId: string) => ({ pk: `ORG#${orgId}`, sk: `REQUEST#${at}#${requestId}` }),
  requestPrefix: 'REQUEST#',
  /** Audit entries of the organization settings (request-log table, kept retentionDays): who changed what. */
  audit: (orgId: string, at: string, id: string) => ({ pk: `ORG#${orgId}`, sk: `AUDIT#${at}#${id}` }),
  auditPrefix: 'AUDIT#',
};

/**
 * Length of stored text in code points, the way JSON Schema's maxLength counts and a person counts
 * characters (an emoji is one, not two UTF-16 units). Every max length of the API uses it.
 */
export const codePointLength = (text: string): number => {
  let n = 0;
  for (const _ of text) n += 1;
  return n;
};

/** Parses the organization id out of a `ORG#<id>` partition key. */
export const orgIdOf = (pk: string): string => pk.replace(/^ORG#/, '');

export type Billing = 'none' | 'prepaid';

export interface Organization {
  id: string;
  name: string;
  plan: string;
  /** Requests per minute per key; overrides the plan's limit when set. */
  rateLimitPerMinute?: number;
  billing: Billing;
  /** Prepaid balance in integer micro-dollars (1 USD = 1_000_000). */
  walletMicros: number;
  createdAt: string;
  /** CAPTCHA checked on publishable-key leads (docs/leads.md#lead-forms-in-public-pages-publishable-keys); its secret is stored apart from this shape, never shown. */
  captchaProvider?: CaptchaProvider;
  /** What a lead matching an existing client does (docs/leads.md "Duplicates"); absent: `flag`. */
  duplicatePolicy?: DuplicatePolicy;
  /** Settings links issued at or before this time (epoch ms) are signed out (docs/settings.md "Signing out every link"). */
  linksRevokedAt?: number;
}

export type DuplicatePolicy = 'flag' | 'merge';

export type CaptchaProvider = 'turnstile' | 'hcaptcha' | 'recaptcha';

export interface ApiKeyRecord {
  /** Public id, safe for display and logs (e.g. `key_3fa9c2d1`). */
  keyId: string;
  organizationId: string;
  name: string;
  /** SHA-256 of the full key, hex. The key itself is never stored. */
  hash: string;
  /** The key's last 4 characters, to tell keys apart on screen (absent on keys made before it was kept). */
  last4?: string;
  createdAt: string;
  /** ISO time after which the key no longer authenticates (rotation grace, revocation). */
  expiresAt?: string;
  revokedAt?: string;
  lastUsedAt?: string;
  /** `secret` (`crm_live_`, servers) or `publishable` (`crm_pub_`, public pages; docs/leads.md#lead-forms-in-public-pages-publishable-keys). Absent: secret. */
  kind?: ApiKeyKind;
  /** Publishable keys: the exact origins (`https://shop.example`) a page may call from. */
  origins?: string[];
  /** Publishable keys: where a no-script form post is redirected (303) after a lead is created. */
  thankYouUrl?: string;
  /** Publishable keys: leads (billed calls) per UTC day through this key; absent: no cap. */
  dailyCap?: number;
  /** Publishable keys: leads per minute per client address (IPv6: per /64); absent: the default, 5. */
  perIpLimit?: number;
  /** Publishable keys: the honeypot field's name; absent: `website`. */
  honeypotField?: string;
}

export type ApiKeyKind = 'secret' | 'publishable';

/** The publishable-key settings authentication hands on (absent on secret keys). */
export type PublishableKeyPolicy = Required<Pick<ApiKeyRecord, 'origins' | 'perIpLimit' | 'honeypotField'>> & Pick<ApiKeyRecord, 'thankYouUrl' | 'dailyCap'>;

/** What authentication hands to the rest of a request: everything is scoped to this organization. */
export interface AuthContext {
  organization: Organization;
  key: Pick<ApiKeyRecord, 'keyId' | 'name'> & { kind?: ApiKeyKind; publishable?: PublishableKeyPolicy };
}

export interface SigningSecret {
  /** `whsec_` + base64 of 32 random bytes. */
  secret: string;
  createdAt: string;
  /** Set on the old secret at rotation: both are used to sign until then. */
  expiresAt?: string;
}

/** A receiver check's result as the endpoint item keeps it: each rule's outcome; the advice is derived (events/receiver-check.ts). */
export interface StoredCheck {
  verdict: 'pass' | 'fail';
  checkedAt: string;
  /** `status`: the receiver's HTTP status, null without an answer; `note`: why not checked or no answer (a short code). */
  rules: { rule: string; status: number | null; ok: boolean; note?: string }[];
}

export interface WebhookEndpoint {
  id: string;
  organizationId: string;
  url: string;
  /** Canonical dotted event names, or ['*'] for all. */
  events: string[];
  secrets: SigningSecret[];
  /** Bumped by every write of `secrets`, which is conditional on the version it read (endpoints.ts rotateSecret). Absent: 0. */
  secretsVersion?: number;
  enabled: boolean;
  description?: string;
  createdAt: string;
  /** Set at the first failure after a success; the endpoint is disabled when it gets too old. */
  failingSince?: string;
  disabledReason?: string;
  /** Custom headers sent with every delivery, by lower-case name (delivery/endpoint-options.ts): secrets, like `secrets`. */
  headers?: Record<string, string>;
  /** At most this many deliveries a second (delivery/delivery-throttle.ts); absent: no limit. */
  rateLimitPerSecond?: number;
  /** The last receiver check's result, kept compact (events/receiver-check.ts expands it). */
  lastCheck?: StoredCheck;
  /** The endpoint's circuit breaker (functions/core/delivery/circuit-breaker.ts); absent: closed, no failures counted. */
  circuit?: CircuitRecord;
}

export type CircuitState = 'closed' | 'open' | 'half-open';
/** Stored on the endpoint item as circuitFailures, circuitUntil, circuitOpens, circuitProbing, circuitSlowUntil. */
export interface CircuitRecord {
  /** Failed attempts in a row (time-outs included); a success clears them. */
  failures: number;
  /** Openings in a row without a success: each doubles the wait. */
  opens: number;
  /** While set: nothing is attempted before it (open), or a claimed probe runs until it (probing). */
  until?: string;
  /** A half-open probe claimed the circuit until `until`. */
  probing?: boolean;
  /** Answered (or timed out) slower than slowLaneAfterMs: attempted in the slow lane until then. */
  slowUntil?: string;
}

/** The event envelope sent to receivers (docs/events.md). */
export interface EventPayload {
  id: string;
  type: string;
  api_version: string;
  timestamp: string;
  organization_id: string;
  data: { object: Record<string, unknown>; previous?: Record<string, unknown> };
  /** Only on a test send of a catalog event (its example payload, not a real record): docs/events.md. */
  test?: true;
}

export type DeliveryStatus = 'pending' | 'delivered' | 'failed' | 'skipped';

export interface DeliveryAttempt {
  at: string;
  attempt: number;
  statusCode?: number;
  latencyMs: number;
  error?: string;
  /** First 4 KiB of the response body. */
  responseBody?: string;
  /** The request's and the response's headers, bounded (delivery/attempt-log.ts keptHeaders). */
  requestHeaders?: Record<string, string>;
  responseHeaders?: Record<string, string>;
}

export interface DeliveryRecord {
  /** Derived from event id + endpoint id: a re-processed stream batch writes nothing twice. */
  id: string;
  organizationId: string;
  endpointId: string;
  eventId: string;
  eventType: string;
  status: DeliveryStatus;
  /** Why a delivery was skipped or failed without attempts (endpoint disabled, payload too big). */
  reason?: string;
  payload: EventPayload;
  /** The event was too big for the queue: `payload` keeps only its envelope and is never sent. */
  payloadOmitted?: boolean;
  /**
   * A send of the receiver check (events/receiver-check.ts), recorded, never queued: listed in the
   * delivery log, but no outcome for the statistics and never re-sent by a bulk re-delivery.
   */
  check?: boolean;
  /** The most recent attempts (at most 20: delivery/attempt-log.ts); older ones are only counted. */
  attempts: DeliveryAttempt[];
  /** Attempts dropped from `attempts` to keep the record bounded. */
  olderAttempts?: number;
  createdAt: string;
  updatedAt: string;
  /** When it was last sent to the delivery queue; absent while a fan-out that recorded it has not queued it yet. */
  queuedAt?: string;
  /** When it was last redelivered (a new round of attempts began: DeliveryMessage.round). */
  redrivenAt?: string;
  nextAttemptAt?: string;
  /** Why the next attempt waits beyond the schedule (e.g. the endpoint's circuit is open). */
  deferredReason?: string;
  deliveredAt?: string;
}

/** Body of a delivery-queue message. The payload travels with it; the secret is read at send time. */
export interface DeliveryMessage {
  deliveryId: string;
  organizationId: string;
  endpointId: string;
  payload: EventPayload;
  /**
   * When this message's round of attempts began (epoch ms): its first queuing, or its last redelivery
   * (a dead-letter copy carries the time it was dead-lettered, so a move back starts a new round).
   * A retry or a deferral keeps it. The attempt number is 1 + the attempts the delivery record
   * holds since then (queue.ts attemptNumberOf): a receive that never reached an attempt (a
   * throttle, a crash before the isolation gate, an open circuit) consumes none. Absent (messages
   * older than this field): the record's last redelivery or creation.
   */
  round?: number;
  /**
   * How often in a row the endpoint's rate limit refused this delivery (delivery-throttle.ts): each
   * refusal doubles its random wait. Cleared when the delivery is attempted or sent afresh.
   */
  throttled?: number;
}
