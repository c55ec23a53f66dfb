/**
 * The recipient store in memory (functions/core/notify/recipient-store.ts): items in the
 * organizations table's map (test/support/stores/memory-organizations.ts), with the same
 * conditions as DynamoDB's: an addition refused when the address is there, a change of picks when it
 * is not (and then nothing of the change is written), a status moved only from the statuses named
 * and for the addition named. test/integration/stores/recipient-store.contract.test.ts holds the two to one behaviour.
 */
import { RECIPIENT_PREFIX, recipientCountKey, confirmationItem, confirmationKey, suppressedItem, suppressedKey, type AddressRecord, type SuppressedReason, confirmationsKey, digestIndexKey, recipientItem, recipientKey, toRecipient, type RecipientStore } from '../../../functions/core/notify/recipient-store.js';
import { DIGEST_INDEX_PK } from '../../../functions/core/platform/bindings.js';
import { keys } from '../../../functions/core/platform/model.js';

type Item = Record<string, unknown>;
const id = (k: { pk: string; sk: string }) => `${k.pk}\u0000${k.sk}`;

export function memoryRecipientStore(items: Map<string, Item>): RecipientStore {
  return {
    listRecipients: async (organizationId) => {
      const prefix = id({ pk: keys.org(organizationId).pk, sk: RECIPIENT_PREFIX });
      return [...items.entries()].filter(([k]) => k.startsWith(prefix)).sort(([a], [b]) => (a < b ? -1 : 1)).map(([, item]) => toRecipient(structuredClone(item)));
    },
    getRecipient: async (organizationId, email) => {
      const item = items.get(id(recipientKey(organizationId, email)));
      return item && toRecipient(structuredClone(item));
    },
    changeRecipients: async (organizationId, { add, update, remove, suppressed = [], confirmations = [], count }) => {
      const counted = items.get(id(recipientCountKey(organizationId)))?.count;
      const clash = add.some((r) => items.has(id(recipientKey(organizationId, r.email)))) || update.some((u) => !items.has(id(recipientKey(organizationId, u.email))))
        || (count !== undefined && (remove.some((email) => !items.has(id(recipientKey(organizationId, email)))) || (counted !== undefined && counted !== count.before)));
      if (clash) throw Object.assign(new Error('Transaction cancelled'), { name: 'TransactionCanceledException' });
      for (const r of add) items.set(id(recipientKey(organizationId, r.email)), structuredClone(recipientItem(organizationId, r)));
      for (const u of update) items.get(id(recipientKey(organizationId, u.email)))!.notices = [...u.notices];
      for (const email of remove) items.delete(id(recipientKey(organizationId, email)));
      if (count) items.set(id(recipientCountKey(organizationId)), { ...recipientCountKey(organizationId), count: count.after, entity: 'notice_recipient_count' });
      for (const x of suppressed) items.set(id(suppressedKey(organizationId, x.email)), suppressedItem(organizationId, x));
      for (const c of confirmations) items.set(id(confirmationKey(organizationId, c.email)), confirmationItem(organizationId, c));
      // The digest index follows the picks.
      for (const r of [...add, ...update]) {
        if (r.notices.includes('daily_digest')) items.set(id(digestIndexKey(organizationId, r.email)), { ...digestIndexKey(organizationId, r.email), organizationId });
        else items.delete(id(digestIndexKey(organizationId, r.email)));
      }
      for (const email of remove) items.delete(id(digestIndexKey(organizationId, email)));
    },
    rememberSuppressed: async (organizationId, email, reason, at) => {
      const key = suppressedKey(organizationId, email);
      items.set(id(key), { ...items.get(id(key)), ...key, status: 'suppressed', suppressedAt: at, suppressedReason: reason });
    },
    addressRecords: async (organizationId, emails) => {
      const out = new Map<string, AddressRecord>();
      for (const email of emails) {
        const suppressed = items.get(id(suppressedKey(organizationId, email)));
        const confirmation = items.get(id(confirmationKey(organizationId, email)));
        const record: AddressRecord = {
          ...(suppressed ? { suppressed: (suppressed.suppressedReason as SuppressedReason | undefined) ?? 'unsubscribed' } : {}),
          ...(typeof suppressed?.suppressedAt === 'string' ? { suppressedAt: suppressed.suppressedAt } : {}),
          ...(confirmation ? { confirmationAddedAt: Number(confirmation.addedAt) } : {}),
        };
        if (record.suppressed || record.confirmationAddedAt !== undefined) out.set(email, record);
      }
      return out;
    },
    organizationName: async (organizationId) => {
      const item = items.get(id(keys.org(organizationId)));
      return item ? String(item.name ?? '') : undefined;
    },
    digestOrganizations: async () => [...new Set([...items.values()].filter((i) => i.pk === DIGEST_INDEX_PK).map((i) => i.organizationId as string))],
    setStatus: async (organizationId, email, change) => {
      const item = items.get(id(recipientKey(organizationId, email)));
      if (!item || !change.from.includes(item.status as never) || (change.addedAt !== undefined && item.addedAt !== change.addedAt)) return false;
      item.status = change.to;
      if (change.to === 'confirmed') item.confirmedAt = change.at;
      if (change.to === 'suppressed') item.suppressedAt = change.at;
      if (change.reason) item.suppressedReason = change.reason;
      return true;
    },
    countConfirmations: async (organizationId, day, count, max) => {
      const key = confirmationsKey(organizationId, day);
      const item = items.get(id(key)) ?? { ...key, entity: 'notice_confirmations' };
      const now = Number(item.count ?? 0);
      if (item.count !== undefined && now > max - count) return false;
      items.set(id(key), { ...item, count: now + count });
      return true;
    },
  };
}
