/**
 * The organizations table's stores in memory (functions/core/tenancy/organization-store.ts and
 * wallet-store.ts): one map of items, as the table is one, so the wallet an organization is created
 * with is the wallet debited. The same conditions as the DynamoDB stores (a debit refused on a wallet
 * short of the price or a day not open, the guard's slot, the roll-over conditioned on the counters
 * read, adoption and release on the claim's token); test/integration/stores/*.contract.test.ts holds
 * the two to one behaviour. Fault injection: `faults`; `conflict` makes a debit meet the roll-over.
 */
import { keys, type DuplicatePolicy, type Organization } from '../../../functions/core/platform/model.js';
import { toLegacyNotification, toOrganization, type CaptchaSetting, type OrganizationStore } from '../../../functions/core/tenancy/organization-store.js';
import {
  MAX_ROLL_TURNS, refusedDebit, sumByDay, WriteConflict, type Adoption, type Billed, type DailyUsage, type Refunded, type WalletStore,
} from '../../../functions/core/tenancy/wallet-store.js';
import {
  adoptedToken, claimState, DOUBLE_SUBMIT_MS, guardedSubmission, ownClaim, type GuardClaim, type SubmissionGuard,
} from '../../../functions/core/tenancy/double-submit.js';
import { Faults, conditionFailed } from './faults.js';

type Item = Record<string, unknown>;
type Key = { pk: string; sk: string };
const id = (k: Key) => `${k.pk}\u0000${k.sk}`;
const copy = <T>(value: T): T => structuredClone(value);

export type OrganizationsOp = 'createOrganization' | 'getOrganization' | 'listOrganizations' | 'setDuplicatePolicy' | 'setCaptcha' | 'captchaSecret' | 'revokeSettingsLinks' | 'legacyNotifications'
  | 'debitWallet' | 'countUsage' | 'adoptClaim' | 'refundCall' | 'refundUsage' | 'dailyUsage' | 'usageByDay';

export class MemoryOrganizationsTable {
  readonly items = new Map<string, Item>();
  readonly faults = new Faults<OrganizationsOp>();

  get(key: Key): Item | undefined {
    const item = this.items.get(id(key));
    return item && copy(item);
  }

  /** Writes an item as it is (a test's given state: an organization of an older version). */
  put(item: Item & Key): void {
    this.items.set(id(item), copy(item));
  }

  private update(key: Key, change: (item: Item) => void): void {
    const item = this.items.get(id(key)) ?? { ...key };
    change(item);
    this.items.set(id(key), item);
  }

  readonly organizations: OrganizationStore = {
    createOrganization: async (org: Organization) => {
      await this.faults.enter('createOrganization');
      if (this.items.has(id(keys.org(org.id)))) throw Object.assign(new Error('Transaction cancelled'), { name: 'TransactionCanceledException' });
      this.put({ ...keys.org(org.id), entity: 'organization', ...org });
      this.put({ ...keys.orgIndexItem(org.id), ...keys.orgIndex(org.createdAt, org.id), entity: 'organization_index', id: org.id });
    },
    getOrganization: async (orgId: string) => {
      await this.faults.enter('getOrganization');
      const item = this.get(keys.org(orgId));
      return item && toOrganization(item);
    },
    listOrganizations: async () => {
      await this.faults.enter('listOrganizations');
      const indexed = [...this.items.values()].filter((i) => i.gsi1pk === 'ORGS').sort((a, b) => String(a.gsi1sk).localeCompare(String(b.gsi1sk)));
      const ids = [...new Set(indexed.map((i) => i.id as string))];
      return ids.flatMap((orgId) => {
        const item = this.get(keys.org(orgId));
        return item ? [toOrganization(item)] : [];
      });
    },
    setDuplicatePolicy: async (orgId: string, policy: DuplicatePolicy) => {
      await this.faults.enter('setDuplicatePolicy');
      if (!this.items.has(id(keys.org(orgId)))) return false;
      this.update(keys.org(orgId), (item) => { item.duplicatePolicy = policy; });
      return true;
    },
    revokeSettingsLinks: async (orgId: string, at: number) => {
      await this.faults.enter('revokeSettingsLinks');
      const org = this.get(keys.org(orgId));
      if (!org) return false;
      if (typeof org.linksRevokedAt !== 'number' || org.linksRevokedAt < at) this.update(keys.org(orgId), (item) => { item.linksRevokedAt = at; });
      return true;
    },
    setCaptcha: async (orgId: string, setting: CaptchaSetting) => {
      await this.faults.enter('setCaptcha');
      if (!this.items.has(id(keys.org(orgId)))) throw Object.assign(new Error('Transaction cancelled'), { name: 'TransactionCanceledException' });
      this.update(keys.org(orgId), (item) => {
        delete item.captchaSecret;
        if (setting.provider === 'none') delete item.captchaProvider;
        else item.captchaProvider = setting.provider;
      });
      const secretKey = { pk: keys.org(orgId).pk, sk: 'CAPTCHA' };
      if ('secret' in setting) this.put({ ...secretKey, entity: 'captcha_secret', secret: setting.secret });
      else this.items.delete(id(secretKey));
    },
    captchaSecret: async (orgId: string) => {
      await this.faults.enter('captchaSecret');
      return this.get({ pk: keys.org(orgId).pk, sk: 'CAPTCHA' })?.secret as string | undefined;
    },
    legacyNotifications: async (orgId: string) => {
      await this.faults.enter('legacyNotifications');
      const pk = keys.org(orgId).pk;
      return [...this.items.values()].filter((i) => i.pk === pk && String(i.sk).startsWith(keys.notificationPrefix))
        .sort((a, b) => (String(a.sk) < String(b.sk) ? -1 : 1)).map((i) => toLegacyNotification(copy(i)));
    },
  };

