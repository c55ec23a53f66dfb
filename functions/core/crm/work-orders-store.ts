/**
 * The work-orders store: the work-orders table's records (work orders, invoices, bookings, typed
 * items under the organization's partition), the only module that reads or writes them
 * (crm/entities.ts validates and asks). Tests put the in-memory twin in its place (`workOrdersPort.with`).
 */
import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import { DeleteCommand, GetCommand, PutCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import type { Deps } from '../platform/deps.js';
import { keys } from '../platform/model.js';
import { depsPort } from '../platform/deps-port.js';

export type RecordKind = 'workOrder' | 'invoice' | 'booking';
/** One record: its kind, organization and id (its key follows). */
export interface RecordRef { kind: RecordKind; organizationId: string; id: string }
export type StoredRecord = Record<string, unknown>;

export const recordKey = ({ kind, organizationId, id }: RecordRef) => keys[kind](organizationId, id);

export interface WorkOrdersStore {
  /** Puts a new record (its keys added from `ref`) and returns it; undefined when the id is taken. */
  createRecord(ref: RecordRef, fields: StoredRecord): Promise<StoredRecord | undefined>;
  /** A consistent read. */
  getRecord(ref: RecordRef): Promise<StoredRecord | undefined>;
  /** Sets these fields; the new record, or undefined when there is none. */
  updateRecord(ref: RecordRef, set: StoredRecord): Promise<StoredRecord | undefined>;
  /** Appends a payment to an invoice's list and sets `updated_at` to its time; undefined when there is no such invoice. */
  appendPayment(ref: RecordRef, payment: { id: string; amount_cents: number; paid_at: string }): Promise<StoredRecord | undefined>;
  /** The deleted record; undefined when there was none. */
  deleteRecord(ref: RecordRef): Promise<StoredRecord | undefined>;
}

export function dynamoWorkOrdersStore(deps: Deps): WorkOrdersStore {
  const TableName = deps.tables.workOrders;
  const update = async (input: Omit<NonNullable<UpdateCommand['input']>, 'TableName'>) => {
    try {
      const { Attributes } = await deps.doc.send(new UpdateCommand({ TableName, ...input, ConditionExpression: 'attribute_exists(pk)', ReturnValues: 'ALL_NEW' }));
      return Attributes;
    } catch (error) {
      if (error instanceof ConditionalCheckFailedException) return undefined;
      throw error;
    }
  };
  return {
    async createRecord(ref, fields) {
      const item = { ...recordKey(ref), ...fields };
      try {
        await deps.doc.send(new PutCommand({ TableName, Item: item, ConditionExpression: 'attribute_not_exists(pk)' }));
        return item;
      } catch (error) {
        if (error instanceof ConditionalCheckFailedException) return undefined;
        throw error;
      }
    },
    async getRecord(ref) {
      const { Item } = await deps.doc.send(new GetCommand({ TableName, Key: recordKey(ref), ConsistentRead: true }));
      return Item;
    },
    updateRecord(ref, set) {
      const entries = Object.entries(set).filter(([, v]) => v !== undefined);
      return update({
        Key: recordKey(ref),
        UpdateExpression: `SET ${entries.map((_, i) => `#f${i} = :v${i}`).join(', ')}`,
        ExpressionAttributeNames: Object.fromEntries(entries.map(([k], i) => [`#f${i}`, k])),
        ExpressionAttributeValues: Object.fromEntries(entries.map(([, v], i) => [`:v${i}`, v])),
      });
    },
    appendPayment(ref, payment) {
      return update({
        Key: recordKey(ref),
        UpdateExpression: 'SET payments = list_append(if_not_exists(payments, :empty), :p), updated_at = :u',
        ExpressionAttributeValues: { ':p': [payment], ':empty': [], ':u': payment.paid_at },
      });
    },
    async deleteRecord(ref) {
      const { Attributes } = await deps.doc.send(new DeleteCommand({ TableName, Key: recordKey(ref), ReturnValues: 'ALL_OLD' }));
      return Attributes;
    },
  };
}

/** The work-orders store of these deps (the in-memory twin in tests). */
export const workOrdersPort = depsPort<WorkOrdersStore>('workOrdersStore', dynamoWorkOrdersStore);
export const workOrdersStore = workOrdersPort.of;
