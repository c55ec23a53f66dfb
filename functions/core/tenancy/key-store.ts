/**
 * The API keys' store (docs/api-keys.md): the key items (looked up by hash, listed by the
 * organization's index) and the organization's key-slot item, in the organizations table. The only
 * module that reads or writes them; tenancy/api-keys.ts decides, this module carries the decision
 * out in one transaction. A write whose condition fails (the slots changed, the key changed, an id
 * or hash taken) throws LostRace: the caller reads again (platform/optimistic.ts).
 * Tests substitute an in-memory twin (test/support/memory-key-store.ts) through `withKeyStore`.
 */
import { GetCommand, TransactWriteCommand, UpdateCommand, type TransactWriteCommandInput } from '@aws-sdk/lib-dynamodb';
import type { Deps } from '../platform/deps.js';
import { cancellationReasons, isTransactionConflict } from '../platform/dynamo-store.js';
import { keys, type ApiKeyKind, type ApiKeyRecord } from '../platform/model.js';
import { LostRace } from '../platform/optimistic.js';
import { queryAll } from '../platform/dynamo-store.js';

/**
 * The organization's live keys as its slot item holds them (key id → expiry, null for none), and
 * the version every write of it is conditional on (0: no item yet; the first write creates it).
 */
export interface KeySlots { live: Record<string, string | null>; version: number }

/** A write of the slot item: `live` over the version read. */
export interface SlotsWrite { organizationId: string; read: number; live: KeySlots['live'] }

export interface KeyStore {
  /** The organization's keys, from its index (which may lag a write by a moment). */
  listKeys(organizationId: string): Promise<ApiKeyRecord[]>;
  /** One key of the organization by id (the index), or undefined. */
  findKey(organizationId: string, keyId: string): Promise<ApiKeyRecord | undefined>;
  /** The key item by its hash: authentication (eventually consistent), or as stored now (`consistent`). */
  findKeyByHash(hash: string, options?: { consistent?: boolean }): Promise<ApiKeyRecord | undefined>;
  /**
   * The slot item as stored (consistent); an organization from before it existed gets it made from
   * its keys (not revoked), version 0. Expired entries are left in: the caller drops them by its clock.
   */
  readKeySlots(organizationId: string): Promise<KeySlots>;
  /** Puts a new key (its hash and id unused) and writes the slots, together. */
  createKey(record: ApiKeyRecord, slots: SlotsWrite): Promise<void>;
  /**
   * Puts `created` and ends `old` at `endAt` (an expiry, or a revocation when `revoke`), conditional
   * on `old` as read (not revoked, same expiry), and writes the slots: one transaction.
   */
  rotateKey(rotation: { created: ApiKeyRecord; old: ApiKeyRecord; endAt: string; revoke: boolean; slots: SlotsWrite }): Promise<void>;
  /** Revokes `key` at `at`, conditional on it as read, and writes the slots: one transaction. */
  revokeKey(revocation: { key: ApiKeyRecord; at: string; slots: SlotsWrite }): Promise<void>;
  /** Sets the key's last use (never creates an item); `timeoutMs` bounds the wait. */
  recordKeyUse(hash: string, at: string, options?: { timeoutMs?: number }): Promise<void>;
}

/** A stored key item as the record it holds (items of any age: absent kind is secret). */
export function toKeyRecord(item: Record<string, unknown>): ApiKeyRecord {
  return {
    keyId: item.keyId as string,
    organizationId: item.organizationId as string,
    name: item.name as string,
    hash: item.hash as string,
    ...(typeof item.last4 === 'string' ? { last4: item.last4 } : {}),
    createdAt: item.createdAt as string,
    kind: (item.kind as ApiKeyKind | undefined) ?? 'secret',
    ...(item.origins ? { origins: item.origins as string[] } : {}),
    ...(item.thankYouUrl ? { thankYouUrl: item.thankYouUrl as string } : {}),
    // null: no cap of its own, as authentication has always read it.
    ...(item.dailyCap !== undefined && item.dailyCap !== null ? { dailyCap: Number(item.dailyCap) } : {}),
    ...(item.perIpLimit !== undefined ? { perIpLimit: Number(item.perIpLimit) } : {}),
    ...(item.honeypotField ? { honeypotField: item.honeypotField as string } : {}),
    ...(item.expiresAt ? { expiresAt: item.expiresAt as string } : {}),
    ...(item.revokedAt ? { revokedAt: item.revokedAt as string } : {}),
    ...(item.lastUsedAt ? { lastUsedAt: item.lastUsedAt as string } : {}),
  };
}

