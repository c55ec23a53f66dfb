/**
 * The attempt count a delivery message carries (DESIGN §16: a retry is a new message, so SQS's
 * receive count restarts) and the due index's sharding.
 */
import { describe, it, expect } from '@jest/globals';
import { attemptNumberOf, freshMessage } from '../../../functions/core/delivery/queue.js';
import { DUE_SHARDS, dueKeys, dueShards } from '../../../functions/core/delivery/store.js';
import type { DeliveryMessage } from '../../../functions/core/platform/model.js';

const message = (priorAttempts?: number): DeliveryMessage => ({
  deliveryId: 'dlv_x', organizationId: 'org_x', endpointId: 'ep_x', payload: { id: 'evt_x' } as never, ...(priorAttempts === undefined ? {} : { priorAttempts }),
});

describe('attempt numbers', () => {
  it('are the attempts before the message plus its receives, so a crashed receive still counts', () => {
    expect(attemptNumberOf(message(), 1)).toBe(1);
    expect(attemptNumberOf(message(3), 1)).toBe(4);
    expect(attemptNumberOf(message(3), 2)).toBe(5); // the first receive of this retry crashed
    expect(attemptNumberOf(message(0), 0)).toBe(1); // a missing receive count is a first receive
  });

  it('start afresh for a message sent fresh (re-drives, the dead-letter queue)', () => {
    const fresh = freshMessage(message(4));
    expect(fresh).not.toHaveProperty('priorAttempts');
    expect(attemptNumberOf(fresh, 1)).toBe(1);
  });
});

describe('the due index', () => {
  it('spreads deliveries over its partitions, each delivery always on the same one, sorted by due time in ms', () => {
    const shards = new Set(Array.from({ length: 400 }, (_, i) => dueKeys(`dlv_${i}`, 0).duePk));
    expect([...shards].sort()).toEqual([...dueShards()].sort());
    expect(shards.size).toBe(DUE_SHARDS);
    expect(dueKeys('dlv_a', 1_000.4)).toEqual({ duePk: dueKeys('dlv_a', 5).duePk, dueAt: 1_000 });
  });
});
