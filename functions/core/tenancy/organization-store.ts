/**
 * The organization store: the organizations table's organization items (profile, plan, billing
 * mode, duplicate policy, CAPTCHA provider), their index items (`ORGINDEX`, listed through `gsi1`)
 * and the CAPTCHA secret's item, the only module that writes them. The wallet and usage fields of
 * the organization item are the wallet store's (wallet-store.ts; docs/decisions.md "Stores of the
 * organizations table"); creation sets the wallet's opening balance. Callers use it through
 * tenancy/organizations.ts, which validates input; tests put the in-memory twin in its place
 * (`organizationPort.with`).
 */
import { BatchGetCommand, GetCommand, TransactWriteCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import type { Deps } from '../platform/deps.js';
import { queryAll } from '../platform/dynamo-store.js';
import { inBatches } from '../platform/batches.js';
import { keys, type Billing, type CaptchaProvider, type DuplicatePolicy, type Organization } from '../platform/model.js';
import { depsPort } from '../platform/deps-port.js';
import { BACKOFFS, retry } from '../platform/retry.js';

class UnprocessedKeys extends Error {
  override name = 'UnprocessedKeys';
}

/** An inbox item of an earlier version (`NOTIFICATION#…`; a lead's notification is now on its client, crm/notifications.ts), read only. */
export interface LegacyNotification { id: string; type: string; title: string; clientId?: string; createdAt: string }

/** A CAPTCHA setting: a provider with its secret, or none. */
export type CaptchaSetting = { provider: CaptchaProvider; secret: string } | { provider: 'none' };

export interface OrganizationStore {
  /** Writes a new organization and its index item; throws if the id exists. */
  createOrganization(org: Organization): Promise<void>;
  /** `consistent`: a strongly consistent read (the settings API's sign-out check). */
  getOrganization(id: string, options?: { consistent?: boolean }): Promise<Organization | undefined>;
  /** Oldest first. */
  listOrganizations(): Promise<Organization[]>;
  /** False when there is no such organization. */
  setDuplicatePolicy(id: string, policy: DuplicatePolicy): Promise<boolean>;
  /** The provider on the organization item, the secret on an item of its own, in one transaction. */
  setCaptcha(id: string, setting: CaptchaSetting): Promise<void>;
  /** The organization's CAPTCHA secret; undefined when none is set. */
  captchaSecret(id: string): Promise<string | undefined>;
  /** Signs out every settings link issued at or before `at` (epoch ms; never moved back). False when there is no such organization. */
  revokeSettingsLinks(id: string, at: number): Promise<boolean>;
  /** The organization's inbox items of earlier versions, in sort-key order. */
  legacyNotifications(id: string): Promise<LegacyNotification[]>;
}

/** A legacy inbox item's fields, as the inbox lists them. */
export const toLegacyNotification = (i: Record<string, unknown>) => ({ id: i.id, type: i.type, title: i.title, clientId: i.clientId, createdAt: i.createdAt }) as LegacyNotification;

/** The organization as callers see it, from its item (never the CAPTCHA secret, nor the open day's counters). */
export const toOrganization = (item: Record<string, unknown>): Organization => ({
  id: item.id as string,
  name: item.name as string,
  plan: item.plan as string,
  ...(item.rateLimitPerMinute ? { rateLimitPerMinute: Number(item.rateLimitPerMinute) } : {}),
  billing: item.billing as Billing,
  walletMicros: Number(item.walletMicros ?? 0),
  createdAt: item.createdAt as string,
  // The provider only: the CAPTCHA secret is read apart (captchaSecret) and never leaves the domain.
  ...(item.captchaProvider ? { captchaProvider: item.captchaProvider as CaptchaProvider } : {}),
  ...(item.duplicatePolicy === 'merge' || item.duplicatePolicy === 'flag' ? { duplicatePolicy: item.duplicatePolicy } : {}),
  ...(typeof item.linksRevokedAt === 'number' ? { linksRevokedAt: item.linksRevokedAt } : {}),
});

/**
 * The organization's CAPTCHA secret, an item of its own next to the organization item: the
 * organization item is read on every key-cache miss and comes back whole in failed prepaid
 * debits' old images, so the secret stays off it.
 */
export const captchaSecretKey = (id: string) => ({ pk: keys.org(id).pk, sk: 'CAPTCHA' });

export function dynamoOrganizationStore(deps: Deps): OrganizationStore {
  const TableName = deps.tables.organizations;
  return {
    async createOrganization(org) {
      await deps.doc.send(new TransactWriteCommand({
        TransactItems: [
          { Put: { TableName, Item: { ...keys.org(org.id), entity: 'organization', ...org }, ConditionExpression: 'attribute_not_exists(pk)' } },
          { Put: { TableName, Item: { ...keys.orgIndexItem(org.id), ...keys.orgIndex(org.createdAt, org.id), entity: 'organization_index', id: org.id } } },
        ],
      }));
    },

    async getOrganization(id, options = {}) {
      const { Item } = await deps.doc.send(new GetCommand({ TableName, Key: keys.org(id), ...(options.consistent ? { ConsistentRead: true } : {}) }));
      return Item ? toOrganization(Item) : undefined;
    },

    // The index gives the ids (index items, or organization items written before them); the items are then read.
    async listOrganizations() {
      const indexed = await queryAll(deps, {
        TableName, IndexName: 'gsi1', KeyConditionExpression: 'gsi1pk = :p', ExpressionAttributeValues: { ':p': 'ORGS' }, ProjectionExpression: 'id',
      });
      const ids = [...new Set(indexed.map((item) => item.id as string))];
      const byId = new Map<string, Organization>();
      for (const batch of inBatches(ids, 100)) {
        let request: Record<string, { Keys: Record<string, unknown>[] }> | undefined = { [TableName]: { Keys: batch.map((id) => keys.org(id)) } };
        // Keys left unprocessed (throttling) are read again after a growing wait, a bounded number of times.
        await retry(async () => {
          const out = await deps.doc.send(new BatchGetCommand({ RequestItems: request! }));
          for (const item of out.Responses?.[TableName] ?? []) byId.set(item.id as string, toOrganization(item));
          request = out.UnprocessedKeys as typeof request;
          if (request && Object.keys(request).length > 0) throw new UnprocessedKeys();
        }, { backoff: BACKOFFS.batchUnprocessed, attempts: 8, shouldRetry: (error) => error instanceof UnprocessedKeys });
      }
      return ids.flatMap((id) => byId.get(id) ?? []);
    },

    async setDuplicatePolicy(id, policy) {
      try {
        await deps.doc.send(new UpdateCommand({
          TableName, Key: keys.org(id), UpdateExpression: 'SET duplicatePolicy = :p', ConditionExpression: 'attribute_exists(pk)', ExpressionAttributeValues: { ':p': policy },
        }));
        return true;
      } catch (error) {
        if (error instanceof ConditionalCheckFailedException) return false;
        throw error;
      }
    },

    async revokeSettingsLinks(id, at) {
      try {
        await deps.doc.send(new UpdateCommand({
          TableName, Key: keys.org(id),
          UpdateExpression: 'SET linksRevokedAt = :at',
          // Never earlier than a revocation already made (a slower container's clock).
          ConditionExpression: 'attribute_exists(pk) AND (attribute_not_exists(linksRevokedAt) OR linksRevokedAt < :at)',
          ExpressionAttributeValues: { ':at': at },
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
        }));
        return true;
      } catch (error) {
        if (error instanceof ConditionalCheckFailedException) return Boolean(error.Item);
        throw error;
      }
    },

    async setCaptcha(id, setting) {
      const none = setting.provider === 'none';
      await deps.doc.send(new TransactWriteCommand({
        TransactItems: [
          {
            Update: {
              TableName,
              Key: keys.org(id),
              // captchaSecret: where a secret was once kept on the organization item, removed with any change.
              UpdateExpression: none ? 'REMOVE captchaProvider, captchaSecret' : 'SET captchaProvider = :p REMOVE captchaSecret',
              ConditionExpression: 'attribute_exists(pk)',
              ...(none ? {} : { ExpressionAttributeValues: { ':p': setting.provider } }),
            },
          },
          'secret' in setting
            ? { Put: { TableName, Item: { ...captchaSecretKey(id), entity: 'captcha_secret', secret: setting.secret } } }
            : { Delete: { TableName, Key: captchaSecretKey(id) } },
        ],
      }));
    },

    async captchaSecret(id) {
      const { Item } = await deps.doc.send(new GetCommand({ TableName, Key: captchaSecretKey(id) }));
      return Item?.secret as string | undefined;
    },

    async legacyNotifications(id) {
      const items = await queryAll(deps, {
        TableName, KeyConditionExpression: 'pk = :p AND begins_with(sk, :s)', ExpressionAttributeValues: { ':p': keys.org(id).pk, ':s': keys.notificationPrefix },
      });
      return items.map(toLegacyNotification);
    },
  };
}

/** The organization store of these deps (the in-memory twin in tests). */
export const organizationPort = depsPort<OrganizationStore>('organizationStore', dynamoOrganizationStore);
export const organizationStore = organizationPort.of;
