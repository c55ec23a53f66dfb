/**
 * The work-orders store's contract (functions/core/crm/work-orders-store.ts) on DynamoDB Local and
 * the in-memory twin: work orders, invoices and bookings created once under their keys, updated and
 * paid while they exist, deleted.
 */
import { describe, it, expect } from '@jest/globals';
import { keys } from '../../../functions/core/platform/model.js';
import { newId } from '../../../functions/core/platform/ids.js';
import { workOrdersStore, type RecordRef } from '../../../functions/core/crm/work-orders-store.js';
import { implementations } from './support/implementations.js';

describe.each(implementations)('the work-orders store on %s', (_name, implementation) => {
  it.each([['workOrder'], ['invoice'], ['booking']] as const)('creates a %s once under its key, updates it while it exists, deletes it', async (kind) => {
    const impl = await implementation();
    const store = workOrdersStore(impl.deps);
    const ref: RecordRef = { kind, organizationId: newId('org', 12), id: newId('rec') };
    const created = await store.createRecord(ref, { entity: kind, id: ref.id, title: 'Fix the tap', created_at: 'a', updated_at: 'a' });
    expect(created).toEqual({ ...keys[kind](ref.organizationId, ref.id), entity: kind, id: ref.id, title: 'Fix the tap', created_at: 'a', updated_at: 'a' });
    expect(await impl.read('workOrders', keys[kind](ref.organizationId, ref.id))).toEqual(created);
    expect(await store.createRecord(ref, { entity: kind })).toBeUndefined();
    expect(await store.updateRecord(ref, { status: 'completed', updated_at: 'b', ignored: undefined })).toEqual({ ...created, status: 'completed', updated_at: 'b' });
    expect(await store.getRecord(ref)).toEqual({ ...created, status: 'completed', updated_at: 'b' });
    expect(await store.deleteRecord(ref)).toEqual({ ...created, status: 'completed', updated_at: 'b' });
    expect(await store.getRecord(ref)).toBeUndefined();
    expect(await store.updateRecord(ref, { status: 'x' })).toBeUndefined();
    expect(await store.deleteRecord(ref)).toBeUndefined();
    expect(await impl.read('workOrders', keys[kind](ref.organizationId, ref.id))).toBeUndefined();
  });

  it('appends payments to an invoice in order, and none to a missing one', async () => {
    const impl = await implementation();
    const store = workOrdersStore(impl.deps);
    const ref: RecordRef = { kind: 'invoice', organizationId: newId('org', 12), id: newId('inv') };
    await store.createRecord(ref, { entity: 'invoice', id: ref.id, amount_cents: 500, updated_at: 'a' });
    await store.appendPayment(ref, { id: 'pay_1', amount_cents: 200, paid_at: 'b' });
    expect(await store.appendPayment(ref, { id: 'pay_2', amount_cents: 300, paid_at: 'c' })).toMatchObject({
      payments: [{ id: 'pay_1', amount_cents: 200, paid_at: 'b' }, { id: 'pay_2', amount_cents: 300, paid_at: 'c' }], updated_at: 'c',
    });
    expect(await store.appendPayment({ ...ref, id: 'inv_missing' }, { id: 'pay_3', amount_cents: 1, paid_at: 'd' })).toBeUndefined();
  });
});
