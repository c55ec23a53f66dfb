/**
 * SQS fair queues, which fauxqs lacks (it serves a standard queue in arrival order and drops a
 * standard message's MessageGroupId). On AWS every standard queue is fair once its messages carry
 * a MessageGroupId: the delivery queues' messages name their organization (delivery/queue.ts), so
 * one organization's backlog does not hold the others' deliveries (docs/decisions.md "Fair
 * delivery queues"). The rule, as AWS's SQS developer guide ("How Amazon SQS fair queues work")
 * states it:
 *
 * - A tenant is a MessageGroupId; a message without one is a tenant of its own.
 * - A tenant is noisy when it holds more than 10% of the queue's in-flight messages and at least
 *   30 of them (concurrency share), or more than 10% of the consumers' recent processing time
 *   (processing-time share). AWS says its thresholds are approximate; here they are exact, and
 *   "recent" is the last RECENT_MS.
 * - A receive returns quiet tenants' messages whenever there are any; noisy tenants' messages only
 *   when no quiet one waits, first those of the noisy tenant with the fewest in-flight messages.
 *   Nothing is dropped or throttled. A tenant is noisy only while its shares are high: the shares
 *   are computed afresh on every receive.
 *
 * `fairOrder` is the rule on plain values (test/unit/local/sqs-fair.test.ts pins it);
 * `makeQueuesFair` applies it to the fauxqs store the local stack's SQS emulator runs on.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';

export const CONCURRENCY_SHARE = 0.1;
export const MIN_NOISY_IN_FLIGHT = 30;
export const PROCESSING_SHARE = 0.1;
/** The window of "recent" processing time. */
export const RECENT_MS = 60_000;

export interface TenantLoad {
  /** Messages of the tenant received and not yet deleted or visible again. */
  inFlight: number;
  /** Processing time (receive → delete, or → now while in flight) within the recent window, ms. */
  processingMs: number;
}

/** The tenants AWS's rule calls noisy, given every tenant's load. */
export function noisyTenants(load: ReadonlyMap<string, TenantLoad>): Set<string> {
  let inFlight = 0;
  let processing = 0;
  for (const l of load.values()) {
    inFlight += l.inFlight;
    processing += l.processingMs;
  }
  const noisy = new Set<string>();
  for (const [tenant, l] of load) {
    const byConcurrency = l.inFlight >= MIN_NOISY_IN_FLIGHT && l.inFlight > CONCURRENCY_SHARE * inFlight;
    const byProcessing = processing > 0 && l.processingMs > PROCESSING_SHARE * processing;
    if (byConcurrency || byProcessing) noisy.add(tenant);
  }
  return noisy;
}

/**
 * The ready messages in the order a receive takes them: quiet tenants' in arrival order, then the
 * noisy tenants', the one with the fewest in-flight messages first (arrival order within each).
 */
export function fairOrder<T>(ready: readonly T[], tenantOf: (m: T) => string, load: ReadonlyMap<string, TenantLoad>): T[] {
  const noisy = noisyTenants(load);
  if (noisy.size === 0) return [...ready];
  const quiet: T[] = [];
  const held = new Map<string, T[]>();
  for (const m of ready) {
    const tenant = tenantOf(m);
    if (!noisy.has(tenant)) quiet.push(m);
    else if (held.has(tenant)) held.get(tenant)!.push(m);
    else held.set(tenant, [m]);
  }
  const inFlight = (t: string) => load.get(t)?.inFlight ?? 0;
  const noisyInOrder = [...held.keys()].sort((a, b) => inFlight(a) - inFlight(b));
  return [...quiet, ...noisyInOrder.flatMap((t) => held.get(t)!)];
}

/** What this module uses of fauxqs's standard queue (fauxqs 1.9: dist/sqs/sqsStore.js). */
interface FauxqsMessage { messageId: string; body: string; messageGroupId?: string }
interface FauxqsQueue {
  attributes: Record<string, string>;
  messages: FauxqsMessage[];
  inflightMessages: Map<string, { message: FauxqsMessage }>;
  processTimers(): void;
  enqueue(message: FauxqsMessage): void;
  dequeue(max: number, visibility: number | undefined, dlq: unknown): { MessageId: string; ReceiptHandle: string }[];
  deleteMessage(handle: string): boolean;
  changeVisibility(handle: string, seconds: number): void;
}
export interface FauxqsStore { createQueue(...args: unknown[]): FauxqsQueue; getQueue(url: string): FauxqsQueue | undefined }

/** MessageGroupIds the store keeps: by message id, across queues (a dead-lettered message keeps its group). */
class Groups {
  readonly byMessage = new Map<string, string>();
  /** Per queue, body → groups of the sends under way (a standard send loses its group in fauxqs). */
  readonly sending = new WeakMap<FauxqsQueue, Map<string, string[]>>();

  expect(queue: FauxqsQueue, body: string, group: string): void {
    const pending = this.sending.get(queue) ?? new Map<string, string[]>();
    this.sending.set(queue, pending);
    pending.set(body, [...(pending.get(body) ?? []), group]);
  }

  /** Called as fauxqs enqueues a sent message: it takes the group its request named. */
  take(queue: FauxqsQueue, message: FauxqsMessage): void {
    const pending = this.sending.get(queue)?.get(message.body);
    const group = pending?.shift() ?? message.messageGroupId; // a message replayed from the journal carries its own (sqs-journal.ts)
    if (pending && pending.length === 0) this.sending.get(queue)!.delete(message.body);
    if (group !== undefined) this.byMessage.set(message.messageId, group);
  }

