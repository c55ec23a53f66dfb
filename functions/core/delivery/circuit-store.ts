/**
 * The circuit breaker's state, kept on the endpoint item (circuitFailures, circuitUntil,
 * circuitOpens, circuitProbing) and read with the endpoint through the per-container endpoint
 * cache: a healthy endpoint's deliveries never write it. It is written on a failed attempt (one
 * ADD), on a state change (open, probe claimed, close) and on the first success after failures.
 * Decisions: circuit-breaker.ts.
 */
import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { MetricUnit } from '@aws-lambda-powertools/metrics';
import type { Deps } from '../platform/deps.js';
import { keys, type WebhookEndpoint } from '../platform/model.js';
import { logger, metrics } from '../platform/observability.js';
import { forgetEndpoints } from './endpoints.js';
import { afterAttempt, gate, openSeconds, reachesThreshold, type Gate } from './circuit-breaker.js';

// Conditional writes on the endpoint item, so containers racing on one endpoint agree.

/** Endpoints this container saw fail since it last closed their circuit (a success then clears the count even if its cached copy shows none). */
const failedHere = new Set<string>();

const isConditionFailure = (error: unknown) => (error as Error).name === 'ConditionalCheckFailedException';

async function update(deps: Deps, endpoint: WebhookEndpoint, input: { expression: string; condition: string; values?: Record<string, unknown> }) {
  try {
    return await deps.doc.send(new UpdateCommand({
      TableName: deps.tables.organizations,
      Key: keys.endpoint(endpoint.organizationId, endpoint.id),
      UpdateExpression: input.expression,
      ConditionExpression: input.condition,
      ...(input.values ? { ExpressionAttributeValues: input.values } : {}),
      ReturnValues: 'UPDATED_NEW',
    }));
  } catch (error) {
    if (isConditionFailure(error)) return undefined;
    throw error;
  } finally {
    forgetEndpoints(endpoint.organizationId);
  }
}

/**
 * Before an attempt: the gate, with the half-open probe claimed (one container wins it: the claim
 * moves `until` to the probe's deadline; the others park until then).
 */
export async function admit(deps: Deps, endpoint: WebhookEndpoint): Promise<Gate> {
  const now = deps.now();
  const decided = gate(endpoint.circuit, now, deps.settings);
  if (decided.kind !== 'probe') return decided;
  const claimed = await update(deps, endpoint, {
    expression: 'SET circuitUntil = :deadline, circuitProbing = :t',
    condition: 'circuitUntil = :until',
    values: { ':deadline': new Date(decided.deadline).toISOString(), ':t': true, ':until': endpoint.circuit!.until },
  });
  if (!claimed) return { kind: 'park', until: decided.deadline, reason: 'circuit half-open: a probe is under way' };
  logger.info('circuit half-open: probing', { endpointId: endpoint.id });
  return decided;
}

/** After an attempt: records what it means for the circuit (no write for a success on a healthy endpoint). */
export async function recordAttempt(deps: Deps, endpoint: WebhookEndpoint, outcome: { ok: boolean; probe: boolean }): Promise<void> {
  const now = deps.now();
  const transition = afterAttempt(endpoint.circuit, { ...outcome, failedHere: failedHere.has(endpoint.id) }, now, deps.settings);
  if (transition.kind === 'none') return;
  if (transition.kind === 'close') {
    failedHere.delete(endpoint.id);
    await update(deps, endpoint, { expression: 'REMOVE circuitFailures, circuitUntil, circuitOpens, circuitProbing', condition: 'attribute_exists(pk)' });
    if (endpoint.circuit?.until) logger.info('circuit closed', { endpointId: endpoint.id });
    return;
  }
  failedHere.add(endpoint.id);
  if (transition.kind === 'reopen') {
    await update(deps, endpoint, {
      expression: 'SET circuitUntil = :until, circuitOpens = :opens REMOVE circuitProbing',
      condition: 'attribute_exists(pk)',
      values: { ':until': new Date(transition.until).toISOString(), ':opens': transition.opens },
    });
    metrics.addMetric('CircuitOpened', MetricUnit.Count, 1);
    logger.warn('circuit re-opened: the probe failed', { endpointId: endpoint.id, until: new Date(transition.until).toISOString(), opens: transition.opens });
    return;
  }
  const counted = await update(deps, endpoint, { expression: 'ADD circuitFailures :one', condition: 'attribute_exists(pk)', values: { ':one': 1 } });
  const failures = Number(counted?.Attributes?.circuitFailures ?? 0);
  if (!reachesThreshold(failures, deps.settings)) return;
  const until = new Date(now + openSeconds(1, deps.settings) * 1000).toISOString();
  // Only the write that finds the circuit closed opens it (a late failure does not extend an open one).
  const opened = await update(deps, endpoint, {
    expression: 'SET circuitUntil = :until, circuitOpens = :one',
    condition: 'attribute_exists(pk) AND attribute_not_exists(circuitUntil)',
    values: { ':until': until, ':one': 1 },
  });
  if (opened) {
    metrics.addMetric('CircuitOpened', MetricUnit.Count, 1);
    logger.warn('circuit opened', { endpointId: endpoint.id, failures, until });
  }
}

