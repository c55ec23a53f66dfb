/**
 * Authenticates a request by its API key (docs/api-keys.md, docs/leads.md#lead-forms-in-public-pages-publishable-keys): `X-API-Key: <key>` or `Authorization: Bearer
 * <key>`, secret (`crm_live_`) or publishable (`crm_pub_`; what it may do is checked by the route). A malformed key is refused before any read; a well-formed one costs one GetItem by hash,
 * cached in the container for revocationSeconds (5 s by default: how long a revoked key keeps
 * working, on every container). Unknown keys go to a separate, smaller cache (keyCacheTtlSeconds), so
 * a flood of random keys cannot evict the real ones. The resolved organization scopes everything the request does.
 */
import { timingSafeEqual } from 'node:crypto';
import type { Deps } from '../platform/deps.js';
import { statePerStore } from '../platform/deps-port.js';
import { DomainError, badRequest, forbidden, unauthorized } from '../platform/errors.js';
import { API_KEY_PATTERN, DEFAULT_HONEYPOT_FIELD, DEFAULT_PER_IP_LIMIT, hashApiKey } from './api-keys.js';
import type { ApiKeyKind, ApiKeyRecord, AuthContext, Organization, PublishableKeyPolicy } from '../platform/model.js';
import { getOrganization } from './organizations.js';
import { logger } from '../platform/observability.js';
import { TtlCache } from '../platform/ttl-cache.js';
import type { Config } from '../platform/config.js';
import { injectedKeyStore, keyStore, type KeyStore } from './key-store.js';

type Headers = Record<string, string | undefined>;

const KEY_HEADERS = ['x-api-key', 'authorization'];

/**
 * The key from either header style, exactly as sent (never trimmed: the WAF.s per-key rules match
 * only well-formed values, so a padded key must not pass here); undefined when neither is present.
 * More than one key header (repeated, in two cases, or both styles) is a 400: the WAF and the
 * function could otherwise each take a different one. `repeated`: header names the HTTP adapter saw twice.
 */
export function extractApiKey(headers: Headers, repeated: readonly string[] = []): string | undefined {
  let apiKey: string | undefined;
  let authorization: string | undefined;
  let count = repeated.filter((name) => KEY_HEADERS.includes(name)).length;
  for (const [name, value] of Object.entries(headers)) {
    const lower = name.toLowerCase();
    if (value === undefined || !KEY_HEADERS.includes(lower)) continue;
    count += 1;
    if (lower === 'x-api-key') apiKey = value;
    else authorization = value;
  }
  if (count > 1) throw badRequest('Send the API key in one header: either `X-API-Key: <key>` or `Authorization: Bearer <key>`, once.');
  if (apiKey !== undefined) return apiKey;
  if (authorization !== undefined) {
    // Exactly one space: the WAF counts a key by its header's value (lowercased), so every other
    // spelling of one key is refused here rather than counted as a key of its own (functions/front-door/waf.ts wafKeys).
    const match = /^Bearer ([^\s]+)$/i.exec(authorization);
    return match ? match[1] : '';
  }
  return undefined;
}

/**
 * A secret key sent in a page's form (docs/leads.md#lead-forms-in-public-pages-publishable-keys): refused, and named (organization and key) so the
 * route records the refusal under that organization, where its owner sees it (`crm logs`), and the
 * log says which key to revoke. The answer itself names neither.
 */
export class ExposedSecretKeyError extends DomainError {
  constructor(readonly organizationId: string, readonly keyId: string) {
    super(403, 'forbidden', 'Forbidden', 'Only a publishable key (crm_pub_...) may be sent in a form body; this secret key is now exposed: revoke it and create a publishable one.');
  }
}

/**
 * A key that exists but no longer works (revoked, or expired after a rotation's grace): a 401 that
 * names its organization and key, so the route records the refused call in that organization's
 * request log (logged, never billed). The answer itself names neither.
 */