  /** The guard's condition: the slot does not hold the same submission from the last 10 minutes. */
  private static guardHolds(item: Item | undefined, claim: GuardClaim): boolean {
    const n = claim.guard.slot;
    return item?.[`dh${n}`] === undefined || item[`dh${n}`] !== claim.guard.hash || Number(item[`dt${n}`]) < claim.at - DOUBLE_SUBMIT_MS;
  }

  private static claimSlot(item: Item, { guard, clientId, token, at }: GuardClaim): void {
    const n = guard.slot;
    Object.assign(item, { [`dh${n}`]: guard.hash, [`dc${n}`]: clientId, [`dt${n}`]: at, [`dr${n}`]: token });
  }

  private static releaseSlot(item: Item, guard: SubmissionGuard): void {
    for (const field of ['dh', 'dc', 'dt', 'dr']) delete item[`${field}${guard.slot}`];
  }

  /** The roll-over: the open day's counts to its usage item, `day` opened, conditioned on the counts read (else nothing, as a cancelled transaction). */
  private openUsageDay(orgId: string, old: Item, day: string): void {
    const current = this.items.get(id(keys.org(orgId)));
    const closing = old.usageDay as string | undefined;
    const [calls, billed] = [Number(old.usageCalls ?? 0), Number(old.usageBilledMicros ?? 0)];
    const holds = closing
      ? current?.usageDay === closing && Number(current.usageCalls) === calls && Number(current.usageBilledMicros) === billed
      : current !== undefined && current.usageDay === undefined;
    if (!holds) return;
    const legacyIndex = typeof old.gsi1pk === 'string' && typeof old.createdAt === 'string';
    this.update(keys.org(orgId), (item) => {
      Object.assign(item, { usageDay: day, usageCalls: 0, usageBilledMicros: 0 });
      if (legacyIndex) { delete item.gsi1pk; delete item.gsi1sk; }
    });
    if (closing && calls > 0) {
      this.update(keys.usage(orgId, closing), (item) => {
        Object.assign(item, { calls: Number(item.calls ?? 0) + calls, billed_micros: Number(item.billed_micros ?? 0) + billed, entity: 'usage' });
      });
    }
    if (legacyIndex) this.put({ ...keys.orgIndexItem(orgId), ...keys.orgIndex(old.createdAt as string, orgId), entity: 'organization_index', id: orgId });
  }

