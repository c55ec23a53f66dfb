/**
 * What one delivery container remembers between invocations (docs/architecture.md#fair-delivery),
 * held in one object instead of module-level variables: its cached endpoint lists, the endpoints
 * it saw fail, its rate-limit lane hints and its per-endpoint slots. Production shares one per
 * process (a Lambda container, the local stack); a test that plays a fresh process, or a second
 * container, gives its deps a new one (`withContainerMemory`), so no test needs a global reset.
 */
import type { Deps } from '../platform/deps.js';
import type { WebhookEndpoint } from '../platform/model.js';
import { TtlCache } from '../platform/ttl-cache.js';
import { EndpointSlots } from './endpoint-concurrency.js';

export class ContainerMemory {
  /** Organizations' endpoint lists for delivery (endpoint-store.ts deliveryEndpoints), bounded. */
  readonly endpoints = new TtlCache<string, WebhookEndpoint[]>(10_000);
  /** Endpoints this container saw fail or time out, until their next success here (its cached copy may not show it yet). */
  readonly failedHere = new Set<string>();
  /** What this container last knew of each endpoint's rate-limit lanes (delivery-throttle.ts): a hint; the write decides. */
  readonly lanesSeen = new Map<string, number[]>();
  /** Attempts in flight per endpoint (endpoint-concurrency.ts). */
  readonly slots = new EndpointSlots();
}

/** The process's own: what every deps without one of its own uses. */
const shared = new ContainerMemory();

/** A symbol, so that deps copied with a spread keep their memory. */
const memory = Symbol('containerMemory');
type WithMemory = Deps & { [memory]?: ContainerMemory };

/** `deps` with a memory of their own (a fresh process, another container). */
export const withContainerMemory = (deps: Deps, use: ContainerMemory): Deps => ({ ...deps, [memory]: use }) as WithMemory;

export const containerMemory = (deps: Deps): ContainerMemory => (deps as WithMemory)[memory] ?? shared;
