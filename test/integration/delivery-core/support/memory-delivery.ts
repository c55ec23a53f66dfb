/**
 * The delivery stage's port (functions/core/delivery/delivery-state.ts) in memory: a store of
 * delivery records and event items, and delivery queues with delays, visibility and receive
 * counts, both on the clock they are given. The same transitions (changeOf, holds, applyChange)
 * as the DynamoDB store; contract.test.ts holds the two to one behaviour.
 */
import { randomUUID } from 'node:crypto';
import { keys, type DeliveryMessage } from '../../../../functions/core/platform/model.js';
import { inBatches } from '../../../../functions/core/platform/batches.js';
import {
  applyChange, changeOf, holds, targetOf, type CreatedKey, type CreatedQuery, type DeliveryQueue, type DeliveryQueueName, type DeliveryStore, type DueKey, type Key, type StoredItem,
} from '../../../../functions/core/delivery/delivery-state.js';
import { MAX_QUEUE_DELAY_SECONDS } from '../../../../functions/core/delivery/sqs-delivery-queue.js';

/** DynamoDB's bounds: an item's size, a BatchWriteItem's requests. */
const MAX_ITEM_BYTES = 400 * 1024;
const BATCH_WRITE_MAX = 25;
const validation = (message: string) => Object.assign(new Error(message), { name: 'ValidationException' });
/** The item, if within DynamoDB's 400 KB (measured as its JSON, a little over DynamoDB's count); else a ValidationException. */
function fits(item: StoredItem): StoredItem {
  if (Buffer.byteLength(JSON.stringify(item)) > MAX_ITEM_BYTES) throw validation('Item size has exceeded the maximum allowed size');
  return item;
}
const id = (k: Key) => `${k.pk}\u0000${k.sk}`;
const copy = <T>(value: T): T => structuredClone(value);
const project = (item: StoredItem, projection?: string[]) =>
  (projection ? Object.fromEntries(projection.filter((p) => p in item).map((p) => [p, item[p]])) : item);

export class MemoryDeliveryStore implements DeliveryStore {
  readonly items = new Map<string, StoredItem>();
  /** Writes made, by kind (a test may count them). */
  readonly writes: string[] = [];

  constructor(private readonly now: () => number) {}

  async get(keyList: Key[], options: { projection?: string[] } = {}): Promise<StoredItem[]> {
    return [...new Set(keyList.map(id))].flatMap((k) => {
      const item = this.items.get(k);
      return item ? [copy(project(item, options.projection))] : [];
    });
  }

  async getOne(key: Key, options: { projection?: string[] } = {}): Promise<StoredItem | undefined> {
    return (await this.get([key], options))[0];
  }

  private deliveries(): StoredItem[] {
    return [...this.items.values()].filter((i) => String(i.sk).startsWith(keys.deliveryPrefix));
  }

  async deliveriesOf(organizationId: string, options: { projection?: string[] } = {}): Promise<StoredItem[]> {
    return this.deliveries().filter((i) => i.pk === keys.org(organizationId).pk).map((i) => copy(project(i, options.projection)));
  }

  /** The byCreated index: records with a `createdAt`, newest first (ties by key, descending), after `after`. */
  async newestDeliveries(organizationId: string, query: CreatedQuery): Promise<{ keys: CreatedKey[]; next?: CreatedKey }> {
    const order = (a: CreatedKey, b: CreatedKey) => (a.createdAt === b.createdAt ? (a.sk < b.sk ? 1 : a.sk > b.sk ? -1 : 0) : a.createdAt < b.createdAt ? 1 : -1);
    const all = [...this.items.values()]
      .filter((i) => i.pk === keys.org(organizationId).pk && typeof i.createdAt === 'string')
      .map((i) => ({ pk: String(i.pk), sk: String(i.sk), createdAt: String(i.createdAt) }))
      .filter((k) => (!query.since || k.createdAt >= query.since) && (!query.until || k.createdAt <= query.until))
      .sort(order);
    const from = query.after ? all.filter((k) => order(k, query.after!) > 0) : all;
    const page = from.slice(0, query.limit);
    // As DynamoDB: a page that reached its limit says where the next starts, even when nothing follows.
    return { keys: page, ...(page.length > 0 && page.length === query.limit ? { next: page.at(-1) } : {}) };
  }

  async keyOf(deliveryId: string): Promise<Key | undefined> {
    const item = this.deliveries().find((i) => i.gsi1pk === keys.deliveryIndex(deliveryId).gsi1pk);
    return item && { pk: String(item.pk), sk: String(item.sk) };
  }

