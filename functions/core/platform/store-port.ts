/**
 * How Deps carries a store other than its DynamoDB implementation (the in-memory twin of a test),
 * as delivery-port.ts does for the delivery stage: one symbol per store, so deps copied with a
 * spread keep it. A store module declares its port once (`storePort(name, dynamo)`); callers get
 * the store with `port.of(deps)`, tests swap it with `port.with(deps, twin)`.
 */
import type { Deps } from './deps.js';

export interface StorePort<S> {
  /** The store these deps use: the one put there with `with`, else the DynamoDB implementation. */
  of(deps: Deps): S;
  /** `deps` whose callers of this store use `store` instead. */
  with(deps: Deps, store: S): Deps;
}

export function storePort<S>(name: string, dynamo: (deps: Deps) => S): StorePort<S> {
  const slot = Symbol(name);
  type Carrying = Deps & { [slot]?: S };
  return {
    of: (deps) => (deps as Carrying)[slot] ?? dynamo(deps),
    with: (deps, store) => ({ ...deps, [slot]: store }) as Carrying,
  };
}
