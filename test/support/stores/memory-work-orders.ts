/**
 * The work-orders store in memory (functions/core/crm/work-orders-store.ts): records by key, the
 * same conditions (a new record's id free, an update's record existing). Held to the DynamoDB store
 * by test/integration/stores/work-orders-store.contract.test.ts. Fault injection: `faults`.
 */
import { recordKey, type RecordRef, type StoredRecord, type WorkOrdersStore } from '../../../functions/core/crm/work-orders-store.js';
import { Faults } from './faults.js';

const id = (ref: RecordRef) => { const k = recordKey(ref); return `${k.pk}\u0000${k.sk}`; };
const copy = <T>(value: T): T => structuredClone(value);

export class MemoryWorkOrdersStore implements WorkOrdersStore {
  readonly items = new Map<string, StoredRecord>();
  readonly faults = new Faults<keyof WorkOrdersStore>();

  async createRecord(ref: RecordRef, fields: StoredRecord) {
    await this.faults.enter('createRecord');
    if (this.items.has(id(ref))) return undefined;
    const item = { ...recordKey(ref), ...copy(fields) };
    this.items.set(id(ref), item);
    return copy(item);
  }

  async getRecord(ref: RecordRef) {
    await this.faults.enter('getRecord');
    const item = this.items.get(id(ref));
    return item && copy(item);
  }

  async updateRecord(ref: RecordRef, set: StoredRecord) {
    await this.faults.enter('updateRecord');
    const current = this.items.get(id(ref));
    if (!current) return undefined;
    const next = { ...current, ...copy(Object.fromEntries(Object.entries(set).filter(([, v]) => v !== undefined))) };
    this.items.set(id(ref), next);
    return copy(next);
  }

  async appendPayment(ref: RecordRef, payment: { id: string; amount_cents: number; paid_at: string }) {
    await this.faults.enter('appendPayment');
    const current = this.items.get(id(ref));
    if (!current) return undefined;
    const next = { ...current, payments: [...(Array.isArray(current.payments) ? current.payments : []), copy(payment)], updated_at: payment.paid_at };
    this.items.set(id(ref), next);
    return copy(next);
  }

  async deleteRecord(ref: RecordRef) {
    await this.faults.enter('deleteRecord');
    const current = this.items.get(id(ref));
    this.items.delete(id(ref));
    return current && copy(current);
  }
}
