/**
 * Organizations: the tenant every stored item is keyed by. Created by admins (CLI); read by every
 * request through its API key.
 */
import { BatchGetCommand, GetCommand, TransactWriteCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import type { Deps } from '../platform/deps.js';
import { notFound, validationFailed } from '../platform/errors.js';
import { newId } from '../platform/ids.js';
import { queryAll } from '../platform/query.js';
import { keys, type Billing, type CaptchaProvider, type DuplicatePolicy, type Organization } from '../platform/model.js';
import { rateLimitCeilingPerMinute } from '../platform/config.js';
import { inBatches } from '../platform/batches.js';

export interface NewOrganization {
  name: string;
  plan?: string;
  rateLimitPerMinute?: number;
  billing?: Billing;
  walletMicros?: number;
}

export async function createOrganization(deps: Deps, input: NewOrganization): Promise<Organization> {
  const errors = [];
  const name = input.name?.trim() ?? '';
  if (!name || name.length > 200) errors.push({ field: 'name', message: 'must be 1 to 200 characters' });
  if (input.rateLimitPerMinute !== undefined && (!Number.isInteger(input.rateLimitPerMinute) || input.rateLimitPerMinute < 1))
    errors.push({ field: 'rate_limit', message: 'must be a positive integer' });
  // Above the WAF's per-key limit the WAF would refuse the key first (docs/capacity.md).
  else if (input.rateLimitPerMinute !== undefined && input.rateLimitPerMinute > rateLimitCeilingPerMinute)
    errors.push({ field: 'rate_limit', message: `must be at most ${rateLimitCeilingPerMinute} per minute (the WAF's per-key limit)` });
  if (input.walletMicros !== undefined && (!Number.isSafeInteger(input.walletMicros) || input.walletMicros < 0))
    errors.push({ field: 'wallet', message: 'must be zero or more' });
  if (input.billing !== undefined && !['none', 'prepaid'].includes(input.billing)) errors.push({ field: 'billing', message: 'must be none or prepaid' });
  if (errors.length) throw validationFailed(errors);

  const org: Organization = {
    id: newId('org', 12),
    name,
    plan: input.plan ?? 'free',
    ...(input.rateLimitPerMinute ? { rateLimitPerMinute: input.rateLimitPerMinute } : {}),
    billing: input.billing ?? 'none',
    walletMicros: input.walletMicros ?? 0,
    createdAt: new Date(deps.now()).toISOString(),
  };
  await deps.doc.send(new TransactWriteCommand({
    TransactItems: [
      { Put: { TableName: deps.tables.organizations, Item: { ...keys.org(org.id), entity: 'organization', ...org }, ConditionExpression: 'attribute_not_exists(pk)' } },
      { Put: { TableName: deps.tables.organizations, Item: { ...keys.orgIndexItem(org.id), ...keys.orgIndex(org.createdAt, org.id), entity: 'organization_index', id: org.id } } },
    ],
  }));
  return org;
}

const toOrganization = (item: Record<string, unknown>): Organization => ({
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
});

export const duplicatePolicies: readonly DuplicatePolicy[] = ['flag', 'merge'];

/**
 * Sets what a lead matching an existing client does (docs/leads.md "Duplicates"): `flag` creates a
 * new client marked `possible_duplicate_of`, `merge` attaches the submission to the existing one.
 */
export async function setDuplicatePolicy(deps: Deps, id: string, policy: string): Promise<Organization> {
  if (!duplicatePolicies.includes(policy as DuplicatePolicy)) throw validationFailed([{ field: 'duplicate_policy', message: `must be one of ${duplicatePolicies.join(', ')}` }]);
  try {
    await deps.doc.send(new UpdateCommand({
      TableName: deps.tables.organizations,
      Key: keys.org(id),
      UpdateExpression: 'SET duplicatePolicy = :p',
      ConditionExpression: 'attribute_exists(pk)',
      ExpressionAttributeValues: { ':p': policy },
    }));
  } catch (error) {
    if (error instanceof ConditionalCheckFailedException) throw notFound(`No organization ${id}.`);
    throw error;
  }
  return requireOrganization(deps, id);
}

export const captchaProviders: readonly CaptchaProvider[] = ['turnstile', 'hcaptcha', 'recaptcha'];

/**
 * The organization's CAPTCHA secret, an item of its own next to the organization item: the
 * organization item is read on every key-cache miss and comes back whole in failed prepaid
 * transactions' cancellation reasons (which error logs print), so the secret stays off it.
 */
const captchaSecretKey = (id: string) => ({ pk: keys.org(id).pk, sk: 'CAPTCHA' });

/**
 * Sets (or, with provider `none`, removes) the CAPTCHA publishable-key leads of the organization
 * must pass (docs/leads.md#lead-forms-in-public-pages-publishable-keys). The provider goes on the organization item, the secret on an item of its
 * own (captchaSecretKey), both in one transaction; the secret is never returned, printed or logged.
 */
export async function setOrganizationCaptcha(deps: Deps, id: string, input: { provider: CaptchaProvider | 'none'; secret?: string }): Promise<Organization> {
  const errors = [];
  if (input.provider !== 'none' && !captchaProviders.includes(input.provider)) errors.push({ field: 'provider', message: `must be one of ${captchaProviders.join(', ')} or none` });
  const secret = input.secret?.trim() ?? '';
  if (input.provider !== 'none' && (!secret || secret.length > 500 || /\s/.test(secret))) errors.push({ field: 'secret', message: 'the provider\'s secret key is required (1 to 500 characters, no spaces)' });
  if (input.provider === 'none' && input.secret !== undefined) errors.push({ field: 'secret', message: 'not used with provider none' });
  if (errors.length) throw validationFailed(errors);
  await requireOrganization(deps, id);
  const TableName = deps.tables.organizations;
  await deps.doc.send(new TransactWriteCommand({
    TransactItems: [
      {
        Update: {
          TableName,
          Key: keys.org(id),
          // captchaSecret: where a secret was once kept on the organization item, removed with any change.
          UpdateExpression: input.provider === 'none' ? 'REMOVE captchaProvider, captchaSecret' : 'SET captchaProvider = :p REMOVE captchaSecret',
          ConditionExpression: 'attribute_exists(pk)',
          ...(input.provider === 'none' ? {} : { ExpressionAttributeValues: { ':p': input.provider } }),
        },
      },
      input.provider === 'none'
        ? { Delete: { TableName, Key: captchaSecretKey(id) } }
        : { Put: { TableName, Item: { ...captchaSecretKey(id), entity: 'captcha_secret', secret } } },
    ],
  }));
  return requireOrganization(deps, id);
}

/** The organization's CAPTCHA secret (one GetItem of its own item); undefined when none is set. */
export async function captchaSecret(deps: Deps, id: string): Promise<string | undefined> {
  const { Item } = await deps.doc.send(new GetCommand({ TableName: deps.tables.organizations, Key: captchaSecretKey(id) }));
  return Item?.secret as string | undefined;
}

export async function getOrganization(deps: Deps, id: string): Promise<Organization | undefined> {
  const { Item } = await deps.doc.send(new GetCommand({ TableName: deps.tables.organizations, Key: keys.org(id) }));
  return Item ? toOrganization(Item) : undefined;
}

export async function requireOrganization(deps: Deps, id: string): Promise<Organization> {
  const org = await getOrganization(deps, id);
  if (!org) throw notFound(`No organization ${id}.`);
  return org;
}

export interface DailyUsage { calls: number; billedMicros: number }

/**
 * Lead calls and billed micro-dollars of one day. The `USAGE#<day>` item holds postpaid counts
 * and the closed days of prepaid organizations; a prepaid organization's open day is counted on
 * its own item (usageDay, usageCalls, usageBilledMicros), next to the wallet it is debited with.
 */
export async function dailyUsage(deps: Deps, id: string, day: string): Promise<DailyUsage> {
  const [usage, org] = await Promise.all([
    deps.doc.send(new GetCommand({ TableName: deps.tables.organizations, Key: keys.usage(id, day), ConsistentRead: true })),
    deps.doc.send(new GetCommand({ TableName: deps.tables.organizations, Key: keys.org(id), ConsistentRead: true })),
  ]);
  const open = org.Item?.usageDay === day;
  return {
    calls: Number(usage.Item?.calls ?? 0) + (open ? Number(org.Item?.usageCalls ?? 0) : 0),
    billedMicros: Number(usage.Item?.billed_micros ?? 0) + (open ? Number(org.Item?.usageBilledMicros ?? 0) : 0),
  };
}

/** Oldest first. The index gives the ids (index items, or organization items written before them); the items are then read. */
export async function listOrganizations(deps: Deps): Promise<Organization[]> {
  const indexed = await queryAll(deps, {
    TableName: deps.tables.organizations,
    IndexName: 'gsi1',
    KeyConditionExpression: 'gsi1pk = :p',
    ExpressionAttributeValues: { ':p': 'ORGS' },
    ProjectionExpression: 'id',
  });
  const ids = [...new Set(indexed.map((item) => item.id as string))];
  const byId = new Map<string, Organization>();
  for (const batch of inBatches(ids, 100)) {
    let request: Record<string, { Keys: Record<string, unknown>[] }> | undefined = { [deps.tables.organizations]: { Keys: batch.map((id) => keys.org(id)) } };
    while (request && Object.keys(request).length > 0) {
      const out = await deps.doc.send(new BatchGetCommand({ RequestItems: request }));
      for (const item of out.Responses?.[deps.tables.organizations] ?? []) byId.set(item.id as string, toOrganization(item));
      request = out.UnprocessedKeys as typeof request;
    }
  }
  return ids.flatMap((id) => byId.get(id) ?? []);
}
