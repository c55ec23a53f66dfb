/**
 * Fault injection for the in-memory stores: a store's operation can be made to throw (a throttle, a
 * conflict with a transaction, any error) the next `times` calls, or to run a step of the test's
 * just before it applies (a concurrent write, the day's roll-over: a lost race).
 */
const named = (name: string, message: string) => Object.assign(new Error(message), { name, $metadata: {} });
/** What DynamoDB throws when a partition is over its capacity (the SDK's retries exhausted). */
export const throttle = () => named('ProvisionedThroughputExceededException', 'The level of configured provisioned throughput for the table was exceeded');
/** A write that met another request's transaction on the item (the SDK does not retry it). */
export const transactionConflict = () => named('TransactionConflictException', 'Transaction is ongoing for the item');
/** Any other failure of a call. */
export const failure = () => named('InternalServerError', 'injected');
/** A condition that did not hold (the store's operations answer their own way; this is for raw failures). */
export const conditionFailed = () => named('ConditionalCheckFailedException', 'The conditional request failed');

export class Faults<Op extends string> {
  private readonly planned: { op: Op; left: number; make: () => Error }[] = [];
  private readonly hooks: { op: Op; run: () => unknown }[] = [];
  private readonly counts = new Map<Op, number>();

  /** The next `times` calls of `op` throw `make()` (Infinity: every call). */
  fail(op: Op, make: () => Error, times = 1): this {
    this.planned.push({ op, left: times, make });
    return this;
  }

  /** Runs `run` once, just before the next call of `op` applies (it may call the store itself). */
  before(op: Op, run: () => unknown): this {
    this.hooks.push({ op, run });
    return this;
  }

  /** Calls of `op` so far (faulted ones included). */
  calls(op: Op): number {
    return this.counts.get(op) ?? 0;
  }

  /** Called by the store as `op` starts. */
  async enter(op: Op): Promise<void> {
    this.counts.set(op, this.calls(op) + 1);
    const hook = this.hooks.findIndex((h) => h.op === op);
    if (hook >= 0) await this.hooks.splice(hook, 1)[0].run();
    const plan = this.planned.find((p) => p.op === op && p.left > 0);
    if (plan) {
      plan.left -= 1;
      throw plan.make();
    }
  }
}
