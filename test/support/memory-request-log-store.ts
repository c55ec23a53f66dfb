/**
 * The request log's store (functions/core/tenancy/request-log-store.ts) in memory, on the clock it
 * is given: rows and refused-call counters by organization and sort key, each with its TTL (a row
 * past it is gone to reads). A read of rows answers as DynamoDB's Query with `Limit` does: at most
 * `limit` items, and not `complete` when it stopped at the limit (even with nothing left, as
 * DynamoDB then still returns a LastEvaluatedKey). Faults: a throttle on any operation.
 * test/integration/stores/request-log-store.contract.test.ts holds it to the DynamoDB store.
 */
import { keys } from '../../functions/core/platform/model.js';
import { REFUSED_PREFIX, type RequestLogStore, type RequestRows, type StoredRequest } from '../../functions/core/tenancy/request-log-store.js';
import { Faults, throttled } from './faults.js';

type Op = 'appendRequest' | 'countRefusedCall' | 'newestRequests';
interface Stored { request?: StoredRequest; count?: number; expiresAt: number }
const copy = <T>(value: T): T => structuredClone(value);

export class MemoryRequestLogStore implements RequestLogStore {
  /** Items by organization, then sort key. */
  readonly items = new Map<string, Map<string, Stored>>();
  readonly faults = new Faults<Op>();

  constructor(private readonly now: () => number) {}

  private enter(op: Op): void {
    if (this.faults.take(op) === 'throttle') throw throttled();
  }

  private partition(organizationId: string): Map<string, Stored> {
    let items = this.items.get(organizationId);
    if (!items) this.items.set(organizationId, (items = new Map()));
    return items;
  }

  private live = (item: Stored | undefined) => (item && item.expiresAt * 1000 > this.now() ? item : undefined);

  async appendRequest(organizationId: string, request: StoredRequest, expiresAt: number): Promise<void> {
    this.enter('appendRequest');
    this.partition(organizationId).set(keys.request(organizationId, request.at, request.requestId).sk, { request: copy(request), expiresAt });
  }

  async countRefusedCall(organizationId: string, keyId: string, minute: number, expiresAt: number): Promise<number> {
    this.enter('countRefusedCall');
    const items = this.partition(organizationId);
    const sk = `${REFUSED_PREFIX}${keyId}#${minute}`;
    const item = this.live(items.get(sk)) ?? { count: 0, expiresAt };
    item.count = (item.count ?? 0) + 1;
    items.set(sk, item);
    return item.count;
  }

  async newestRequests(organizationId: string, [lower, upper]: [string, string], limit: number): Promise<RequestRows> {
    this.enter('newestRequests');
    const inRange = [...this.partition(organizationId)].filter(([sk]) => sk >= lower && sk <= upper).sort(([a], [b]) => (a < b ? 1 : -1));
    const read = inRange.slice(0, limit);
    const complete = read.length < limit;
    const rows = read.flatMap(([sk, item]) => (this.live(item)?.request ? [{ sk, request: copy(item.request!) }] : []));
    return { rows, complete, ...(complete ? {} : { reached: read.at(-1)![0] }) };
  }
}
