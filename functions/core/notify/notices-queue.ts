/**
 * The notices queue's one producer (docs/notifications.md): a notice for the mailer to send to each
 * confirmed recipient who picked its kind, and a new recipient's confirmation e-mail. Producers call
 * enqueueNotice and go on: the mail server is never on their path, so a slow or failing one never
 * delays or fails a lead. A send that fails throws (the SDK has retried it): the producer decides
 * whether its own work fails with it.
 */
import { SendMessageBatchCommand, SendMessageCommand } from '@aws-sdk/client-sqs';
import { inSqsBatches, sqsMessageBody } from '../platform/batches.js';
import type { Deps } from '../platform/deps.js';
import type { NoticeMessage } from './notice.js';

/** A new address's confirmation e-mail: sent to that address alone, while it is still pending for this addition. Not a pickable notice. */
export interface ConfirmationMessage {
  organizationId: string;
  kind: 'recipient.confirm';
  key: string;
  at: string;
  data: { email: string; addedAt: number };
}

export type QueuedMessage = NoticeMessage | ConfirmationMessage;

async function send(deps: Deps, message: QueuedMessage): Promise<void> {
  await deps.sqs.send(new SendMessageCommand({ QueueUrl: deps.queues.noticesQueue, MessageBody: sqsMessageBody(message) }));
}

/** Queues a notice for the mailer (functions/mailer). */
export function enqueueNotice(deps: Deps, message: NoticeMessage): Promise<void> {
  return send(deps, message);
}

/** A notice's `notBefore` as a queue delay: whole seconds, at most SQS's 900. */
function delayOf(deps: Deps, message: NoticeMessage): { DelaySeconds?: number } {
  const at = message.notBefore ? Date.parse(message.notBefore) : NaN;
  if (Number.isNaN(at) || at <= deps.now()) return {};
  return { DelaySeconds: Math.min(900, Math.ceil((at - deps.now()) / 1000)) };
}

/** Whole-call errors that sending the same messages again never mends (the request itself is at fault). */
const PERMANENT_ERRORS = new Set(['InvalidMessageContents', 'BatchRequestTooLong', 'BatchEntryIdsNotDistinct', 'TooManyEntriesInBatchRequest', 'InvalidBatchEntryId', 'EmptyBatchRequest']);

/**
 * Notices the queue refused: `codes` its answers' codes (SendMessageBatch's Failed[], or the call's
 * error), `permanent` when some notice was refused for what it is (an entry with SenderFault, or
 * a whole-call error of PERMANENT_ERRORS): sent again, it is refused again. Anything else (a
 * throttle, an outage, an entry the queue failed on its side) may go on a later try.
 */
export class NoticesRefused extends Error {
  override name = 'NoticesRefused';
  constructor(readonly codes: string[], readonly permanent: boolean) {
    super(`could not queue ${codes.length} notices: ${[...new Set(codes)].join(', ')}`);
  }
}

/** Whether `error` (from enqueueNotices) refuses the notices for good. */
export const refusedForGood = (error: unknown): boolean =>
  error instanceof NoticesRefused ? error.permanent : PERMANENT_ERRORS.has((error as Error | undefined)?.name ?? '');

/**
 * Queues several notices in SendMessageBatch calls of up to 10 (a stream batch's lead notices are
 * one call per 10, not one per notice); every call is made, then a call's error is thrown (the
 * first), or else NoticesRefused naming the refused entries' codes.
 */
export async function enqueueNotices(deps: Deps, messages: NoticeMessage[]): Promise<void> {
  const bodies = messages.map(sqsMessageBody);
  const calls = await Promise.allSettled(inSqsBatches(bodies, (b) => Buffer.byteLength(b)).map(async (batch) => {
    const out = await deps.sqs.send(new SendMessageBatchCommand({
      QueueUrl: deps.queues.noticesQueue,
      Entries: batch.map((body, n) => ({ Id: String(n), MessageBody: body, ...delayOf(deps, JSON.parse(body) as NoticeMessage) })),
    }));
    return out.Failed ?? [];
  }));
  const thrown = calls.find((c): c is PromiseRejectedResult => c.status === 'rejected');
  if (thrown) throw thrown.reason;
  const failed = calls.flatMap((c) => (c.status === 'fulfilled' ? c.value : []));
  if (failed.length) throw new NoticesRefused(failed.map((f) => f.Code ?? 'Unknown'), failed.some((f) => f.SenderFault === true));
}

/** Queues the confirmation e-mail of an address added at `addedAt` (one per addition: its key names it). */
export function enqueueConfirmation(deps: Deps, input: { organizationId: string; email: string; addedAt: number }): Promise<void> {
  return send(deps, {
    organizationId: input.organizationId, kind: 'recipient.confirm', key: `confirm#${input.addedAt}`,
    at: new Date(deps.now()).toISOString(), data: { email: input.email, addedAt: input.addedAt },
  });
}

/** A queued message from its body; throws on a body that is not one (it would fail every try: the dead-letter queue keeps it). */
export function parseQueuedMessage(body: string): QueuedMessage {
  const message = JSON.parse(body) as Partial<QueuedMessage>;
  if (typeof message.organizationId !== 'string' || typeof message.kind !== 'string' || typeof message.key !== 'string' || typeof message.data !== 'object' || !message.data) {
    throw new Error('not a notices-queue message');
  }
  return message as QueuedMessage;
}
