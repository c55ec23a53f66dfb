/**
 * Organizations: the tenant every stored item is keyed by. Created by admins (CLI); read by every
 * request through its API key. Validation here; the items are the organization store's
 * (organization-store.ts), the wallet and usage the wallet store's (wallet-store.ts).
 */
import type { Deps } from '../platform/deps.js';
import { notFound, validationFailed } from '../platform/errors.js';
import { newId } from '../platform/ids.js';
import type { Billing, CaptchaProvider, DuplicatePolicy, Organization } from '../platform/model.js';
import { rateLimitCeilingPerMinute } from '../platform/config.js';
import { organizationStore } from './organization-store.js';
import { walletStore, type DailyUsage, type DayUsage } from './wallet-store.js';

export type { DailyUsage, DayUsage } from './wallet-store.js';

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
  await organizationStore(deps).createOrganization(org);
  return org;
}

export const duplicatePolicies: readonly DuplicatePolicy[] = ['flag', 'merge'];

/**
 * Sets what a lead matching an existing client does (docs/leads.md "Duplicates"): `flag` creates a
 * new client marked `possible_duplicate_of`, `merge` attaches the submission to the existing one.
 */
export async function setDuplicatePolicy(deps: Deps, id: string, policy: string): Promise<Organization> {
  if (!duplicatePolicies.includes(policy as DuplicatePolicy)) throw validationFailed([{ field: 'duplicate_policy', message: `must be one of ${duplicatePolicies.join(', ')}` }]);
  if (!await organizationStore(deps).setDuplicatePolicy(id, policy as DuplicatePolicy)) throw notFound(`No organization ${id}.`);
  return requireOrganization(deps, id);
}

export const captchaProviders: readonly CaptchaProvider[] = ['turnstile', 'hcaptcha', 'recaptcha'];

/**
 * Sets (or, with provider `none`, removes) the CAPTCHA publishable-key leads of the organization
 * must pass (docs/leads.md#lead-forms-in-public-pages-publishable-keys). The provider goes on the organization item, the secret on an item of its
 * own (organization-store.ts captchaSecretKey), both in one transaction; the secret is never returned, printed or logged.
 */
export async function setOrganizationCaptcha(deps: Deps, id: string, input: { provider: CaptchaProvider | 'none'; secret?: string }): Promise<Organization> {
  const errors = [];
  if (input.provider !== 'none' && !captchaProviders.includes(input.provider)) errors.push({ field: 'provider', message: `must be one of ${captchaProviders.join(', ')} or none` });
  const secret = input.secret?.trim() ?? '';
  if (input.provider !== 'none' && (!secret || secret.length > 500 || /\s/.test(secret))) errors.push({ field: 'secret', message: 'the provider\'s secret key is required (1 to 500 characters, no spaces)' });
  if (input.provider === 'none' && input.secret !== undefined) errors.push({ field: 'secret', message: 'not used with provider none' });
  if (errors.length) throw validationFailed(errors);
  await requireOrganization(deps, id);
  await organizationStore(deps).setCaptcha(id, input.provider === 'none' ? { provider: 'none' } : { provider: input.provider, secret });
  return requireOrganization(deps, id);
}

/** The organization's CAPTCHA secret (one GetItem of its own item); undefined when none is set. */
export const captchaSecret = (deps: Deps, id: string): Promise<string | undefined> => organizationStore(deps).captchaSecret(id);

export const getOrganization = (deps: Deps, id: string, options?: { consistent?: boolean }): Promise<Organization | undefined> =>
  organizationStore(deps).getOrganization(id, options);

/**
 * Signs out every settings link of the organization issued until now (docs/settings.md "Signing
 * out every link"): the settings API reads the organization item consistently on each request, so
 * the next request of any earlier link is a 401. Answers the time recorded.
 */
export async function revokeSettingsLinks(deps: Deps, id: string): Promise<number> {
  const at = deps.now();
  if (!await organizationStore(deps).revokeSettingsLinks(id, at)) throw notFound(`No organization ${id}.`);
  return at;
}

export async function requireOrganization(deps: Deps, id: string): Promise<Organization> {
  const org = await getOrganization(deps, id);
  if (!org) throw notFound(`No organization ${id}.`);
  return org;
}

/**
 * Lead calls and billed micro-dollars of one day. The `USAGE#<day>` item holds postpaid counts
 * and the closed days of prepaid organizations; a prepaid organization's open day is counted on
 * its own item (usageDay, usageCalls, usageBilledMicros), next to the wallet it is debited with.
 */
export const dailyUsage = (deps: Deps, id: string, day: string): Promise<DailyUsage> => walletStore(deps).dailyUsage(id, day);
/** Each day's calls and billed micro-dollars from `fromDay` to `toDay` (inclusive), days with any, ascending. */
export const usageByDay = (deps: Deps, id: string, fromDay: string, toDay: string): Promise<DayUsage[]> => walletStore(deps).usageByDay(id, fromDay, toDay);

/** Oldest first. */
export const listOrganizations = (deps: Deps): Promise<Organization[]> => organizationStore(deps).listOrganizations();
