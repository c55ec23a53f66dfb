/**
 * The delivery stage run in the test's process on the in-memory port (memory-delivery.ts) and a
 * simulated clock: the same domain code the delivery function, the due sweeper and the local
 * stack's start run (deliverBatch, sweepDueDeliveries, requeuePendingDeliveries), driven in rounds
 * as the queue pollers drive it. Endpoints and their circuits stay in the suite's DynamoDB Local
 * (they are not the delivery record's); receivers are real HTTP servers on 127.0.0.1. The clock is
 * the real one plus a skew that jumps whenever nothing is due, so waits of seconds or hours cost
 * nothing, while HTTP time-outs stay real.
 */
import type { Deps } from '../../../../functions/core/platform/deps.js';
import type { Config } from '../../../../functions/core/platform/config.js';
import type { DeliveryMessage, DeliveryRecord, EventPayload, WebhookEndpoint } from '../../../../functions/core/platform/model.js';
import { inBatches } from '../../../../functions/core/platform/batches.js';
import { withDeliveryPorts } from '../../../../functions/core/delivery/delivery-port.js';
import { deliverBatch, staysQueued } from '../../../../functions/core/delivery/deliver.js';
import { sweepDueDeliveries } from '../../../../functions/core/delivery/sweep.js';
import { queueDeliveries, recordDeliveries } from '../../../../functions/core/delivery/queue.js';
import { listDeliveries } from '../../../../functions/core/delivery/redeliver.js';
import type { DeliveryQueueName } from '../../../../functions/core/delivery/delivery-state.js';
import { requeuePendingDeliveries } from '../../../../lib/local/requeue-deliveries.js';
import { queues } from '../../../../lib/topology.js';
import { ContainerMemory, withContainerMemory } from '../../../../functions/core/delivery/container-memory.js';
import { MemoryDeliveryQueue, MemoryDeliveryStore } from './memory-delivery.js';

const LANES: [DeliveryQueueName, 'main' | 'slow'][] = [['deliveryQueue', 'main'], ['deliverySlowQueue', 'slow']];
/** Messages one round takes per lane: the local pollers' concurrency (batches of 10). */
const ROUND = 40;

let events = 0;
/** A client.created event of `organizationId`, as fan-out builds them. */
export function clientCreated(organizationId: string, name = 'Lead'): EventPayload {
  const n = ++events;
  return {
    id: `evt_core_${Date.now().toString(36)}_${n}`, type: 'client.created', api_version: '2026-01-01', timestamp: new Date().toISOString(),
    organization_id: organizationId, data: { object: { id: `cli_core_${n}`, first_name: name } },
  };
}

/** `target` whose writing methods fail once `alive()` is false: what a killed process can no longer do. */
function guarded<T extends object>(target: T, alive: () => boolean, writes: string[]): T {
  return new Proxy(target, {
    get(t, name, receiver) {
      const value = Reflect.get(t, name, receiver) as unknown;
      if (typeof value !== 'function' || !writes.includes(String(name))) return value;
      return (...args: unknown[]) => (alive() ? (value as (...a: unknown[]) => unknown).apply(t, args) : Promise.reject(new Error('killed: the stack stopped')));
    },
  });
}

export class DeliveryCore {
  private skew = 0;
  /** Bumped by a restart: work started before it can no longer write or send (a killed process). */
  private generation = 0;
  readonly now = () => Date.now() + this.skew;
  readonly store = new MemoryDeliveryStore(this.now);
  readonly queue = new MemoryDeliveryQueue(this.now);
  /** Replaced at a restart: a fresh process remembers nothing (ContainerMemory). */
  deps: Deps;
  private nextSweep = 0;

  constructor(base: Deps, settings: Partial<Config> = {}) {
    this.deps = withContainerMemory(withDeliveryPorts({ ...base, config: { ...base.config, ...settings }, now: this.now }, { store: this.store, queue: this.queue }), new ContainerMemory());
  }

  /** Moves the clock forward. */
  advance(ms: number): void {
    this.skew += Math.max(0, ms);
  }

