/**
 * Makes the local SQS (fauxqs, in memory) durable the way SQS is (docs/decisions.md "A durable local
 * SQS"): a message sent and not yet deleted survives a killed stack. Each message a queue takes is
 * appended to a journal under the stack's folder before fauxqs answers the send, each delete appends
 * a tombstone, each purge (PurgeQueue, DeleteQueue) one for the whole queue; at start the journal is compacted to the messages still there, and each queue takes
 * its own back as it is created: same MessageId, body, MessageGroupId and delay, visible at once
 * (as after their visibility time-out). A message moved to a dead-letter queue is journaled there.
 *
 * Not kept: receive counts after the last move (a replayed message starts again at 0; attempts are
 * counted from the delivery record anyway) and retention (14 days). No fsync: a killed process
 * loses nothing, a crashed machine may lose the last writes.
 */
import { closeSync, existsSync, openSync, readdirSync, readFileSync, renameSync, writeFileSync, writeSync } from 'node:fs';

/** What this module uses of fauxqs's message and queue (fauxqs 1.9: dist/sqs/sqsStore.js). */
export interface JournaledMessage { messageId: string; messageGroupId?: string; [field: string]: unknown }
interface Queue {
  name: string;
  inflightMessages: Map<string, { message: JournaledMessage }>;
  enqueue(message: JournaledMessage): void;
  deleteMessage(handle: string): boolean;
  purge(): void;
}
interface Store { createQueue(...args: unknown[]): Queue; deleteQueue(url: string): boolean; getQueue(url: string): Queue | undefined }

type Line = { put: string; message: JournaledMessage } | { deleted: string } | { purged: string };

/** The journal is compacted while running once it holds this many lines, most of them spent. */
const COMPACT_AFTER_LINES = 50_000;

export class SqsJournal {
  /** MessageId → its queue and message, for what is still there. */
  private readonly live = new Map<string, { put: string; message: JournaledMessage }>();
  private lines = 0;
  private fd: number;

  constructor(private readonly file: string) {
    if (existsSync(file)) {
      for (const text of readFileSync(file, 'utf8').split('\n')) {
        if (text === '') continue;
        let line: Line;
        try {
          line = JSON.parse(text) as Line;
        } catch {
          continue; // a line cut short by the kill: its send was never answered
        }
        if ('put' in line) this.live.set(line.message.messageId, line);
        else if ('purged' in line) this.forget(line.purged);
        else this.live.delete(line.deleted);
      }
    }
    this.fd = this.compact();
  }

  /** The messages still in `queue` when the journal was opened (and since). */
  messagesOf(queue: string): JournaledMessage[] {
    return [...this.live.values()].filter((l) => l.put === queue).map((l) => l.message);
  }

  put(queue: string, message: JournaledMessage): void {
    const line = { put: queue, message };
    this.live.set(message.messageId, line);
    this.append(line);
  }

  deleted(messageId: string): void {
    if (!this.live.delete(messageId)) return;
    this.append({ deleted: messageId });
  }

  /** Every message of `queue` is gone (purged, or the queue deleted). */
  purged(queue: string): void {
    if (this.forget(queue)) this.append({ purged: queue });
  }

  close(): void {
    closeSync(this.fd);
  }

  private append(line: Line): void {
    writeSync(this.fd, JSON.stringify(line) + '\n');
    this.lines += 1;
    if (this.lines > COMPACT_AFTER_LINES && this.lines > 4 * this.live.size) {
      closeSync(this.fd);
      this.fd = this.compact();
    }
  }

  private forget(queue: string): boolean {
    const gone = [...this.live.values()].filter((l) => l.put === queue);
    for (const line of gone) this.live.delete(line.message.messageId);
    return gone.length > 0;
  }

  /** Rewrites the journal as the live messages alone (tmp + rename) and opens it for appending. */
  private compact(): number {
    const tmp = `${this.file}.tmp`;
    writeFileSync(tmp, [...this.live.values()].map((l) => JSON.stringify(l) + '\n').join(''), { mode: 0o600 });
    renameSync(tmp, this.file);
    this.lines = this.live.size;
    return openSync(this.file, 'a', 0o600);
  }
}

/**
 * A stack folder from before the journal: DynamoDB data but no journal. Its pending deliveries'
 * messages were in memory and are gone, so the stack queues them again once, at that start
 * (resume-deliveries.ts); from then on the journal keeps them.
 */
export function journalMissingOverData(journalFile: string, dynamodbDir: string): boolean {
  return !existsSync(journalFile) && existsSync(dynamodbDir) && readdirSync(dynamodbDir).length > 0;
}

/**
 * Journals every queue the store creates from now on, and gives each its journaled messages back
 * as it is created. `groupOf`: the MessageGroupId the fair-queue layer kept for a message (sqs-fair.ts).
 */
export function makeQueuesDurable(store: Store, journal: SqsJournal, groupOf: (messageId: string) => string | undefined): void {
  const create = store.createQueue.bind(store);
  const drop = store.deleteQueue.bind(store);
  store.deleteQueue = (url) => {
    const name = store.getQueue(url)?.name;
    const dropped = drop(url);
    if (dropped && name) journal.purged(name);
    return dropped;
  };
  store.createQueue = (...args: unknown[]) => {
    const queue = create(...args);
    const enqueue = queue.enqueue.bind(queue);
    const remove = queue.deleteMessage.bind(queue);
    const purge = queue.purge.bind(queue);
    for (const message of journal.messagesOf(queue.name)) enqueue(message);
    queue.enqueue = (message) => {
      enqueue(message);
      const group = groupOf(message.messageId) ?? message.messageGroupId;
      journal.put(queue.name, { ...message, ...(group === undefined ? {} : { messageGroupId: group }) });
    };
    queue.deleteMessage = (handle) => {
      const messageId = queue.inflightMessages.get(handle)?.message.messageId;
      const removed = remove(handle);
      if (removed && messageId) journal.deleted(messageId);
      return removed;
    };
    queue.purge = () => {
      purge();
      journal.purged(queue.name);
    };
    return queue;
  };
}