  /** A refused send enqueued nothing: forget what it named. */
  forget(queue: FauxqsQueue, body: string): void {
    const pending = this.sending.get(queue)?.get(body);
    pending?.pop();
    if (pending && pending.length === 0) this.sending.get(queue)!.delete(body);
  }
}

/** One fair standard queue: the tenant of each message, and the processing time of the recent window. */
class FairQueue {
  /** ReceiptHandle → the tenant and when it was received. */
  private readonly received = new Map<string, { tenant: string; at: number }>();
  private recent: { at: number; tenant: string; ms: number }[] = [];

  constructor(private readonly queue: FauxqsQueue, private readonly groups: Groups, private readonly now: () => number) {
    const enqueue = queue.enqueue.bind(queue);
    const dequeue = queue.dequeue.bind(queue);
    const remove = queue.deleteMessage.bind(queue);
    const change = queue.changeVisibility.bind(queue);
    queue.enqueue = (message) => {
      groups.take(queue, message);
      enqueue(message);
    };
    queue.dequeue = (max, visibility, dlq) => {
      queue.processTimers();
      queue.messages = fairOrder(queue.messages, (m) => this.tenantOf(m), this.load());
      const out = dequeue(max, visibility, dlq);
      for (const m of out) this.received.set(m.ReceiptHandle, { tenant: groups.byMessage.get(m.MessageId) ?? m.MessageId, at: this.now() });
      return out;
    };
    queue.deleteMessage = (handle) => {
      const message = queue.inflightMessages.get(handle)?.message;
      this.finish(handle);
      if (message) groups.byMessage.delete(message.messageId);
      return remove(handle);
    };
    queue.changeVisibility = (handle, seconds) => {
      if (seconds === 0) this.finish(handle);
      change(handle, seconds);
    };
  }

  private tenantOf(m: FauxqsMessage): string {
    return this.groups.byMessage.get(m.messageId) ?? m.messageId;
  }

  private finish(handle: string): void {
    const r = this.received.get(handle);
    if (!r) return;
    this.received.delete(handle);
    this.recent.push({ at: this.now(), tenant: r.tenant, ms: this.now() - r.at });
  }

  /** Each tenant's in-flight count and recent processing time, now. */
  private load(): Map<string, TenantLoad> {
    const now = this.now();
    this.recent = this.recent.filter((r) => now - r.at <= RECENT_MS);
    const load = new Map<string, TenantLoad>();
    const of = (t: string) => load.get(t) ?? (load.set(t, { inFlight: 0, processingMs: 0 }), load.get(t)!);
    for (const r of this.recent) of(r.tenant).processingMs += r.ms;
    for (const [handle, entry] of this.queue.inflightMessages) {
      const r = this.received.get(handle);
      const l = of(r?.tenant ?? this.tenantOf(entry.message));
      l.inFlight += 1;
      if (r) l.processingMs += Math.min(now - r.at, RECENT_MS);
    }
    // Receipts that ended without a delete (visibility ran out): forget them.
    for (const handle of this.received.keys()) if (!this.queue.inflightMessages.has(handle)) this.received.delete(handle);
    return load;
  }
}

type SendBody = { QueueUrl?: string; MessageBody?: string; MessageGroupId?: string; Entries?: { Id: string; MessageBody?: string; MessageGroupId?: string }[] };
const SENDS = new Set(['AmazonSQS.SendMessage', 'AmazonSQS.SendMessageBatch']);

/**
 * Makes every standard queue the store creates fair (FIFO queues keep their own group ordering),
 * and keeps the MessageGroupId of each message sent to one (returned: by MessageId), which fauxqs drops: a send's groups
 * are noted by body before fauxqs handles it, and taken as it enqueues each message.
 */
export function makeQueuesFair(app: FastifyInstance, store: FauxqsStore, now: () => number = Date.now): (messageId: string) => string | undefined {
  const groups = new Groups();
  const create = store.createQueue.bind(store);
  store.createQueue = (...args: unknown[]) => {
    const queue = create(...args);
    if (queue.attributes.FifoQueue !== 'true') new FairQueue(queue, groups, now);
    return queue;
  };
  const named = (request: FastifyRequest) => {
    if (!SENDS.has(String(request.headers['x-amz-target']))) return undefined;
    const body = request.body as SendBody;
    const queue = body.QueueUrl ? store.getQueue(body.QueueUrl) : undefined;
    if (!queue || queue.attributes.FifoQueue === 'true') return undefined;
    const entries = body.Entries ?? [body];
    return { queue, sends: entries.filter((e) => e.MessageGroupId && typeof e.MessageBody === 'string') as { MessageBody: string; MessageGroupId: string }[] };
  };
  app.addHook('preHandler', async (request: FastifyRequest) => {
    const sending = named(request);
    for (const e of sending?.sends ?? []) groups.expect(sending!.queue, e.MessageBody, e.MessageGroupId);
  });
  app.addHook('onResponse', async (request: FastifyRequest) => {
    const sending = named(request);
    // Whatever an enqueue did not take (a refused entry or request) is dropped.
    for (const e of sending?.sends ?? []) if (groups.sending.get(sending!.queue)?.has(e.MessageBody)) groups.forget(sending!.queue, e.MessageBody);
  });
  return (messageId) => groups.byMessage.get(messageId);
}
