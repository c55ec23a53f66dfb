/**
 * API keys (docs/api-keys.md, docs/leads.md#lead-forms-in-public-pages-publishable-keys): `crm_live_` (secret, for servers) or `crm_pub_` (publishable, for public
 * pages) + 32 base62 characters (~190 bits from the CSPRNG). Only the SHA-256 hash is stored, as the
 * partition key of a lookup item, so authenticating is one GetItem. The key itself is returned once,
 * by create and rotate, and never stored or logged. A publishable key carries its own policy: the
 * exact origins it may be used from, an optional thank-you URL, daily cap, per-address limit and
 * honeypot field name.
 */
import { createHash } from 'node:crypto';
import { isIP } from 'node:net';
import type { Deps } from '../platform/deps.js';
import { notFound, validationFailed, type FieldError } from '../platform/errors.js';
import { randomBase62, newId } from '../platform/ids.js';
import { retryLostRaces } from '../platform/optimistic.js';
import type { ApiKeyKind, ApiKeyRecord } from '../platform/model.js';
import { requireOrganization } from './organizations.js';
import { keyStore, type KeySlots } from './key-store.js';

export const API_KEY_PREFIX = 'crm_live_';
export const PUBLISHABLE_KEY_PREFIX = 'crm_pub_';
const prefixOf = (kind: ApiKeyKind) => (kind === 'publishable' ? PUBLISHABLE_KEY_PREFIX : API_KEY_PREFIX);
const SECRET_LENGTH = 32;
/** The shape of a well-formed key of either kind: checked before any table read. */
export const API_KEY_PATTERN = new RegExp(`^(${API_KEY_PREFIX}|${PUBLISHABLE_KEY_PREFIX})[0-9A-Za-z]{${SECRET_LENGTH}}$`);

/** Defaults of a publishable key's policy (docs/leads.md#lead-forms-in-public-pages-publishable-keys). */
export const DEFAULT_PER_IP_LIMIT = 5;
export const DEFAULT_HONEYPOT_FIELD = 'website';
const MAX_ORIGINS = 20;

export const hashApiKey = (key: string) => createHash('sha256').update(key, 'utf8').digest('hex');

export function generateApiKey(kind: ApiKeyKind = 'secret'): { key: string; keyId: string; hash: string } {
  const key = prefixOf(kind) + randomBase62(SECRET_LENGTH);
  return { key, keyId: newId('key', 10), hash: hashApiKey(key) };
}

const isLoopbackHostname = (hostname: string) => {
  const bare = hostname.replace(/^\[|\]$/g, '');
  return bare === 'localhost' || bare === '::1' || (isIP(bare) === 4 && bare.startsWith('127.'));
};

/**
 * A web origin as browsers send it in `Origin` (`https://shop.example`, `https://shop.example:8443`),
 * or the reason it is not one. https only; http only on loopback (a page under development).
 */
export function parseOrigin(value: string): { origin: string } | { problem: string } {
  let url: URL;
  try {
    url = new URL(value.trim());
  } catch {
    return { problem: `"${value}" is not an origin such as https://shop.example` };
  }
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && isLoopbackHostname(url.hostname))) {
    return { problem: `"${value}" must use https (http only for localhost / 127.0.0.1)` };
  }
  if (url.username || url.password || url.search || url.hash || (url.pathname !== '/' && url.pathname !== '')) {
    return { problem: `"${value}" must be an origin only: scheme, host and port, no path, query or credentials` };
  }
  if (url.hostname.includes('*')) return { problem: `"${value}": wildcards are not allowed, list each origin` };
  return { origin: url.origin };
}

/** The key's origin equal to the request's `Origin` header, if any (exact match of the serialized origin). */
export function matchOrigin(origins: readonly string[], header: string | undefined): string | undefined {
  if (!header) return undefined;
  const presented = header.trim().toLowerCase();
  return origins.find((o) => o === presented);
}

