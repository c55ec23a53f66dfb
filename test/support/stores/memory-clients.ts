/**
 * The clients store in memory (functions/core/intake/clients-store.ts): client items by key, the
 * `match` index read newest first, the put that finds its own item, the merge's bounds (the list's
 * length, DynamoDB's 400 KB item), pages of the partition read as DynamoDB's Query with `Limit` and a
 * filter reads them (`pageSize` clients evaluated a page, selected or not; a full page is not the
 * range's end, even with nothing after it, as DynamoDB then still returns a LastEvaluatedKey). test/integration/stores/clients-store.contract.test.ts holds it
 * and the DynamoDB store to one behaviour. Fault injection: `faults`.
 */
import { keys } from '../../../functions/core/platform/model.js';
import {
  SELECTED_FIELDS, type ClientItem, type ClientSelection, type ClientsPage, type ClientsStore, type MergedSubmission, type MergeResult,
} from '../../../functions/core/intake/clients-store.js';
import { Faults } from './faults.js';

type Item = Record<string, unknown>;
const MAX_ITEM_BYTES = 400 * 1024;
const id = (k: { pk: string; sk: string }) => `${k.pk}\u0000${k.sk}`;
const copy = <T>(value: T): T => structuredClone(value);

export type ClientsOp = keyof ClientsStore;

/** Whether a client is of the selection (its filter). */
const SELECTS: Record<ClientSelection, (item: Item) => boolean> = {
  notification: (item) => item.notification !== undefined,
  leadRequest: (item) => item.request_id !== undefined && item.source === 'api',
};
/** The selected fields a client has (a projection leaves out those it lacks). */
const project = (item: Item, select: ClientSelection): Item => copy(Object.fromEntries(SELECTED_FIELDS[select].filter((f) => item[f] !== undefined).map((f) => [f, item[f]])));

export class MemoryClientsStore implements ClientsStore {
  readonly items = new Map<string, Item>();
  readonly faults = new Faults<ClientsOp>();

  /** The organization's client items, by id (a test's view of the table). */
  clientsOf(organizationId: string): Item[] {
    const pk = keys.org(organizationId).pk;
    return [...this.items.values()].filter((i) => i.pk === pk && String(i.sk).startsWith('CLIENT#')).map(copy);
  }

  async putOnce(item: ClientItem): Promise<'written' | 'existed'> {
    await this.faults.enter('putOnce');
    if (this.items.has(id(item))) return 'existed';
    this.items.set(id(item), copy(item));
    return 'written';
  }

  async mergeOnce(organizationId: string, clientId: string, merge: MergedSubmission): Promise<MergeResult> {
    await this.faults.enter('mergeOnce');
    const key = id(keys.client(organizationId, clientId));
    const current = this.items.get(key);
    if (!current) return 'gone';
    const listed = Array.isArray(current.submissions) ? current.submissions : [];
    if (listed.length >= merge.maxListed) return 'full';
    const next: Item = {
      ...copy(current), updated_at: merge.at, submission_count: Number(current.submission_count ?? 1) + 1,
      submissions: [...copy(listed), copy(merge.submission)], notification: copy(merge.notification),
    };
    for (const [field, value] of Object.entries(merge.fill)) if (value !== undefined && next[field] === undefined) next[field] = copy(value);
    if (Buffer.byteLength(JSON.stringify(next)) > MAX_ITEM_BYTES) return 'full';
    this.items.set(key, next);
    return 'merged';
  }

  async findEarlier(organizationId: string, tries: { via: 'email' | 'phone'; matchKey: string }[]) {
    for (const { via, matchKey } of tries) {
      await this.faults.enter('findEarlier');
      const [found] = [...this.items.values()].filter((i) => i.matchKey === matchKey).sort((a, b) => String(b.sk).localeCompare(String(a.sk)));
      if (found?.pk === keys.org(organizationId).pk && String(found.sk).startsWith('CLIENT#')) return { id: String(found.sk).slice('CLIENT#'.length), via };
    }
    return undefined;
  }

  async clientExists(organizationId: string, clientId: string): Promise<boolean> {
    await this.faults.enter('clientExists');
    return this.items.has(id(keys.client(organizationId, clientId)));
  }

  async getClient(organizationId: string, clientId: string, options: { fields?: readonly string[] } = {}) {
    await this.faults.enter('getClient');
    const item = this.items.get(id(keys.client(organizationId, clientId)));
    if (!item) return undefined;
    return copy(options.fields ? Object.fromEntries(options.fields.filter((f) => f in item).map((f) => [f, item[f]])) : item);
  }

  async createClient(item: ClientItem): Promise<boolean> {
    await this.faults.enter('createClient');
    if (this.items.has(id(item))) return false;
    this.items.set(id(item), copy(item));
    return true;
  }

  async updateClient(organizationId: string, clientId: string, { set, remove = [] }: { set: Item; remove?: string[] }) {
    await this.faults.enter('updateClient');
    const key = id(keys.client(organizationId, clientId));
    const current = this.items.get(key);
    if (!current) return undefined;
    const next = { ...current, ...copy(Object.fromEntries(Object.entries(set).filter(([, v]) => v !== undefined))) };
    for (const field of remove) delete next[field];
    this.items.set(key, next);
    return copy(next);
  }

  async deleteClient(organizationId: string, clientId: string) {
    await this.faults.enter('deleteClient');
    const key = id(keys.client(organizationId, clientId));
    const current = this.items.get(key);
    this.items.delete(key);
    return current && copy(current);
  }

  /** The organization's items between two sort keys, by ascending sort key (a Query's key condition). */
  private between(organizationId: string, [low, high]: [string, string]): Item[] {
    const pk = keys.org(organizationId).pk;
    return [...this.items.values()].filter((i) => i.pk === pk && String(i.sk) >= low && String(i.sk) <= high).sort((a, b) => (String(a.sk) < String(b.sk) ? -1 : 1));
  }

  async newestClients(organizationId: string, between: [string, string], { select, limit, pageSize, maxPages }: { select: ClientSelection; limit: number; pageSize: number; maxPages: number }): Promise<ClientsPage> {
    await this.faults.enter('newestClients');
    const evaluated = this.between(organizationId, between).reverse();
    const items: Item[] = [];
    let at = 0;
    for (let page = 0; page < maxPages && items.length < limit; page++) {
      const read = evaluated.slice(at, at + pageSize);
      at += read.length;
      items.push(...read.filter(SELECTS[select]).map((i) => project(i, select)));
      if (read.length < pageSize) return { items, complete: true };
    }
    return { items, complete: false, reached: String(evaluated[at - 1].sk) };
  }

  async clientsBetween(organizationId: string, between: [string, string], select: ClientSelection): Promise<Item[]> {
    await this.faults.enter('clientsBetween');
    return this.between(organizationId, between).filter(SELECTS[select]).map((i) => project(i, select));
  }
}
