/**
 * API keys (DESIGN §5, §15): `crm_live_` (secret, for servers) or `crm_pub_` (publishable, for public
 * pages) + 32 base62 characters (~190 bits from the CSPRNG). Only the SHA-256 hash is stored, as the
 * partition key of a lookup item, so authenticating is one GetItem. The key itself is returned once,
 * by create and rotate, and never stored or logged. A publishable key carries its own policy: the
 * exact origins it may be used from, an optional thank-you URL, daily cap, per-address limit and
 * honeypot field name.
 */
import { createHash } from 'node:crypto';
import { isIP } from 'node:net';
import { PutCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import type { Deps } from '../platform/deps.js';
import { notFound, validationFailed, type FieldError } from '../platform/errors.js';
import { randomBase62, newId } from '../platform/ids.js';
import { queryAll } from '../platform/query.js';
import { keys, type ApiKeyKind, type ApiKeyRecord } from '../platform/model.js';
import { requireOrganization } from './organizations.js';

export const API_KEY_PREFIX = 'crm_live_';
export const PUBLISHABLE_KEY_PREFIX = 'crm_pub_';
const prefixOf = (kind: ApiKeyKind) => (kind === 'publishable' ? PUBLISHABLE_KEY_PREFIX : API_KEY_PREFIX);
const SECRET_LENGTH = 32;
/** The shape of a well-formed key of either kind: checked before any table read. */
export const API_KEY_PATTERN = new RegExp(`^(${API_KEY_PREFIX}|${PUBLISHABLE_KEY_PREFIX})[0-9A-Za-z]{${SECRET_LENGTH}}$`);

/** Defaults of a publishable key's policy (DESIGN §15). */
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

function toRecord(item: Record<string, unknown>): ApiKeyRecord {
  return {
    keyId: item.keyId as string,
    organizationId: item.organizationId as string,
    name: item.name as string,
    hash: item.hash as string,
    createdAt: item.createdAt as string,
    kind: (item.kind as ApiKeyKind | undefined) ?? 'secret',
    ...(item.origins ? { origins: item.origins as string[] } : {}),
    ...(item.thankYouUrl ? { thankYouUrl: item.thankYouUrl as string } : {}),
    ...(item.dailyCap !== undefined ? { dailyCap: Number(item.dailyCap) } : {}),
    ...(item.perIpLimit !== undefined ? { perIpLimit: Number(item.perIpLimit) } : {}),
    ...(item.honeypotField ? { honeypotField: item.honeypotField as string } : {}),
    ...(item.expiresAt ? { expiresAt: item.expiresAt as string } : {}),
    ...(item.revokedAt ? { revokedAt: item.revokedAt as string } : {}),
    ...(item.lastUsedAt ? { lastUsedAt: item.lastUsedAt as string } : {}),
  };
}

export function keyStatus(record: Pick<ApiKeyRecord, 'expiresAt' | 'revokedAt'>, now: number): ApiKeySummary['status'] {
  if (record.revokedAt) return 'revoked';
  if (record.expiresAt) return Date.parse(record.expiresAt) <= now ? 'expired' : 'expiring';
  return 'active';
}

async function putKey(deps: Deps, organizationId: string, name: string, policy: KeyPolicy = {}): Promise<{ key: string; record: ApiKeyRecord }> {
  const kind = policy.kind ?? 'secret';
  const { key, keyId, hash } = generateApiKey(kind);
  const record: ApiKeyRecord = { keyId, organizationId, name, hash, createdAt: new Date(deps.now()).toISOString(), ...policy, kind };
  await deps.doc.send(new PutCommand({
    TableName: deps.tables.organizations,
    Item: { ...keys.apiKeyByHash(hash), ...keys.apiKeyIndex(organizationId, keyId), entity: 'api_key', ...record },
    ConditionExpression: 'attribute_not_exists(pk)',
  }));
  return { key, record };
}

/**
 * A new key of the organization (secret unless `options.kind` says publishable), printed once by the
 * caller. The call shape without options is the secret key of DESIGN §5.
 */
export async function createApiKey(deps: Deps, organizationId: string, name: string, options: NewApiKeyOptions = {}): Promise<{ key: string; record: ApiKeyRecord }> {
  const trimmed = name?.trim() ?? '';
  if (!trimmed || trimmed.length > 100) throw validationFailed([{ field: 'name', message: 'must be 1 to 100 characters' }]);
  const policy = keyPolicy(options);
  await requireOrganization(deps, organizationId);
  return putKey(deps, organizationId, trimmed, policy);
}

async function queryKeys(deps: Deps, organizationId: string, keyId?: string): Promise<ApiKeyRecord[]> {
  const items = await queryAll(deps, {
    TableName: deps.tables.organizations,
    IndexName: 'gsi1',
    KeyConditionExpression: keyId ? 'gsi1pk = :p AND gsi1sk = :k' : 'gsi1pk = :p',
    ExpressionAttributeValues: { ':p': keys.apiKeyIndex(organizationId, '').gsi1pk, ...(keyId ? { ':k': keyId } : {}) },
  });
  return items.map(toRecord);
}

export async function listApiKeys(deps: Deps, organizationId: string): Promise<ApiKeySummary[]> {
  await requireOrganization(deps, organizationId);
  const now = deps.now();
  return (await queryKeys(deps, organizationId))
    .map(({ hash: _hash, ...rest }) => ({ ...rest, status: keyStatus(rest, now) }))
    .sort((a, b) => a.createdAt.localeCompare(b.createdAt));
}

/** The key of this organization, or 404: a key id of another organization is simply not found. */
async function requireKey(deps: Deps, organizationId: string, keyId: string): Promise<ApiKeyRecord> {
  const [record] = await queryKeys(deps, organizationId, keyId);
  if (!record) throw notFound(`Organization ${organizationId} has no key ${keyId}.`);
  return record;
}

/**
 * Ends a key at `at`: an expiry (rotation grace) or a revocation. A revocation sets only revokedAt,
 * so the revocation check is what refuses a revoked key (an expiry already set stays as it was).
 */
async function expireKey(deps: Deps, record: ApiKeyRecord, at: string, revoked: boolean): Promise<void> {
  await deps.doc.send(new UpdateCommand({
    TableName: deps.tables.organizations,
    Key: keys.apiKeyByHash(record.hash),
    UpdateExpression: revoked ? 'SET revokedAt = :at' : 'SET expiresAt = :at',
    ConditionExpression: 'attribute_exists(pk)',
    ExpressionAttributeValues: { ':at': at },
  }));
}

/**
 * Issues a new key with the same name; the old one keeps working for `graceHours` (default from
 * settings, 24 h), so callers can switch without downtime. 0 revokes the old key at once.
 */
export async function rotateApiKey(deps: Deps, organizationId: string, keyId: string, options: { graceHours?: number } = {}): Promise<{ key: string; record: ApiKeyRecord; previous: ApiKeySummary }> {
  const grace = options.graceHours ?? deps.settings.rotationGraceHours;
  if (!Number.isFinite(grace) || grace < 0) throw validationFailed([{ field: 'grace', message: 'must be zero or more hours' }]);
  const old = await requireKey(deps, organizationId, keyId);
  if (old.revokedAt) throw validationFailed([{ field: 'key', message: `${keyId} is revoked; create a new key instead` }]);
  // The new key is of the same kind, with the same policy (origins, limits): a drop-in replacement.
  const { kind, origins, thankYouUrl, dailyCap, perIpLimit, honeypotField } = old;
  const created = await putKey(deps, organizationId, old.name, { kind, origins, thankYouUrl, dailyCap, perIpLimit, honeypotField });
  const now = deps.now();
  const until = new Date(now + grace * 3_600_000).toISOString();
  // A shorter grace never extends an expiry already set by an earlier rotation.
  const at = old.expiresAt && old.expiresAt < until ? old.expiresAt : until;
  await expireKey(deps, old, at, grace === 0);
  const { hash: _hash, ...rest } = { ...old, ...(grace === 0 ? { revokedAt: at } : { expiresAt: at }) };
  return { ...created, previous: { ...rest, status: keyStatus(rest, now) } };
}

export async function revokeApiKey(deps: Deps, organizationId: string, keyId: string): Promise<ApiKeySummary> {
  const record = await requireKey(deps, organizationId, keyId);
  const at = new Date(deps.now()).toISOString();
  if (!record.revokedAt) await expireKey(deps, record, at, true);
  const { hash: _hash, ...rest } = { ...record, revokedAt: record.revokedAt ?? at };
  return { ...rest, status: 'revoked' };
}