  /** Records and queues the deliveries of these events to this endpoint, as fan-out does. */
  async publish(endpoint: WebhookEndpoint, ...payloads: EventPayload[]): Promise<DeliveryMessage[]> {
    const recorded = await recordDeliveries(this.deps, payloads.map((event) => ({ event, endpoint })));
    await queueDeliveries(this.deps, recorded);
    return recorded.messages;
  }

  /**
   * One round: the due sweeper when its period has come, then each lane's visible messages (up to
   * the pollers' concurrency, in batches of 10) delivered at once; consumed messages are deleted,
   * the others become visible again after the queue's visibility time-out, and one received past
   * maxReceiveCount goes to the dead-letter queue (SQS's redrive policy). Returns the messages taken.
   */
  async round(): Promise<number> {
    if (this.now() >= this.nextSweep) {
      await sweepDueDeliveries(this.deps);
      this.nextSweep = this.now() + this.deps.config.dueSweepLookaheadSeconds * 1000;
    }
    const generation = this.generation;
    const alive = () => generation === this.generation;
    // A killed process writes nothing more to DynamoDB either (the endpoints' circuits).
    const doc = guarded(this.deps.doc, alive, ['send']);
    const deps = withDeliveryPorts({ ...this.deps, doc }, {
      store: guarded(this.store, alive, ['recorded', 'transition']), queue: guarded(this.queue, alive, ['send']),
    });
    const work = LANES.flatMap(([name, lane]) => inBatches(this.receive(name), 10).map((batch) => ({ name, lane, batch })));
    await Promise.all(work.map(async ({ name, lane, batch }) => {
      const outcomes = await deliverBatch(deps, batch.map((m) => ({ ...m, lane })));
      if (!alive()) return;
      for (const outcome of outcomes) if (!staysQueued(outcome)) this.queue.delete(name, batch.find((m) => m.messageId === outcome.messageId)!.receiptHandle);
    }));
    return work.reduce((n, w) => n + w.batch.length, 0);
  }

  private receive(name: DeliveryQueueName) {
    const spec = queues[name as 'deliveryQueue'];
    const taken = this.queue.receive(name, ROUND, spec.visibilityTimeoutSeconds * 1000);
    const dead = taken.filter((m) => m.receiveCount > (spec.deadLetter?.maxReceiveCount ?? Infinity));
    for (const m of dead) this.queue.moveToDeadLetters(name, m.receiptHandle);
    return taken.filter((m) => !dead.includes(m));
  }

  /** Rounds until `check` returns a value, the clock jumping over idle time; fails past `withinMs` of simulated time. */
  async until<T>(check: () => Promise<T | undefined | false> | T | undefined | false, { what = 'condition', withinMs = 24 * 3_600_000 } = {}): Promise<T> {
    const deadline = this.now() + withinMs;
    for (let rounds = 0; ; rounds++) {
      const value = await check();
      if (value !== undefined && value !== false) return value as T;
      if (this.now() > deadline || rounds > 5_000) throw new Error(`${what}: not reached within ${withinMs} ms of simulated time (${rounds} rounds)`);
      if ((await this.round()) > 0) continue;
      const next = Math.min(this.queue.nextVisibleAt(LANES.map(([name]) => name)), this.nextSweep);
      this.advance(next - this.now());
    }
  }

  /**
   * The local stack's restart, at any moment (a round may be under way: what it has sent stays
   * sent, but it records, queues and writes nothing more, as a killed process): the SQS emulator's
   * messages are gone, and so is what the process held (its cached endpoints, the failures it saw,
   * its per-endpoint slots and rate-limit hints), so a circuit is read from the endpoint item again; pending deliveries
   * are queued again from their records.
   */
  async restart(): Promise<number> {
    this.generation++;
    this.deps = withContainerMemory(this.deps, new ContainerMemory());
    this.queue.clear();
    this.nextSweep = 0;
    return requeuePendingDeliveries(this.deps);
  }

  /** An organization's deliveries, as the CLI and the settings API read them. */
  deliveries(organizationId: string): Promise<DeliveryRecord[]> {
    return listDeliveries(this.deps, organizationId, { limit: 1_000 });
  }
}
