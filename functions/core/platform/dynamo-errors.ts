/**
 * What DynamoDB's errors say, for the stores (the modules that talk to DynamoDB): a cancelled
 * transaction's per-item reasons and whether it lost to another transaction. Kept apart from
 * platform/optimistic.ts so that the retry of lost races stays free of the SDK.
 */
import { ConditionalCheckFailedException, TransactionCanceledException, type CancellationReason } from '@aws-sdk/client-dynamodb';

export type { CancellationReason };

/** The per-item reasons of a cancelled transaction, or undefined when the error is not one. */
export const cancellationReasons = (error: unknown): CancellationReason[] | undefined =>
  error instanceof TransactionCanceledException ? error.CancellationReasons ?? [] : undefined;

/** A transaction cancelled only because another transaction touched the same item (real DynamoDB, not Local). */
export const isTransactionConflict = (reasons: CancellationReason[]) => reasons.some((r) => r.Code === 'TransactionConflict');

/** A conditional write whose condition failed (by class, or by name when the error crossed a module boundary). */
export const isConditionFailure = (error: unknown): error is ConditionalCheckFailedException =>
  error instanceof ConditionalCheckFailedException || (error as Error | undefined)?.name === 'ConditionalCheckFailedException';
