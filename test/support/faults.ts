/**
 * Fault injection for the in-memory stores: a test queues what the next call of an operation meets
 * (a throttle, a failed condition, a lost race), and the store plays it out the way DynamoDB would
 * make its production twin behave.
 */
export type Fault = 'throttle' | 'failed-condition' | 'lost-race';

export class Faults<Op extends string> {
  private readonly queued: { op: Op; fault: Fault }[] = [];

  /** The next `times` calls of `op` meet `fault`. */
  inject(op: Op, fault: Fault, times = 1): void {
    for (let i = 0; i < times; i++) this.queued.push({ op, fault });
  }

  /** The fault the call of `op` meets now, if one is queued for it (taken). */
  take(op: Op): Fault | undefined {
    const index = this.queued.findIndex((q) => q.op === op);
    if (index < 0) return undefined;
    return this.queued.splice(index, 1)[0].fault;
  }

  get pending(): number {
    return this.queued.length;
  }
}

/** What the SDK throws when DynamoDB throttles a request (after its own retries). */
export const throttled = () => Object.assign(new Error('The level of configured provisioned throughput for the table was exceeded.'), {
  name: 'ProvisionedThroughputExceededException',
});
