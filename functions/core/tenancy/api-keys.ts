/**
 * API keys (DESIGN §5): `crm_live_` + 32 base62 characters (~190 bits from the CSPRNG). Only the
 * SHA-256 hash is stored, as the partition key of a lookup item, so authenticating is one GetItem.
 * The key itself is returned once, by create and rotate, and never stored or logged.
 */
import { createHash } from 'node:crypto';
import { PutCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import type { Deps } from '../platform/deps.js';
import { notFound, validationFailed } from '../platform/errors.js';
import { randomBase62, newId } from '../platform/ids.js';
import { queryAll } from '../platform/query.js';
import { keys, type ApiKeyRecord } from '../platform/model.js';
import { requireOrganization } from './organizations.js';

export const API_KEY_PREFIX = 'crm_live_';
const SECRET_LENGTH = 32;
/** The shape of a well-formed key: checked before any table read. */
export const API_KEY_PATTERN = new RegExp(`^${API_KEY_PREFIX}[0-9A-Za-z]{${SECRET_LENGTH}}$`);

export const hashApiKey = (key: string) => createHash('sha256').update(key, 'utf8').digest('hex');

export function generateApiKey(): { key: string; keyId: string; hash: string } {
  const key = API_KEY_PREFIX + randomBase62(SECRET_LENGTH);
  return { key, keyId: newId('key', 10), hash: hashApiKey(key) };
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

async function putKey(deps: Deps, organizationId: string, name: string): Promise<{ key: string; record: ApiKeyRecord }> {
  const { key, keyId, hash } = generateApiKey();
  const record: ApiKeyRecord = { keyId, organizationId, name, hash, createdAt: new Date(deps.now()).toISOString() };
  await deps.doc.send(new PutCommand({
    TableName: deps.tables.organizations,
    Item: { ...keys.apiKeyByHash(hash), ...keys.apiKeyIndex(organizationId, keyId), entity: 'api_key', ...record },
    ConditionExpression: 'attribute_not_exists(pk)',
  }));
  return { key, record };
}

export async function createApiKey(deps: Deps, organizationId: string, name: string): Promise<{ key: string; record: ApiKeyRecord }> {
  const trimmed = name?.trim() ?? '';
  if (!trimmed || trimmed.length > 100) throw validationFailed([{ field: 'name', message: 'must be 1 to 100 characters' }]);
  await requireOrganization(deps, organizationId);
  return putKey(deps, organizationId, trimmed);
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
  const created = await putKey(deps, organizationId, old.name);
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