/**
 * An absolute https URL (http only on loopback) a browser may be redirected to, as it goes in
 * `Location`: serialized by the URL parser. Whitespace and control characters are refused, not
 * dropped: the parser silently strips tabs and line breaks, and the raw value in a header would
 * break every answer of the key (an invalid header is a 502 on API Gateway).
 */
function thankYouUrl(value: string): { url: string } | { problem: string } {
  // eslint-disable-next-line no-control-regex
  if (/[\s\u0000-\u001f\u007f]/.test(value)) return { problem: 'must not contain spaces, line breaks or control characters' };
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return { problem: 'must be an absolute URL such as https://shop.example/thanks' };
  }
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && isLoopbackHostname(url.hostname))) return { problem: 'must use https (http only for localhost / 127.0.0.1)' };
  if (url.username || url.password) return { problem: 'must not carry credentials' };
  if (url.href.length > 2000) return { problem: 'must be at most 2000 characters' };
  return { url: url.href };
}

type KeyPolicy = Pick<ApiKeyRecord, 'kind' | 'origins' | 'thankYouUrl' | 'dailyCap' | 'perIpLimit' | 'honeypotField'>;
/**
 * A new key's kind (default `secret`) and, for a publishable key, its policy (model.ts ApiKeyRecord
 * says what each field means); `origins` is required (at least one) for a publishable key, and
 * every policy field is refused on a secret key.
 */
export type NewApiKeyOptions = Partial<KeyPolicy>;


/** The stored policy of a new key, or 422 with every bad field named. */
export function keyPolicy(options: NewApiKeyOptions = {}): KeyPolicy {
  const kind = options.kind ?? 'secret';
  const errors: FieldError[] = [];
  if (kind !== 'secret' && kind !== 'publishable') {
    throw validationFailed([{ field: 'kind', message: 'must be secret or publishable' }]);
  }
  const publishableOnly = ['origins', 'thankYouUrl', 'dailyCap', 'perIpLimit', 'honeypotField'] as const;
  if (kind === 'secret') {
    for (const field of publishableOnly) {
      const value = options[field];
      if (value !== undefined && !(Array.isArray(value) && value.length === 0)) errors.push({ field, message: 'applies to publishable keys only' });
    }
    if (errors.length) throw validationFailed(errors);
    return {};
  }
  const origins: string[] = [];
  if (!options.origins?.length) errors.push({ field: 'origins', message: 'a publishable key needs at least one origin, e.g. https://shop.example' });
  else if (options.origins.length > MAX_ORIGINS) errors.push({ field: 'origins', message: `at most ${MAX_ORIGINS} origins` });
  else {
    for (const value of options.origins) {
      const parsed = parseOrigin(String(value));
      if ('problem' in parsed) errors.push({ field: 'origins', message: parsed.problem });
      else if (!origins.includes(parsed.origin)) origins.push(parsed.origin);
    }
  }
  let thankYou: string | undefined;
  if (options.thankYouUrl !== undefined) {
    const checked = thankYouUrl(String(options.thankYouUrl));
    if ('problem' in checked) errors.push({ field: 'thankYouUrl', message: checked.problem });
    else thankYou = checked.url;
  }
  const positive = (field: 'dailyCap' | 'perIpLimit', max: number) => {
    const value = options[field];
    if (value !== undefined && (!Number.isInteger(value) || value < 1 || value > max)) errors.push({ field, message: `must be an integer from 1 to ${max}` });
  };
  positive('dailyCap', 1_000_000);
  positive('perIpLimit', 1000);
  if (options.honeypotField !== undefined && !/^[A-Za-z0-9_.-]{1,64}$/.test(options.honeypotField)) {
    errors.push({ field: 'honeypotField', message: 'must be 1 to 64 of A-Z a-z 0-9 _ . -' });
  }
  if (errors.length) throw validationFailed(errors);
  return {
    kind,
    origins,
    ...(thankYou !== undefined ? { thankYouUrl: thankYou } : {}),
    ...(options.dailyCap !== undefined ? { dailyCap: options.dailyCap } : {}),
    ...(options.perIpLimit !== undefined ? { perIpLimit: options.perIpLimit } : {}),
    ...(options.honeypotField !== undefined ? { honeypotField: options.honeypotField } : {}),
  };
}

