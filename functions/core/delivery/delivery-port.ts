/**
 * The delivery stage's port over its store and queue (docs/decisions.md "The delivery core's
 * port"): the deliveries table and SQS in production, in-memory ones in the delivery core's tests
 * (test/integration/delivery-core), chosen per Deps. Every module of the stage reads and writes
 * delivery records, and sends delivery messages, through here.
 */
import type { Deps } from '../platform/deps.js';
import type { DeliveryQueue, DeliveryRef, DeliveryStore, Transition } from './delivery-state.js';
import { dynamoDeliveryStore } from './delivery-record.js';
import { sqsDeliveryQueue } from './sqs-delivery-queue.js';

export interface DeliveryPorts { store: DeliveryStore; queue: DeliveryQueue }

/** A symbol, so that deps copied with a spread keep their ports. */
const ports = Symbol('deliveryPorts');
type WithPorts = Deps & { [ports]?: DeliveryPorts };

/** `deps` whose delivery stage uses these ports instead of DynamoDB and SQS. */
export const withDeliveryPorts = (deps: Deps, use: DeliveryPorts): Deps => ({ ...deps, [ports]: use }) as WithPorts;

export function deliveryPorts(deps: Deps): DeliveryPorts {
  return (deps as WithPorts)[ports] ?? { store: dynamoDeliveryStore(deps), queue: sqsDeliveryQueue(deps) };
}

/** The delivery store of these deps. */
export const deliveryStore = (deps: Deps): DeliveryStore => deliveryPorts(deps).store;

/** One named transition of a delivery record (delivery-state.ts); false when it was not in the state the transition leaves. */
export const transition = (deps: Deps, ref: DeliveryRef, t: Transition): Promise<boolean> => deliveryStore(deps).transition(ref, t);
