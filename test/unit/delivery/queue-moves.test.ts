/**
 * SQS's own move to the dead-letter queue (the redrive policy, after 10 receives) is not in that
 * queue's NumberOfMessagesSent: the delivery function counts the moves it sees as
 * `DeliveriesMovedByQueue` (functions/core/delivery/deliver.ts; alarm `DeliveryQueueDeadLetters`,
 * docs/deploy.md). A body that is no delivery message breaks off before any table or queue call.
 */
import { describe, it, expect, jest, afterEach } from '@jest/globals';
import type { Deps } from '../../../functions/core/platform/deps.js';
import { deliverBatch } from '../../../functions/core/delivery/deliver.js';
import { queues } from '../../../lib/topology.js';
import { logger, metrics } from '../../../functions/core/platform/observability.js';

const noDeps = { now: () => Date.now() } as Deps; // any table or queue access would throw
const maxReceives = queues.deliveryQueue.deadLetter.maxReceiveCount;

afterEach(() => {
  jest.restoreAllMocks();
});

describe('a delivery message whose receives keep breaking off', () => {
  it(`counts DeliveriesMovedByQueue on its ${maxReceives}th receive (the queue moves it next), never before`, async () => {
    const addMetric = jest.spyOn(metrics, 'addMetric');
    jest.spyOn(logger, 'error').mockImplementation(() => undefined);
    jest.spyOn(logger, 'warn').mockImplementation(() => undefined);
    const broken = (receiveCount: number) => ({ messageId: `m${receiveCount}`, receiptHandle: 'r', body: 'not json', receiveCount });
    const outcomes = await deliverBatch(noDeps, [broken(1), broken(maxReceives - 1), broken(maxReceives)]);
    expect(outcomes.map((o) => o.kind)).toEqual(['error', 'error', 'error']);
    expect(addMetric.mock.calls.filter(([name]) => name === 'DeliveriesMovedByQueue')).toEqual([['DeliveriesMovedByQueue', 'Count', 1]]);
  });
});
