/**
 * Idempotency-Key support for lead creation (docs/leads.md), on Powertools' idempotency utility with
 * its DynamoDB persistence layer: the same key and body within 24 h replay the stored response; the
 * same key with another body is a 422; a first request still in flight is a 409. A secret key's
 * Idempotency-Key is scoped to its organization (a retry across a key rotation still replays); a
 * publishable key's to that key alone, so no page replays an answer stored for a server or for
 * another page (a merged lead's 200 would tell it of a match: docs/leads.md "Idempotency").
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
  /** A publishable key's id: its keys are its own. Absent (a secret key): the organization's. */
  pageKeyId?: string;
  idempotencyKey: string;
  /** What "the same body" means: compared by hash on a retry. */
  payload: unknown;
  run: () => Promise<T>;
}

/** One persistence layer (and wrapped function) per table and scope per container. */
const wrapped = new Map<string, { config: IdempotencyConfig; fn: (call: IdempotentCall<unknown>) => Promise<unknown> }>();

/**
 * The records' keys: the hash of these fields. The organization's scope keeps the path it always
 * had, so records stored before page keys got their own scope still replay.
 */
const SCOPES = { organization: '[organizationId, idempotencyKey]', page: '[organizationId, pageKeyId, idempotencyKey]' } as const;

function idempotentRunner(deps: Deps, scope: keyof typeof SCOPES) {
  const id = `${deps.tables.idempotency}|${scope}`;
  let entry = wrapped.get(id);
  if (!entry) {
    const persistenceStore = new DynamoDBPersistenceLayer({ tableName: deps.tables.idempotency, awsSdkV3Client: deps.dynamodb });
    const config = new IdempotencyConfig({
      eventKeyJmesPath: SCOPES[scope],
      payloadValidationJmesPath: 'payload',
      expiresAfterSeconds: REPLAY_WINDOW_SECONDS,
      throwOnNoIdempotencyKey: true,
    });
    const fn = makeIdempotent((call: IdempotentCall<unknown>) => call.run(), { persistenceStore, config });
    entry = { config, fn };
    wrapped.set(id, entry);
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
 * Runs `call.run` at most once per (organization or page key, Idempotency-Key) within the replay
 * window and returns the first result to every retry. `replayed` tells the caller which happened.
 */
export async function runIdempotent<T>(deps: Deps, remainingTime: RemainingTime | undefined, call: IdempotentCall<T>): Promise<{ result: T; replayed: boolean }> {
  const { config, fn } = idempotentRunner(deps, call.pageKeyId ? 'page' : 'organization');
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
