/**
 * The retry schedule decides the attempts, end to end (docs/webhooks.md "Answering: retries and
 * failures"): a local stack of its own whose retryScheduleSeconds has 8 delays delivers to a real
 * loopback receiver that keeps failing. The delivery makes 9 attempts (one more than the delays),
 * each after its delay (the 8th delay, 2 s, past where a constant of 5 attempts stopped), then is
 * failed, its message in the dead-letter queue, and a redrive of the queue delivers it.
 */
import { describe, it, expect, afterAll } from '@jest/globals';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createOrganization } from '../../../functions/core/tenancy/organizations.js';
import { addEndpoint, updateEndpoint } from '../../../functions/core/delivery/endpoints.js';
import { findDelivery, redeliverDeadLetters } from '../../../functions/core/delivery/redeliver.js';
import { sendTestEvent } from '../../../functions/core/events/test-event.js';
import { testSettings } from '../global-setup.js';
import { eventually } from '../support/stack.js';
import { RestartableStack } from '../support/restartable-stack.js';
import { Receiver } from '../support/receiver.js';

/** 8 delays: the last one longer, so its use shows in the arrival times. */
const SCHEDULE = [1, 1, 1, 1, 1, 1, 1, 2];
const dir = mkdtempSync(path.join(tmpdir(), 'crm-schedule-'));
// The circuit would park the failing endpoint's deliveries after 5 failures (no attempt used, only slower): kept out of the way.
const stack = new RestartableStack(dir, { ...testSettings, retryScheduleSeconds: SCHEDULE, circuitFailureThreshold: 100 });
const receiver = new Receiver();

afterAll(async () => {
  await stack.stop();
  await receiver.stop();
  rmSync(dir, { recursive: true, force: true });
});

describe('a retry schedule of 8 delays', () => {
  it('gives a failing delivery 9 attempts, one after each delay, then fails it into the dead-letter queue, from where it is re-driven', async () => {
    await receiver.start();
    const { deps } = await stack.start();
    const org = await createOrganization(deps, { name: 'Schedule Co' });
    const { endpoint, secret } = await addEndpoint(deps, org.id, { url: 'http://127.0.0.1:9/x', events: 'all' });
    // Fails 9 times, then answers 204 (the re-driven attempt).
    const failures = Array.from({ length: SCHEDULE.length + 1 }, () => ({ status: 500, body: 'still broken' }));
    await updateEndpoint(deps, org.id, endpoint.id, { url: receiver.script('/schedule', secret, ...failures, { status: 204 }) });
    const { deliveryIds: [deliveryId] } = await sendTestEvent(deps, org.id, endpoint.id);

    const failed = await eventually(async () => {
      const record = await findDelivery(deps, deliveryId);
      return record?.status === 'failed' ? record : undefined;
    }, { what: 'the delivery to fail', timeoutMs: 60_000, intervalMs: 200 });
    expect(failed.attempts).toHaveLength(9);
    expect(failed.reason).toBe('no success after 9 attempts');
    const received = receiver.on('/schedule');
    expect(received).toHaveLength(9);
    expect(received.every((r) => !r.verifyError)).toBe(true);
    expect(new Set(received.map((r) => r.headers['webhook-id'])).size).toBe(1);
    // Each attempt waits at least its delay (jitter 0) after the one before: every delay was used.
    const gaps = received.slice(1).map((r, i) => r.at - received[i].at);
    gaps.forEach((gap, i) => expect(gap).toBeGreaterThanOrEqual(SCHEDULE[i] * 1000 - 50));

    // Its message is in the dead-letter queue; re-driving the queue attempts it once more (a fresh round), and it is delivered.
    const moved = await redeliverDeadLetters(deps, { organizationId: org.id });
    expect(moved.moved).toBe(1);
    await eventually(async () => (await findDelivery(deps, deliveryId))?.status === 'delivered', { what: 'the re-driven delivery', timeoutMs: 30_000, intervalMs: 200 });
    expect(receiver.on('/schedule')).toHaveLength(10);
  }, 120_000);
});
