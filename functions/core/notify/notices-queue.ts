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

/**
 * Queues several notices in SendMessageBatch calls of up to 10 (a stream batch's lead notices are
 * one call per 10, not one per notice); throws if any was refused, naming how many.
 */
export async function enqueueNotices(deps: Deps, messages: NoticeMessage[]): Promise<void> {
  const bodies = messages.map(sqsMessageBody);
  await Promise.all(inSqsBatches(bodies, (b) => Buffer.byteLength(b)).map(async (batch) => {
    const out = await deps.sqs.send(new SendMessageBatchCommand({
      QueueUrl: deps.queues.noticesQueue,
      Entries: batch.map((body, n) => ({ Id: String(n), MessageBody: body, ...delayOf(deps, JSON.parse(body) as NoticeMessage) })),
    }));
    if (out.Failed?.length) throw new Error(`could not queue ${out.Failed.length} notices: ${out.Failed.map((f) => f.Code).join(', ')}`);
  }));
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