/** What list and the CLI show: never the hash, never the key. */
export type ApiKeySummary = Omit<ApiKeyRecord, 'hash'> & { status: 'active' | 'expiring' | 'expired' | 'revoked' };

export function keyStatus(record: Pick<ApiKeyRecord, 'expiresAt' | 'revokedAt'>, now: number): ApiKeySummary['status'] {
  if (record.revokedAt) return 'revoked';
  if (record.expiresAt) return Date.parse(record.expiresAt) <= now ? 'expired' : 'expiring';
  return 'active';
}

/** Keys an organization may hold live (active, or expiring in a rotation's grace), whoever creates them (settings API, CLI). */
export const MAX_LIVE_KEYS = 25;

const tooManyKeys = () => validationFailed([{ field: 'key', message: `an organization has at most ${MAX_LIVE_KEYS} active or expiring keys; revoke one first` }]);

/**
 * The organization's live keys (key id → expiry, null for none) and the slot item's version every
 * write of it is conditional on. Expired entries are dropped on read: an expiry frees its slot
 * without a write.
 */
async function readKeySlots(deps: Deps, organizationId: string): Promise<KeySlots> {
  const { live, version } = await keyStore(deps).readKeySlots(organizationId);
  const now = deps.now();
  return { live: Object.fromEntries(Object.entries(live).filter(([, at]) => !at || Date.parse(at) > now)), version };
}

/** A new key of the organization: the key (shown once) and the record stored for it. */
const newKey = (deps: Deps, organizationId: string, name: string, policy: KeyPolicy) => {
  const kind = policy.kind ?? 'secret';
  const { key, keyId, hash } = generateApiKey(kind);
  const record: ApiKeyRecord = { keyId, organizationId, name, hash, last4: key.slice(-4), createdAt: new Date(deps.now()).toISOString(), ...policy, kind };
  return { key, record };
};

/**
 * Puts a new key and takes its slot in one transaction, conditional on the slot item's version:
 * parallel creations can never pass MAX_LIVE_KEYS together, and a refused one writes nothing.
 */
async function putKey(deps: Deps, organizationId: string, name: string, policy: KeyPolicy = {}): Promise<{ key: string; record: ApiKeyRecord }> {
  return retryLostRaces('The organization\'s keys', async () => {
    const slots = await readKeySlots(deps, organizationId);
    if (Object.keys(slots.live).length >= MAX_LIVE_KEYS) throw tooManyKeys();
    const { key, record } = newKey(deps, organizationId, name, policy);
    // A failed condition (the slots changed, or a hash or id collision: draw again) is a lost race.
    await keyStore(deps).createKey(record, { organizationId, read: slots.version, live: { ...slots.live, [record.keyId]: null } });
    return { key, record };
  });
}

/**
 * A new key of the organization (secret unless `options.kind` says publishable), printed once by the
 * caller. The call shape without options is the secret key of docs/api-keys.md.
 */
export async function createApiKey(deps: Deps, organizationId: string, name: string, options: NewApiKeyOptions = {}): Promise<{ key: string; record: ApiKeyRecord }> {
  const trimmed = name?.trim() ?? '';
  if (!trimmed || trimmed.length > 100) throw validationFailed([{ field: 'name', message: 'must be 1 to 100 characters' }]);
  const policy = keyPolicy(options);
  await requireOrganization(deps, organizationId);
  return putKey(deps, organizationId, trimmed, policy);
}

export async function listApiKeys(deps: Deps, organizationId: string): Promise<ApiKeySummary[]> {
  await requireOrganization(deps, organizationId);
  const now = deps.now();
  return (await keyStore(deps).listKeys(organizationId))
    .map(({ hash: _hash, ...rest }) => ({ ...rest, status: keyStatus(rest, now) }))
    .sort((a, b) => a.createdAt.localeCompare(b.createdAt));
}

