/**
 * Idempotency-Key support for lead creation (docs/leads.md), on Powertools' idempotency utility with
 * its DynamoDB persistence layer: the same key and body within 24 h replay the stored response; the
 * same key with another body is a 422; a first request still in flight is a 409. Keys are scoped
 * to the organization, so two organizations may use the same Idempotency-Key.
 */
import { IdempotencyConfig, makeIdempotent } from '@aws-lambda-powertools/idempotency';
import { IdempotencyAlreadyInProgressError, IdempotencyValidationError } from '@aws-lambda-powertools/idempotency';
import { DynamoDBPersistenceLayer } from '@aws-lambda-powertools/idempotency/dynamodb';
import type { Deps } from '../platform/deps.js';
import { badRequest, conflict, unprocessable } from '../platform/errors.js';

const REPLAY_WINDOW_SECONDS = 24 * 60 * 60;
const MAX_KEY_LENGTH = 255;

/**
 * What Powertools reads from the Lambda context: the time left, so that an in-flight record expires
 * with the function that wrote it and a retry is not refused with 409 for the rest of the window.
 */
export interface RemainingTime {
  getRemainingTimeInMillis(): number;
}

/** A RemainingTime counting down to `deadline` (epoch ms). */
export function remainingTimeUntil(deadline: number): RemainingTime {
  return { getRemainingTimeInMillis: () => Math.max(0, deadline - Date.now()) };
}

export interface IdempotentCall<T> {
  organizationId: string;
  idempotencyKey: string;
  /** What "the same body" means: compared by hash on a retry. */
  payload: unknown;
  run: () => Promise<T>;
}

/** One persistence layer (and wrapped function) per table per container. */
const wrapped = new Map<string, { config: IdempotencyConfig; fn: (call: IdempotentCall<unknown>) => Promise<unknown> }>();

function idempotentRunner(deps: Deps) {
  let entry = wrapped.get(deps.tables.idempotency);
  if (!entry) {
    const persistenceStore = new DynamoDBPersistenceLayer({ tableName: deps.tables.idempotency, awsSdkV3Client: deps.dynamodb });
    const config = new IdempotencyConfig({
      eventKeyJmesPath: '[organizationId, idempotencyKey]',
      payloadValidationJmesPath: 'payload',
      expiresAfterSeconds: REPLAY_WINDOW_SECONDS,
      throwOnNoIdempotencyKey: true,
    });
    const fn = makeIdempotent((call: IdempotentCall<unknown>) => call.run(), { persistenceStore, config });
    entry = { config, fn };
    wrapped.set(deps.tables.idempotency, entry);
  }
  return entry;
}

export function validateIdempotencyKey(value: string | undefined): string | undefined {
  if (value === undefined) return undefined;
  const key = value.trim();
  if (key === '' || key.length > MAX_KEY_LENGTH || !/^[\x21-\x7e]+$/.test(key)) {
    throw badRequest(`The Idempotency-Key header must be 1 to ${MAX_KEY_LENGTH} printable ASCII characters.`);
  }
  return key;
}

/**
 * Runs `call.run` at most once per (organization, key) within the replay window and returns the
 * first result to every retry. `replayed` tells the caller which of the two happened.
 */
export async function runIdempotent<T>(deps: Deps, remainingTime: RemainingTime | undefined, call: IdempotentCall<T>): Promise<{ result: T; replayed: boolean }> {
  const { config, fn } = idempotentRunner(deps);
  // Powertools types it as the whole Lambda context but reads only the time left.
  if (remainingTime) config.registerLambdaContext(remainingTime as Parameters<IdempotencyConfig['registerLambdaContext']>[0]);
  let executed = false;
  try {
    const result = (await fn({ ...call, run: async () => ((executed = true), call.run()) })) as T;
    return { result, replayed: !executed };
  } catch (error) {
    if (error instanceof IdempotencyValidationError) {
      throw unprocessable('idempotency-key-reused', 'This Idempotency-Key was already used with a different body. Use a new key for a new lead.');
    }
    if (error instanceof IdempotencyAlreadyInProgressError) {
      throw conflict('A request with this Idempotency-Key is still being processed. Retry in a moment.');
    }
    throw error;
  }
}