export class RejectedKeyError extends DomainError {
  constructor(readonly organizationId: string, readonly keyId: string, readonly reason: 'key-revoked' | 'key-expired', detail: string) {
    super(401, 'unauthorized', 'Unauthorized', detail, { headers: { 'WWW-Authenticate': 'Bearer realm="crm", charset="UTF-8"' } });
  }
}

interface CachedKey {
  hash: string; organizationId: string; keyId: string; name: string; expiresAt?: string; revokedAt?: string;
  kind: ApiKeyKind; publishable?: PublishableKeyPolicy;
}
/**
 * What authentication keeps in a container, each bounded (TtlCache): found keys, unknown hashes,
 * organizations, and when each key's last use was written.
 */
class AuthCaches {
  readonly keys = new TtlCache<string, CachedKey>(10_000);
  /** Hashes that matched no key: bounded apart from real keys, so guessing evicts only guesses. */
  readonly unknownKeys = new TtlCache<string, undefined>(1_000);
  readonly organizations = new TtlCache<string, Organization | undefined>(10_000);
  /** Keys whose last use was written in the past minute. */
  readonly lastUsedWritten = new TtlCache<string, true>(10_000);

  clear(): void {
    this.keys.clear();
    this.unknownKeys.clear();
    this.organizations.clear();
    this.lastUsedWritten.clear();
  }
}

/** The container's caches; deps carrying a store of their own (withKeyStore: a test's twin) get caches of their own, so tests need no reset. */
const perStore = statePerStore<KeyStore, AuthCaches>(() => new AuthCaches(), injectedKeyStore);
const cachesOf = (deps: Deps): AuthCaches => perStore.of(deps);

/** Forgets the container's caches (tests on the real store that play another container). */
export function clearAuthCache(): void {
  perStore.container.clear();
}

/**
 * How long a found key is trusted before it is read again: the longest a revoked key keeps working
 * in a warm container (docs/api-keys.md "How fast revocation takes effect"). The page says it.
 */
export const revocationSeconds = (config: Pick<Config, 'keyCacheTtlSeconds' | 'keyRevocationSeconds'>) =>
  Math.min(config.keyCacheTtlSeconds, config.keyRevocationSeconds);

async function lookupKey(deps: Deps, hash: string): Promise<CachedKey | undefined> {
  const caches = cachesOf(deps);
  const now = deps.now();
  const cached = caches.keys.get(hash, now) ?? caches.unknownKeys.get(hash, now);
  if (cached) return cached.value;
  const record = await keyStore(deps).findKeyByHash(hash);
  const value: CachedKey | undefined = record
    ? {
        hash: record.hash, organizationId: record.organizationId, keyId: record.keyId, name: record.name, expiresAt: record.expiresAt, revokedAt: record.revokedAt,
        kind: record.kind === 'publishable' ? 'publishable' : 'secret',
        ...(record.kind === 'publishable' ? { publishable: publishablePolicy(deps, record) } : {}),
      }
    : undefined;
  if (value) caches.keys.set(hash, value, now + revocationSeconds(deps.config) * 1000);
  else caches.unknownKeys.set(hash, undefined, now + deps.config.keyCacheTtlSeconds * 1000);
  return value;
}

/** A publishable key's policy with its defaults filled in (its daily cap: the key's own, else the stage's publishableDailyCap). */
function publishablePolicy(deps: Deps, record: ApiKeyRecord): PublishableKeyPolicy {
  return {
    origins: record.origins ?? [],
    perIpLimit: record.perIpLimit ?? DEFAULT_PER_IP_LIMIT,
    honeypotField: record.honeypotField ?? DEFAULT_HONEYPOT_FIELD,
    ...(record.thankYouUrl ? { thankYouUrl: record.thankYouUrl } : {}),
    dailyCap: record.dailyCap ?? deps.config.publishableDailyCap,
  };
}

const lookupOrganization = (deps: Deps, id: string): Promise<Organization | undefined> =>
  cachesOf(deps).organizations.getOrLoad(id, deps.now(), deps.config.keyCacheTtlSeconds * 1000, () => getOrganization(deps, id));

