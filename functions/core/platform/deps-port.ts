/**
 * How Deps carries an implementation other than the production one (a store's in-memory twin, a
 * stubbed outside call) as delivery-port.ts does for the delivery stage: one symbol per port, so
 * deps copied with a spread keep it. A store module declares its port once (`depsPort(name, dynamo)`);
 * callers get the store with `port.of(deps)`, tests swap it with `port.with(deps, twin)`.
 */
import type { Deps } from './deps.js';

export interface DepsPort<S> {
  /** What these deps use: the one put there with `with`, else the production implementation. */
  of(deps: Deps): S;
  /** `deps` whose callers of this store use `store` instead. */
  with(deps: Deps, store: S): Deps;
}

export function depsPort<S>(name: string, production: (deps: Deps) => S): DepsPort<S> {
  const slot = Symbol(name);
  type Carrying = Deps & { [slot]?: S };
  return {
    of: (deps) => (deps as Carrying)[slot] ?? production(deps),
    with: (deps, store) => ({ ...deps, [slot]: store }) as Carrying,
  };
}

/**
 * Per-container state of a module (its caches) for the production store, and a fresh one for each
 * store a test injects, so tests on a twin start cold without a reset hook. `injected` says which
 * store, if any, these deps carry.
 */
export function statePerStore<S extends object, State>(make: () => State, injected: (deps: Deps) => S | undefined) {
  const container = make();
  const byStore = new WeakMap<S, State>();
  return {
    container,
    of(deps: Deps): State {
      const store = injected(deps);
      if (!store) return container;
      let state = byStore.get(store);
      if (!state) byStore.set(store, (state = make()));
      return state;
    },
  };
}
