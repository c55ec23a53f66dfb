/**
 * Attempt numbers come from the delivery record, not from SQS's receive count (docs/webhooks.md
 * "Attempts"), and the due index's sharding.
 */
import { describe, it, expect } from '@jest/globals';
import { attemptNumberOf, freshMessage, type AttemptCount } from '../../../functions/core/delivery/queue.js';
import { DUE_SHARDS, dueKeys, dueShards } from '../../../functions/core/delivery/store.js';
import type { DeliveryMessage } from '../../../functions/core/platform/model.js';

const message = (round?: number): DeliveryMessage => ({
  deliveryId: 'dlv_x', organizationId: 'org_x', endpointId: 'ep_x', payload: { id: 'evt_x' } as never, ...(round === undefined ? {} : { round }),
});
const t = (s: number) => Date.UTC(2026, 0, 1, 0, 0, s);
const record = (attemptsAt: number[], extra: Partial<AttemptCount> = {}): AttemptCount => ({
  createdAt: new Date(t(0)).toISOString(),
  attempts: attemptsAt.map((at, n) => ({ attempt: n + 1, at: new Date(at).toISOString(), latencyMs: 1 })),
  ...extra,
});

describe('attempt numbers', () => {
  it('are 1 + the attempts the record holds in the message’s round: receives that made no attempt count for nothing', () => {
    expect(attemptNumberOf(message(t(0)), record([]))).toBe(1);
    expect(attemptNumberOf(message(t(0)), record([t(1), t(2), t(3)]))).toBe(4);
  });

  it('count only the attempts since the round began (a redelivery, or a dead-letter copy moved back)', () => {
    expect(attemptNumberOf(message(t(10)), record([t(1), t(2), t(3), t(4), t(5), t(11)]))).toBe(2);
  });

  it('without a round in the message, count from the record’s last redelivery, else its creation', () => {
    expect(attemptNumberOf(message(), record([t(1), t(2)]))).toBe(3);
    expect(attemptNumberOf(message(), record([t(1), t(2), t(6)], { redrivenAt: new Date(t(5)).toISOString() }))).toBe(2);
  });

  it('start a new round for a message sent fresh (redeliveries, the dead-letter queue)', () => {
    const fresh = freshMessage(message(t(0)), t(20));
    expect(fresh.round).toBe(t(20));
    expect(attemptNumberOf(fresh, record([t(1), t(2), t(3), t(4), t(5)]))).toBe(1);
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