  async dueIn(shard: string, horizon: number, cap: number): Promise<{ keys: DueKey[]; complete: boolean }> {
    const due = this.deliveries().filter((i) => i.duePk === shard && Number(i.dueAt) <= horizon)
      .sort((a, b) => Number(a.dueAt) - Number(b.dueAt))
      .map((i) => ({ pk: String(i.pk), sk: String(i.sk), dueAt: Number(i.dueAt) }));
    return { keys: due.slice(0, cap), complete: due.length <= cap };
  }

  async requeueable(): Promise<StoredItem[]> {
    return [...this.items.values()].filter((i) => (i.status === 'pending' && i.entity === 'delivery' && i.dueAt === undefined) || i.entity === 'event').map(copy);
  }

  /** BatchWriteItem puts, 25 a call as the DynamoDB store sends them, refused as DynamoDB refuses them: nothing of a refused call written. */
  async recorded(items: StoredItem[]): Promise<void> {
    for (const batch of inBatches(items, BATCH_WRITE_MAX)) {
      if (new Set(batch.map((i) => id(i as Key))).size < batch.length) throw validation('Provided list of item keys contains duplicates');
      batch.forEach(fits);
    }
    for (const item of items) {
      this.items.set(id(item as Key), copy(item));
      this.writes.push('recorded');
    }
  }

  async transition(ref: { organizationId: string; deliveryId: string }, t: Parameters<DeliveryStore['transition']>[1]): Promise<boolean> {
    const change = changeOf(ref, t, this.now());
    const key = id(targetOf(ref, t));
    // None stored: the first outcome writes the record whole (Change.create), as the DynamoDB update creates it.
    const item = this.items.get(key) ?? (change.create && copy(change.create));
    if (!holds(change.leaves, item)) return false;
    this.items.set(key, fits(applyChange(item!, change)));
    this.writes.push(t.to);
    return true;
  }
}

/** A message in a memory queue, as SQS keeps it. */
export interface QueuedMessage { messageId: string; receiptHandle: string; body: string; visibleAt: number; receiveCount: number; groupId: string }

export class MemoryDeliveryQueue implements DeliveryQueue {
  readonly queues: Record<DeliveryQueueName, QueuedMessage[]> = { deliveryQueue: [], deliverySlowQueue: [], deliveryDlq: [] };

  constructor(private readonly now: () => number) {}

  async send(queue: DeliveryQueueName, entries: { message: DeliveryMessage; delaySeconds: number }[]): Promise<void> {
    for (const { message, delaySeconds } of entries) {
      const delay = Math.min(MAX_QUEUE_DELAY_SECONDS, Math.max(0, Math.ceil(delaySeconds)));
      this.queues[queue].push({
        messageId: randomUUID(), receiptHandle: '', body: JSON.stringify(message), visibleAt: this.now() + delay * 1000, receiveCount: 0, groupId: message.organizationId,
      });
    }
  }

  /** Up to `max` visible messages, hidden for `visibilityMs` and their receive counted. */
  receive(queue: DeliveryQueueName, max: number, visibilityMs: number): QueuedMessage[] {
    const now = this.now();
    const taken = this.queues[queue].filter((m) => m.visibleAt <= now).slice(0, max);
    for (const m of taken) {
      m.visibleAt = now + visibilityMs;
      m.receiveCount++;
      m.receiptHandle = randomUUID();
    }
    return taken.map((m) => ({ ...m }));
  }

  delete(queue: DeliveryQueueName, receiptHandle: string): void {
    this.queues[queue] = this.queues[queue].filter((m) => m.receiptHandle !== receiptHandle);
  }

  /** SQS's redrive policy: a message received past maxReceiveCount moves to the dead-letter queue, same id and body. */
  moveToDeadLetters(queue: DeliveryQueueName, receiptHandle: string): void {
    const message = this.queues[queue].find((m) => m.receiptHandle === receiptHandle);
    if (!message) return;
    this.delete(queue, receiptHandle);
    this.queues.deliveryDlq.push({ ...message, visibleAt: this.now(), receiveCount: 0 });
  }

  /** When the next message of these queues becomes visible (Infinity: none queued). */
  nextVisibleAt(names: DeliveryQueueName[]): number {
    return Math.min(...names.flatMap((q) => this.queues[q].map((m) => m.visibleAt)));
  }

  /** The local stack's SQS emulator keeps nothing across a restart: neither does this. */
  clear(): void {
    for (const q of Object.keys(this.queues) as DeliveryQueueName[]) this.queues[q] = [];
  }

  messages(queue: DeliveryQueueName): DeliveryMessage[] {
    return this.queues[queue].map((m) => JSON.parse(m.body) as DeliveryMessage);
  }
}