export function dynamoKeyStore(deps: Pick<Deps, 'doc' | 'tables'>): KeyStore {
  const TableName = deps.tables.organizations;

  const queryKeys = async (organizationId: string, keyId?: string) => (await queryAll(deps, {
    TableName,
    IndexName: 'gsi1',
    KeyConditionExpression: keyId ? 'gsi1pk = :p AND gsi1sk = :k' : 'gsi1pk = :p',
    ExpressionAttributeValues: { ':p': keys.apiKeyIndex(organizationId, '').gsi1pk, ...(keyId ? { ':k': keyId } : {}) },
  })).map(toKeyRecord);

  /** The transaction item writing the slots over the version read (0: the item must not exist yet). */
  const slotsItem = ({ organizationId, read, live }: SlotsWrite) => (read
    ? {
      Update: {
        TableName, Key: keys.apiKeySlots(organizationId),
        UpdateExpression: 'SET live = :live, version = :next', ConditionExpression: 'version = :v',
        ExpressionAttributeValues: { ':live': live, ':next': read + 1, ':v': read },
      },
    }
    : {
      Put: {
        TableName,
        Item: { ...keys.apiKeySlots(organizationId), entity: 'api_key_slots', live, version: 1 },
        ConditionExpression: 'attribute_not_exists(pk)',
      },
    });

  const putItem = (record: ApiKeyRecord) => ({
    Put: {
      TableName,
      Item: { ...keys.apiKeyByHash(record.hash), ...keys.apiKeyIndex(record.organizationId, record.keyId), entity: 'api_key', ...record },
      ConditionExpression: 'attribute_not_exists(pk)',
    },
  });

  /** Ends a key: conditional on it as read, so two rotations of one key cannot both extend it. A revocation sets only revokedAt. */
  const endItem = (record: ApiKeyRecord, at: string, revoke: boolean) => ({
    Update: {
      TableName,
      Key: keys.apiKeyByHash(record.hash),
      UpdateExpression: revoke ? 'SET revokedAt = :at' : 'SET expiresAt = :at',
      ConditionExpression: `attribute_exists(pk) AND attribute_not_exists(revokedAt) AND ${record.expiresAt ? 'expiresAt = :was' : 'attribute_not_exists(expiresAt)'}`,
      ExpressionAttributeValues: { ':at': at, ...(record.expiresAt ? { ':was': record.expiresAt } : {}) },
    },
  });

  /** A cancelled transaction (a failed condition anywhere, or a conflict) is a lost race: the caller reads again. */
  const send = async (items: NonNullable<TransactWriteCommandInput['TransactItems']>, what: string) => {
    try {
      await deps.doc.send(new TransactWriteCommand({ TransactItems: items }));
    } catch (error) {
      const reasons = cancellationReasons(error);
      if (!reasons) throw error;
      const failed = reasons.findIndex((r) => r.Code === 'ConditionalCheckFailed');
      if (failed === items.length - 1 || isTransactionConflict(reasons)) throw new LostRace('key slots');
      if (failed >= 0) throw new LostRace(what);
      throw error;
    }
  };

  return {
    listKeys: (organizationId) => queryKeys(organizationId),
    findKey: async (organizationId, keyId) => (await queryKeys(organizationId, keyId))[0],
    async findKeyByHash(hash, options = {}) {
      const { Item } = await deps.doc.send(new GetCommand({ TableName, Key: keys.apiKeyByHash(hash), ...(options.consistent ? { ConsistentRead: true } : {}) }));
      return Item ? toKeyRecord(Item) : undefined;
    },
    async readKeySlots(organizationId) {
      const { Item } = await deps.doc.send(new GetCommand({ TableName, Key: keys.apiKeySlots(organizationId), ConsistentRead: true }));
      if (Item) return { live: { ...(Item.live ?? {}) } as KeySlots['live'], version: Number(Item.version) };
      const records = await queryKeys(organizationId);
      return { live: Object.fromEntries(records.filter((r) => !r.revokedAt).map((r) => [r.keyId, r.expiresAt ?? null])), version: 0 };
    },
    createKey: (record, slots) => send([putItem(record), slotsItem(slots)], 'key id taken'),
    rotateKey: ({ created, old, endAt, revoke, slots }) => send([putItem(created), endItem(old, endAt, revoke), slotsItem(slots)], 'key id taken or the key changed'),
    revokeKey: ({ key, at, slots }) => send([endItem(key, at, true), slotsItem(slots)], 'the key changed'),
    async recordKeyUse(hash, at, options = {}) {
      await deps.doc.send(new UpdateCommand({
        TableName,
        Key: keys.apiKeyByHash(hash),
        UpdateExpression: 'SET lastUsedAt = :now',
        ConditionExpression: 'attribute_exists(pk)',
        ExpressionAttributeValues: { ':now': at },
      }), options.timeoutMs ? { abortSignal: AbortSignal.timeout(options.timeoutMs) } : {});
    },
  };
}

/** A symbol, so that deps copied with a spread keep their store. */
const port = Symbol('keyStore');
type WithKeyStore = Deps & { [port]?: KeyStore };

/** `deps` whose API keys live in `store` (an in-memory twin in tests) instead of DynamoDB. */
export const withKeyStore = (deps: Deps, store: KeyStore): Deps => ({ ...deps, [port]: store }) as WithKeyStore;

/** The store `withKeyStore` put in these deps, if any. */
export const injectedKeyStore = (deps: Deps): KeyStore | undefined => (deps as WithKeyStore)[port];

export const keyStore = (deps: Deps): KeyStore => injectedKeyStore(deps) ?? dynamoKeyStore(deps);
