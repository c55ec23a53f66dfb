/**
 * The delivery stage's port over its store and queue (docs/decisions.md "The delivery core's
 * port"): the deliveries table and SQS in production, in-memory ones in the delivery core's tests
 * (test/integration/delivery-core), chosen per Deps. Every module of the stage reads and writes
 * delivery records, and sends delivery messages, through here.
 */
import { MetricUnit } from '@aws-lambda-powertools/metrics';
import type { Deps } from '../platform/deps.js';
import { metrics } from '../platform/observability.js';
import { firstRecord, isUnrecorded, type DeliveryQueue, type DeliveryRef, type DeliveryStore, type Transition } from './delivery-state.js';
import type { DeliveryMessage } from '../platform/model.js';
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

/**
 * One named transition of a delivery record (delivery-state.ts); false when it was not in the
 * state the transition leaves, counted per transition (DeliveryTransitionsRefused): a refusal is
 * expected now and then (a duplicate message, a re-drive meanwhile), a steady rate is not.
 */
export async function transition(deps: Deps, ref: DeliveryRef | DeliveryMessage, t: Transition): Promise<boolean> {
  // An attempt that found no record (the fan-out puts none while pending): its first outcome writes it.
  const create = t.create ?? (isUnrecorded(ref) && t.to !== 'redelivered' && t.to !== 'unparked' ? firstRecord(ref, deps.config.retentionDays) : undefined);
  const done = await deliveryStore(deps).transition(ref, create ? { ...t, create } : t);
  if (!done) {
    const refused = metrics.singleMetric();
    refused.addDimension('transition', t.to);
    refused.addMetric('DeliveryTransitionsRefused', MetricUnit.Count, 1);
  }
  return done;
}
