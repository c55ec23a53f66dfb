/**
 * The recipient store: an organization's notice recipients, items of the organizations table
 * (`pk = ORG#<id>`, `sk = RECIPIENT#<address>`), the only module that reads or writes them. An
 * organization has at most MAX_RECIPIENTS of them (notify/recipients.ts checks before writing), so
 * the whole list is one Query and one transaction. Tests put the in-memory twin in its place
 * (`recipientPort.with`; test/support/stores/memory-recipients.ts).
 */
import { GetCommand, TransactWriteCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import type { Deps } from '../platform/deps.js';
import { queryAll } from '../platform/dynamo-store.js';
import { keys } from '../platform/model.js';
import { depsPort } from '../platform/deps-port.js';
import { NOTICE_KINDS, type NoticeKind } from './notice.js';
import { DIGEST_INDEX_PK } from '../platform/bindings.js';
import { ORGANIZATION_NAME_FIELDS, RECIPIENT_FIELDS } from './recipient-fields.js';

/** pending: added, its confirmation e-mail sent, nothing else until its link is followed; confirmed: gets the notices it picked; suppressed: gets nothing (unsubscribed, bounced, complained, rejected). */
export const RECIPIENT_STATUSES = ['pending', 'confirmed', 'suppressed'] as const;
export type RecipientStatus = (typeof RECIPIENT_STATUSES)[number];
/** Why an address gets nothing: it unsubscribed, SES reported a permanent bounce or a complaint, or the mail server refused it for good (a 5xx to its RCPT TO, notify/mailer.ts). */
export const SUPPRESSED_REASONS = ['unsubscribed', 'bounced', 'complained', 'rejected'] as const;
export type SuppressedReason = (typeof SUPPRESSED_REASONS)[number];

export interface Recipient {
  /** Normalized (notify/recipients.ts normalizeAddress). */
  email: string;
  notices: NoticeKind[];
  status: RecipientStatus;
  /** Epoch ms of this addition: a confirm link names it, so a link of an earlier addition confirms nothing. */
  addedAt: number;
  confirmedAt?: string;
  suppressedAt?: string;
  suppressedReason?: SuppressedReason;
}

export interface RecipientChanges {
  /** New recipients (their item must not exist). */
  add: Recipient[];
  /** Existing recipients whose picks change (their item must exist; the status is kept). */
  update: { email: string; notices: NoticeKind[] }[];
  remove: string[];
  /** Addresses to remember as suppressed (a suppressed recipient removed): `SUPPRESSED#<address>` items, kept after the recipient. */
  suppressed?: { email: string; reason: SuppressedReason; at: string }[];
  /** Confirmation e-mails sent for these additions: `CONFIRMATION#<address>` items (`addedAt`). */
  confirmations?: { email: string; addedAt: number }[];
  /**
   * The organization's recipient count as the change read it and as it leaves it: the change is
   * written only if the count item (`RECIPIENTS`, absent before its first counted change) still says
   * `before`, so two concurrent changes read from the same list cannot both pass MAX_RECIPIENTS.
   */
  count?: { before: number; after: number };
}

/** What an organization remembers of an address beyond its recipient item. */
export interface AddressRecord {
  /** It unsubscribed, bounced or complained: never added again (rejected: it may be). */
  suppressed?: SuppressedReason;
  /** When it was suppressed (ISO), when known. */
  suppressedAt?: string;
  /** The addition its last confirmation e-mail was sent for. */
  confirmationAddedAt?: number;
}

export interface StatusChange {
  to: RecipientStatus;
  /** Only from these statuses. */
  from: readonly RecipientStatus[];
  /** Only the addition of this time (a confirm link's). */
  addedAt?: number;
  at: string;
  reason?: SuppressedReason;
}

export interface RecipientStore {
  /** The organization's recipients, by address. */
  listRecipients(organizationId: string): Promise<Recipient[]>;
  getRecipient(organizationId: string, email: string): Promise<Recipient | undefined>;
  /** All of it or nothing, in one transaction; throws when an item is not as the change expects (another admin's change won). */
  changeRecipients(organizationId: string, changes: RecipientChanges): Promise<void>;
  /** Moves one recipient's status when its current one is in `from` (and its addition is `addedAt`); false when absent or not. */
  setStatus(organizationId: string, email: string, change: StatusChange): Promise<boolean>;
  /** The organizations with a recipient who picked `daily_digest` (any status: the mailer sends to the confirmed), from the digest index. */
  digestOrganizations(): Promise<string[]>;
  /** Remembers that the address is suppressed, listed or not (an UpdateItem naming the suppression's attributes: mail-feedback's grant). */
  rememberSuppressed(organizationId: string, email: string, reason: SuppressedReason, at: string): Promise<void>;
  /** What the organization remembers of each of `emails` (one GetItem per record: an addition is at most MAX_RECIPIENTS). */
  addressRecords(organizationId: string, emails: readonly string[]): Promise<Map<string, AddressRecord>>;
  /** The organization's name (its item's `name` alone: the mailer's grant reads no more of it); undefined when there is no such organization. */
  organizationName(organizationId: string): Promise<string | undefined>;
  /** Counts `count` confirmation e-mails more on the organization's `day` (YYYY-MM-DD), unless that would pass `max`: false then, nothing counted. */
  countConfirmations(organizationId: string, day: string, count: number, max: number): Promise<boolean>;
}

/**
 * The digest index: one item per recipient who picked `daily_digest`, in one partition
 * (DIGEST_INDEX_PK, `sk = <organizationId>#<address>`), written in the same transaction as the
 * recipient, so the daily digest lists its organizations with one Query, never a scan.
 */
export const digestIndexKey = (organizationId: string, email: string) => ({ pk: DIGEST_INDEX_PK, sk: `${organizationId}#${email}` });
const picksDigest = (notices: readonly string[]) => notices.includes('daily_digest');

export const RECIPIENT_PREFIX = 'RECIPIENT#';
/** A projection of `fields` (every name aliased: `name` and `status` are reserved words). */
export const projectionOf = (fields: readonly string[]) => ({
  ProjectionExpression: fields.map((_, i) => `#p${i}`).join(', '),
  ExpressionAttributeNames: Object.fromEntries(fields.map((f, i) => [`#p${i}`, f])),
});
/** The confirmation e-mails of an organization's day: `CONFIRMATIONS#<day>` (`count`). */
export const confirmationsKey = (organizationId: string, day: string) => ({ pk: keys.org(organizationId).pk, sk: `CONFIRMATIONS#${day}` });
export const recipientCountKey = (organizationId: string) => ({ pk: keys.org(organizationId).pk, sk: 'RECIPIENTS' });
export const suppressedKey = (organizationId: string, email: string) => ({ pk: keys.org(organizationId).pk, sk: `SUPPRESSED#${email}` });
export const confirmationKey = (organizationId: string, email: string) => ({ pk: keys.org(organizationId).pk, sk: `CONFIRMATION#${email}` });
export const suppressedItem = (organizationId: string, s: { email: string; reason: SuppressedReason; at: string }) =>
  ({ ...suppressedKey(organizationId, s.email), entity: 'notice_suppressed', status: 'suppressed', suppressedAt: s.at, suppressedReason: s.reason });
export const confirmationItem = (organizationId: string, c: { email: string; addedAt: number }) =>
  ({ ...confirmationKey(organizationId, c.email), entity: 'notice_confirmation', addedAt: c.addedAt });
export const recipientKey = (organizationId: string, email: string) => ({ pk: keys.org(organizationId).pk, sk: `${RECIPIENT_PREFIX}${email}` });

/** A recipient from its item; picks an earlier version did not know are dropped. */
export const toRecipient = (item: Record<string, unknown>): Recipient => ({
  email: item.email as string,
  notices: ((item.notices as string[] | undefined) ?? []).filter((n): n is NoticeKind => (NOTICE_KINDS as readonly string[]).includes(n)),
  status: item.status as RecipientStatus,
  addedAt: Number(item.addedAt),
  ...(item.confirmedAt ? { confirmedAt: item.confirmedAt as string } : {}),
  ...(item.suppressedAt ? { suppressedAt: item.suppressedAt as string } : {}),
  ...(item.suppressedReason ? { suppressedReason: item.suppressedReason as SuppressedReason } : {}),
});

export const recipientItem = (organizationId: string, r: Recipient) => ({ ...recipientKey(organizationId, r.email), entity: 'notice_recipient', ...r });

export function dynamoRecipientStore(deps: Deps): RecipientStore {
  const TableName = deps.tables.organizations;
  return {
    async listRecipients(organizationId) {
      const items = await queryAll(deps, {
        TableName, KeyConditionExpression: 'pk = :p AND begins_with(sk, :s)',
        ExpressionAttributeValues: { ':p': keys.org(organizationId).pk, ':s': RECIPIENT_PREFIX }, ConsistentRead: true,
        ...projectionOf(RECIPIENT_FIELDS), Select: 'SPECIFIC_ATTRIBUTES',
      });
      return items.map(toRecipient);
    },

    async getRecipient(organizationId, email) {
      const { Item } = await deps.doc.send(new GetCommand({ TableName, Key: recipientKey(organizationId, email), ConsistentRead: true, ...projectionOf(RECIPIENT_FIELDS) }));
      return Item ? toRecipient(Item) : undefined;
    },

    async rememberSuppressed(organizationId, email, reason, at) {
      await deps.doc.send(new UpdateCommand({
        TableName, Key: suppressedKey(organizationId, email), UpdateExpression: 'SET #s = :s, suppressedAt = :at, suppressedReason = :r',
        ExpressionAttributeNames: { '#s': 'status' }, ExpressionAttributeValues: { ':s': 'suppressed', ':at': at, ':r': reason },
      }));
    },

    async addressRecords(organizationId, emails) {
      const out = new Map<string, AddressRecord>();
      await Promise.all(emails.map(async (email) => {
        const [suppressed, confirmation] = await Promise.all([
          deps.doc.send(new GetCommand({ TableName, Key: suppressedKey(organizationId, email), ConsistentRead: true, ...projectionOf(['suppressedReason', 'suppressedAt']) })),
          deps.doc.send(new GetCommand({ TableName, Key: confirmationKey(organizationId, email), ConsistentRead: true, ...projectionOf(['addedAt']) })),
        ]);
        const record: AddressRecord = {
          ...(suppressed.Item ? { suppressed: (suppressed.Item.suppressedReason as SuppressedReason | undefined) ?? 'unsubscribed' } : {}),
          ...(typeof suppressed.Item?.suppressedAt === 'string' ? { suppressedAt: suppressed.Item.suppressedAt } : {}),
          ...(confirmation.Item ? { confirmationAddedAt: Number(confirmation.Item.addedAt) } : {}),
        };
        if (record.suppressed || record.confirmationAddedAt !== undefined) out.set(email, record);
      }));
      return out;
    },

    async organizationName(organizationId) {
      const { Item } = await deps.doc.send(new GetCommand({ TableName, Key: keys.org(organizationId), ...projectionOf(ORGANIZATION_NAME_FIELDS) }));
      return Item ? String(Item.name ?? '') : undefined;
    },

    async changeRecipients(organizationId, { add, update, remove, suppressed = [], confirmations = [], count }) {
      if (add.length + update.length + remove.length === 0) return;
      await deps.doc.send(new TransactWriteCommand({
        TransactItems: [
          ...add.map((r) => ({ Put: { TableName, Item: recipientItem(organizationId, r), ConditionExpression: 'attribute_not_exists(pk)' } })),
          ...update.map((u) => ({
            Update: {
              TableName, Key: recipientKey(organizationId, u.email), UpdateExpression: 'SET notices = :n',
              ConditionExpression: 'attribute_exists(pk)', ExpressionAttributeValues: { ':n': u.notices },
            },
          })),
          // Only one that is there: a concurrent change that removed it already fails this one (the count stays exact).
          ...remove.map((email) => ({ Delete: { TableName, Key: recipientKey(organizationId, email), ...(count ? { ConditionExpression: 'attribute_exists(pk)' } : {}) } })),
          ...(count ? [{
            Update: {
              TableName, Key: recipientCountKey(organizationId), UpdateExpression: 'SET #c = :after, entity = :e',
              // Absent: no counted change yet (recipients written before the count item existed are in `before`).
              ConditionExpression: 'attribute_not_exists(#c) OR #c = :before', ExpressionAttributeNames: { '#c': 'count' },
              ExpressionAttributeValues: { ':after': count.after, ':before': count.before, ':e': 'notice_recipient_count' },
            },
          }] : []),
          ...suppressed.map((x) => ({ Put: { TableName, Item: suppressedItem(organizationId, x) } })),
          ...confirmations.map((c) => ({ Put: { TableName, Item: confirmationItem(organizationId, c) } })),
          // The digest index follows the picks (an idempotent put or delete each).
          ...[...add, ...update].filter((r) => picksDigest(r.notices)).map((r) => ({ Put: { TableName, Item: { ...digestIndexKey(organizationId, r.email), organizationId } } })),
          ...[...update.filter((u) => !picksDigest(u.notices)).map((u) => u.email), ...remove].map((email) => ({ Delete: { TableName, Key: digestIndexKey(organizationId, email) } })),
        ],
      }));
    },

    async digestOrganizations() {
      const items = await queryAll(deps, { TableName, KeyConditionExpression: 'pk = :p', ExpressionAttributeValues: { ':p': DIGEST_INDEX_PK } });
      return [...new Set(items.map((i) => i.organizationId as string))];
    },

    async setStatus(organizationId, email, change) {
      const from = change.from.map((_, i) => `:f${i}`);
      const stamp = change.to === 'confirmed' ? 'confirmedAt' : change.to === 'suppressed' ? 'suppressedAt' : undefined;
      try {
        await deps.doc.send(new UpdateCommand({
          TableName, Key: recipientKey(organizationId, email),
          UpdateExpression: `SET #s = :to${stamp ? `, ${stamp} = :at` : ''}${change.reason ? ', suppressedReason = :r' : ''}`,
          ConditionExpression: `attribute_exists(pk) AND #s IN (${from.join(', ')})${change.addedAt !== undefined ? ' AND addedAt = :added' : ''}`,
          ExpressionAttributeNames: { '#s': 'status' },
          ExpressionAttributeValues: {
            ':to': change.to, ...Object.fromEntries(change.from.map((s, i) => [`:f${i}`, s])),
            ...(stamp ? { ':at': change.at } : {}), ...(change.reason ? { ':r': change.reason } : {}),
            ...(change.addedAt !== undefined ? { ':added': change.addedAt } : {}),
          },
        }));
        return true;
      } catch (error) {
        if (error instanceof ConditionalCheckFailedException) return false;
        throw error;
      }
    },

    async countConfirmations(organizationId, day, count, max) {
      try {
        await deps.doc.send(new UpdateCommand({
          TableName, Key: confirmationsKey(organizationId, day), UpdateExpression: 'ADD #c :n SET entity = :e',
          ConditionExpression: 'attribute_not_exists(#c) OR #c <= :room', ExpressionAttributeNames: { '#c': 'count' },
          ExpressionAttributeValues: { ':n': count, ':room': max - count, ':e': 'notice_confirmations' },
        }));
        return true;
      } catch (error) {
        if (error instanceof ConditionalCheckFailedException) return false;
        throw error;
      }
    },
  };
}

/** The recipient store of these deps (the in-memory twin in tests). */
export const recipientPort = depsPort<RecipientStore>('recipientStore', dynamoRecipientStore);
export const recipientStore = recipientPort.of;
