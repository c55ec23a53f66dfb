/**
 * Every message the delivery queues' one producer sends names its organization as its
 * MessageGroupId: that is what makes SQS serve the queues fairly by organization
 * (docs/decisions.md "Fair under volume"). Captured at the SDK client, for each way a message goes out.
 */
import { describe, it, expect } from '@jest/globals';
import { SendMessageBatchCommand, SendMessageCommand } from '@aws-sdk/client-sqs';
import type { Deps } from '../../../functions/core/platform/deps.js';
import type { DeliveryMessage } from '../../../functions/core/platform/model.js';
import { deferDelivery, sendDeliveryMessages, sendToDeadLetters } from '../../../functions/core/delivery/queue.js';

function capturing(): { deps: Deps; sent: { queue: string; groups: (string | undefined)[] }[] } {
  const sent: { queue: string; groups: (string | undefined)[] }[] = [];
  const sqs = {
    send: async (command: unknown) => {
      if (command instanceof SendMessageBatchCommand) sent.push({ queue: command.input.QueueUrl!, groups: command.input.Entries!.map((e) => e.MessageGroupId) });
      else if (command instanceof SendMessageCommand) sent.push({ queue: command.input.QueueUrl!, groups: [command.input.MessageGroupId] });
      else throw new Error(`unexpected ${String(command)}`);
      return {};
    },
  };
  const deps = {
    sqs, now: () => 1_000_000, config: { queueDelayMaxSeconds: 900 },
    queues: { deliveryQueue: 'q-main', deliverySlowQueue: 'q-slow', deliveryDlq: 'q-dlq' },
  } as unknown as Deps;
  return { deps, sent };
}

const message = (org: string, n: number): DeliveryMessage => ({ deliveryId: `dlv_${org}_${n}`, organizationId: org, endpointId: 'ep', payload: { id: `evt_${n}` } as never });

describe('MessageGroupId on every delivery message', () => {
  it('sendDeliveryMessages: each entry of each batch, to every queue, names its own organization', async () => {
    const { deps, sent } = capturing();
    const messages = Array.from({ length: 23 }, (_, n) => message(n % 2 ? 'org_a' : 'org_b', n));
    await sendDeliveryMessages(deps, messages);
    await sendDeliveryMessages(deps, messages.slice(0, 3), { queue: 'deliverySlowQueue', delaySeconds: () => 30 });
    expect(sent.flatMap((s) => s.groups)).toEqual([...messages, ...messages.slice(0, 3)].map((m) => m.organizationId));
    expect(new Set(sent.map((s) => s.queue))).toEqual(new Set(['q-main', 'q-slow']));
  });

  it('a deferral re-sent delayed, and an exhausted delivery sent to the dead-letter queue, name it too', async () => {
    const { deps, sent } = capturing();
    expect(await deferDelivery(deps, message('org_c', 1), 1_000_000 + 60_000, { reason: 'circuit open', queue: 'deliverySlowQueue' })).toBe('queued');
    await sendToDeadLetters(deps, message('org_d', 2));
    expect(sent).toEqual([{ queue: 'q-slow', groups: ['org_c'] }, { queue: 'q-dlq', groups: ['org_d'] }]);
  });
});
