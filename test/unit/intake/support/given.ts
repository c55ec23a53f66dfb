/**
 * Builders for lead scenarios on the in-memory stores (test/support/stores): an organization, the
 * authentication a key gives, a lead sent, and what its organization then holds.
 */
import { jest } from '@jest/globals';
import type { Deps } from '../../../../functions/core/platform/deps.js';
import type { AuthContext } from '../../../../functions/core/platform/model.js';
import { createOrganization, dailyUsage, requireOrganization, setDuplicatePolicy, type NewOrganization } from '../../../../functions/core/tenancy/organizations.js';
import { createLead, type LeadOutcome } from '../../../../functions/core/intake/create-lead.js';
import { parseLead } from '../../../../functions/core/intake/lead-schema.js';
import { metrics } from '../../../../functions/core/platform/observability.js';
import { memoryStores, type MemoryStores } from '../../../support/stores/memory-deps.js';

export interface Given extends MemoryStores {
  auth: AuthContext;
  /** Sends a lead as the organization's secret key (or `auth`), like the endpoint after authentication. */
  send(body: Record<string, unknown>, options?: { auth?: AuthContext; requestId?: string }): Promise<LeadOutcome>;
  /** The organization's clients, its wallet and the usage of `day` (default: the clock's day). */
  holds(day?: string): Promise<{ clients: Record<string, unknown>[]; wallet: number; usage: { calls: number; billedMicros: number } }>;
  /** The organization, read again (after a setting changed). */
  reauthenticate(): Promise<AuthContext>;
}

let requests = 0;

export async function givenOrganization(input: Partial<NewOrganization> & { duplicatePolicy?: 'flag' | 'merge'; now?: string } = {}): Promise<Given> {
  const stores = memoryStores({ now: input.now });
  const { deps } = stores;
  const org = await createOrganization(deps, { name: 'Acme Plumbing', ...input });
  if (input.duplicatePolicy) await setDuplicatePolicy(deps, org.id, input.duplicatePolicy);
  const reauthenticate = async () => ({ organization: await requireOrganization(deps, org.id), key: { keyId: 'key_secret1', name: 'website' } });
  const auth = await reauthenticate();
  return {
    ...stores,
    auth,
    reauthenticate,
    send: (body, options = {}) => createLead(deps, options.auth ?? auth, parseLead(body), { requestId: options.requestId ?? `req-${++requests}` }),
    holds: async (day = new Date(deps.now()).toISOString().slice(0, 10)) => ({
      clients: stores.clients.clientsOf(org.id).sort((a, b) => String(a.sk).localeCompare(String(b.sk))),
      wallet: (await requireOrganization(deps, org.id)).walletMicros,
      usage: await dailyUsage(deps, org.id, day),
    }),
  };
}

/** The metrics a block adds, by name (counted). */
export async function metricsOf<T>(run: () => Promise<T>): Promise<{ result?: T; error?: unknown; counted: (name: string) => number }> {
  const added = jest.spyOn(metrics, 'addMetric');
  const names = () => added.mock.calls.map(([n]) => n);
  let seen: string[] = [];
  const counted = (name: string) => seen.filter((n) => n === name).length;
  try {
    const result = await run();
    seen = names();
    return { result, counted };
  } catch (error) {
    seen = names();
    return { error, counted };
  } finally {
    added.mockRestore();
  }
}

export const priceOf = (deps: Deps) => deps.config.pricePerCallMicros;