/** The key of this organization, or 404: a key id of another organization is simply not found. */
async function requireKey(deps: Deps, organizationId: string, keyId: string): Promise<ApiKeyRecord> {
  const record = await keyStore(deps).findKey(organizationId, keyId);
  if (!record) throw notFound(`Organization ${organizationId} has no key ${keyId}.`);
  return record;
}

/** The key item as stored now (a consistent read by its hash; the index that found it may lag). */
async function storedKey(deps: Deps, record: ApiKeyRecord): Promise<ApiKeyRecord> {
  const stored = await keyStore(deps).findKeyByHash(record.hash, { consistent: true });
  if (!stored) throw notFound(`Organization ${record.organizationId} has no key ${record.keyId}.`);
  return stored;
}

/**
 * Issues a new key with the same name; the old one keeps working for `graceHours` (default from
 * settings, 24 h), so callers can switch without downtime. 0 revokes the old key at once. One
 * transaction: the new key, the old one's end and the slots (with a grace the old key keeps its
 * slot until it expires, so a rotation with a grace needs a free one).
 */
export async function rotateApiKey(deps: Deps, organizationId: string, keyId: string, options: { graceHours?: number } = {}): Promise<{ key: string; record: ApiKeyRecord; previous: ApiKeySummary }> {
  const grace = options.graceHours ?? deps.config.rotationGraceHours;
  if (!Number.isFinite(grace) || grace < 0) throw validationFailed([{ field: 'grace', message: 'must be zero or more hours' }]);
  const found = await requireKey(deps, organizationId, keyId);
  return retryLostRaces('The key', async () => {
    const old = await storedKey(deps, found);
    if (old.revokedAt) throw validationFailed([{ field: 'key', message: `${keyId} is revoked; create a new key instead` }]);
    const slots = await readKeySlots(deps, organizationId);
    const now = deps.now();
    const until = new Date(now + grace * 3_600_000).toISOString();
    // A shorter grace never extends an expiry already set by an earlier rotation.
    const at = old.expiresAt && old.expiresAt < until ? old.expiresAt : until;
    // The new key is of the same kind, with the same policy (origins, limits): a drop-in replacement.
    const { kind, origins, thankYouUrl, dailyCap, perIpLimit, honeypotField } = old;
    const created = newKey(deps, organizationId, old.name, { kind, origins, thankYouUrl, dailyCap, perIpLimit, honeypotField });
    const { [keyId]: _old, ...others } = slots.live;
    const live = { ...others, ...(grace > 0 && Date.parse(at) > now ? { [keyId]: at } : {}), [created.record.keyId]: null };
    // Refused only when it grows the count past the bound: a rotation without grace always works.
    const count = Object.keys(live).length;
    if (count > MAX_LIVE_KEYS && count > Object.keys(slots.live).length) throw tooManyKeys();
    // Conditional on the old key as read (not revoked, same expiry): two rotations of one key cannot both extend it.
    await keyStore(deps).rotateKey({ created: created.record, old, endAt: at, revoke: grace === 0, slots: { organizationId, read: slots.version, live } });
    const { hash: _hash, ...rest } = { ...old, ...(grace === 0 ? { revokedAt: at } : { expiresAt: at }) };
    return { key: created.key, record: created.record, previous: { ...rest, status: keyStatus(rest, now) } };
  });
}

/** Revokes a key now and gives its slot back, in one transaction. */
export async function revokeApiKey(deps: Deps, organizationId: string, keyId: string): Promise<ApiKeySummary> {
  const found = await requireKey(deps, organizationId, keyId);
  return retryLostRaces('The key', async () => {
    const record = await storedKey(deps, found);
    const at = new Date(deps.now()).toISOString();
    if (!record.revokedAt) {
      const slots = await readKeySlots(deps, organizationId);
      const { [keyId]: _gone, ...live } = slots.live;
      await keyStore(deps).revokeKey({ key: record, at, slots: { organizationId, read: slots.version, live } });
    }
    const { hash: _hash, ...rest } = { ...record, revokedAt: record.revokedAt ?? at };
    return { ...rest, status: 'revoked' as const };
  });
}