/** How long the last-used write may delay a request before it is given up. */
const LAST_USED_TIMEOUT_MS = 1_000;

/**
 * Records when a key was last used, at most once a minute per key per container. Awaited (a Lambda
 * is frozen after its response, so an unawaited write may never happen), bounded by a time-out, and
 * never fails the request.
 */
async function touchLastUsed(deps: Deps, key: CachedKey): Promise<void> {
  const now = deps.now();
  const { lastUsedWritten } = cachesOf(deps);
  if (lastUsedWritten.get(key.keyId, now)) return;
  lastUsedWritten.set(key.keyId, true, now + 60_000);
  try {
    await keyStore(deps).recordKeyUse(key.hash, new Date(now).toISOString(), { timeoutMs: LAST_USED_TIMEOUT_MS });
  } catch (error) {
    logger.warn('could not record key use', { keyId: key.keyId, error: (error as Error).name });
  }
}

/**
 * `repeatedHeaders`: header names the request carried more than once (HttpRequest.repeatedHeaders).
 * `formKey`: the key sent as a field of a no-script form's body (a plain form cannot set headers,
 * docs/leads.md#lead-forms-in-public-pages-publishable-keys); used when no header carries one, and then only a publishable key is accepted.
 * `allowPublishable`: publishable keys are refused (403) unless the route says it takes them; the
 * route then enforces what they may do (the lead endpoint: POST only, from a listed origin).
 */
export async function authenticate(deps: Deps, headers: Headers, options: { formKey?: string; allowPublishable?: boolean; repeatedHeaders?: readonly string[] } = {}): Promise<AuthContext> {
  const fromHeader = extractApiKey(headers, options.repeatedHeaders);
  const presented = fromHeader ?? options.formKey;
  if (presented === undefined) throw unauthorized('An API key is required: send it as `X-API-Key: <key>` or `Authorization: Bearer <key>`.');
  if (!API_KEY_PATTERN.test(presented)) throw unauthorized('The API key is malformed.');
  const hash = hashApiKey(presented);
  const key = await lookupKey(deps, hash);
  // The item was found by hash; comparing again in constant time keeps the check independent of
  // how the store matched it.
  if (!key || !timingSafeEqual(Buffer.from(key.hash, 'hex'), Buffer.from(hash, 'hex'))) throw unauthorized('The API key is not valid.');
  const now = deps.now();
  if (key.revokedAt && Date.parse(key.revokedAt) <= now) throw new RejectedKeyError(key.organizationId, key.keyId, 'key-revoked', 'The API key has been revoked.');
  if (key.expiresAt && Date.parse(key.expiresAt) <= now) throw new RejectedKeyError(key.organizationId, key.keyId, 'key-expired', 'The API key has expired.');
  // A secret key in a page's form is a leaked key: refuse it (the owner should revoke it) rather than use it.
  if (fromHeader === undefined && key.kind !== 'publishable') {
    logger.warn('secret key sent in a form body: refused; it is exposed and should be revoked', { keyId: key.keyId, organizationId: key.organizationId });
    throw new ExposedSecretKeyError(key.organizationId, key.keyId);
  }
  if (key.kind === 'publishable' && !options.allowPublishable) throw forbidden('A publishable key (crm_pub_...) may only POST leads to /api/webhook/leads.');
  const organization = await lookupOrganization(deps, key.organizationId);
  if (!organization) throw unauthorized('The API key is not valid.');
  const { allowedPlans } = deps.config;
  if (allowedPlans !== 'all' && !allowedPlans.includes(organization.plan)) {
    throw forbidden(`The ${organization.plan} plan does not include the integration API. Upgrade to one of: ${allowedPlans.join(', ')}.`);
  }
  await touchLastUsed(deps, key);
  return { organization, key: { keyId: key.keyId, name: key.name, kind: key.kind, ...(key.publishable ? { publishable: key.publishable } : {}) } };
}