  readonly wallet: WalletStore = {
    debitWallet: async (orgId: string, { price, day: today, claim }: { price: number; day: string; claim?: GuardClaim }): Promise<Billed | { short: true }> => {
      let day = today;
      for (let turn = 1; ; turn++) {
        try {
          await this.faults.enter('debitWallet');
        } catch (error) {
          if ((error as Error).name === 'TransactionConflictException') throw new WriteConflict();
          throw error;
        }
        const old = this.get(keys.org(orgId));
        if (!old) throw conditionFailed();
        const wallet = old.walletMicros;
        if (typeof wallet === 'number' && wallet >= price && old.usageDay === day && (!claim || MemoryOrganizationsTable.guardHolds(old, claim))) {
          this.update(keys.org(orgId), (item) => {
            item.walletMicros = wallet - price;
            if (claim) MemoryOrganizationsTable.claimSlot(item, claim);
            item.usageCalls = Number(item.usageCalls ?? 0) + 1;
            item.usageBilledMicros = Number(item.usageBilledMicros ?? 0) + price;
          });
          return { day };
        }
        const refusal = refusedDebit(old, { price, day, claim });
        if (!('retryIn' in refusal)) return refusal;
        day = refusal.retryIn;
        if (refusal.roll) this.openUsageDay(orgId, old, day);
        if (turn >= MAX_ROLL_TURNS) throw new WriteConflict('the day kept rolling over');
      }
    },

    countUsage: async (orgId: string, { day, claim }: { day: string; claim?: GuardClaim }): Promise<Billed> => {
      await this.faults.enter('countUsage');
      const old = this.get(keys.usage(orgId, day));
      if (claim && !MemoryOrganizationsTable.guardHolds(old, claim)) {
        if (ownClaim(old, claim)) return { day };
        const repeated = guardedSubmission(old, claim);
        return repeated ? { duplicateOf: repeated } : { day };
      }
      this.update(keys.usage(orgId, day), (item) => {
        Object.assign(item, { calls: Number(item.calls ?? 0) + 1, billed_micros: Number(item.billed_micros ?? 0), entity: 'usage' });
        if (claim) MemoryOrganizationsTable.claimSlot(item, claim);
      });
      return { day };
    },

    adoptClaim: async (orgId: string, { prepaid, day, guard, token, by }: Adoption) => {
      await this.faults.enter('adoptClaim');
      const key = prepaid ? keys.org(orgId) : keys.usage(orgId, day);
      const old = this.get(key);
      const n = guard.slot;
      if (old?.[`dr${n}`] === token) {
        this.update(key, (item) => { item[`dr${n}`] = adoptedToken(token, by); });
        return 'adopted';
      }
      if (claimState(old, guard, token) === 'adopted') return old?.[`dr${n}`] === adoptedToken(token, by) ? 'adopted' : 'other';
      return 'released';
    },

    refundCall: async (orgId: string, { price, day, claim }: { price: number; day: string; claim?: Pick<GuardClaim, 'guard' | 'token'> }): Promise<Refunded> => {
      const prepaid = price > 0;
      let open = prepaid;
      let held = claim;
      let outcome: Refunded['outcome'] = 'refunded';
      for (;;) {
        await this.faults.enter('refundCall');
        const key = prepaid ? keys.org(orgId) : keys.usage(orgId, day);
        const old = this.get(key);
        const holds = (!(prepaid && open) || old?.usageDay === day) && (!held || old?.[`dr${held.guard.slot}`] === held.token);
        if (holds) {
          const release = held;
          this.update(key, (item) => {
            if (prepaid) item.walletMicros = Number(item.walletMicros) + price;
            if (!prepaid) item.calls = Number(item.calls ?? 0) - 1;
            else if (open) Object.assign(item, { usageCalls: Number(item.usageCalls ?? 0) - 1, usageBilledMicros: Number(item.usageBilledMicros ?? 0) - price });
            if (release) MemoryOrganizationsTable.releaseSlot(item, release.guard);
          });
          break;
        }
        const state = held ? claimState(old, held.guard, held.token) : 'held';
        if (state === 'adopted') return { outcome: 'adopted' };
        if (state === 'released') { outcome = 'released'; break; }
        if (state === 'taken') held = undefined;
        else if (open && old?.usageDay !== day) open = false;
        else throw conditionFailed();
      }
      if (!prepaid || open) return { outcome };
      try {
        await this.faults.enter('refundUsage');
      } catch (error) {
        return { outcome: 'usage-owed', error: (error as Error).name };
      }
      this.update(keys.usage(orgId, day), (item) => {
        Object.assign(item, { calls: Number(item.calls ?? 0) - 1, billed_micros: Number(item.billed_micros ?? 0) - price });
      });
      return { outcome };
    },

    dailyUsage: async (orgId: string, day: string): Promise<DailyUsage> => {
      await this.faults.enter('dailyUsage');
      const usage = this.get(keys.usage(orgId, day));
      const org = this.get(keys.org(orgId));
      const open = org?.usageDay === day;
      return {
        calls: Number(usage?.calls ?? 0) + (open ? Number(org?.usageCalls ?? 0) : 0),
        billedMicros: Number(usage?.billed_micros ?? 0) + (open ? Number(org?.usageBilledMicros ?? 0) : 0),
      };
    },

    usageByDay: async (orgId: string, fromDay: string, toDay: string) => {
      await this.faults.enter('usageByDay');
      const pk = keys.org(orgId).pk;
      const [lo, hi] = [keys.usage(orgId, fromDay).sk, keys.usage(orgId, toDay).sk];
      const counts = [...this.items.values()].filter((i) => i.pk === pk && String(i.sk) >= lo && String(i.sk) <= hi)
        .map((i) => ({ day: String(i.sk).slice(keys.usagePrefix.length), calls: Number(i.calls ?? 0), billedMicros: Number(i.billed_micros ?? 0) }));
      const org = this.get(keys.org(orgId));
      const open = org?.usageDay;
      if (typeof open === 'string' && open >= fromDay && open <= toDay) counts.push({ day: open, calls: Number(org?.usageCalls ?? 0), billedMicros: Number(org?.usageBilledMicros ?? 0) });
      return sumByDay(counts);
    },
  };
}
