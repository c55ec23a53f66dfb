/**
 * The CRM-side records whose changes become events (docs/events.md): clients in the clients table;
 * work orders, invoices and bookings as typed items in the work-orders table. The CRM application
 * writes these; the `crm` CLI uses this module to produce every event by hand (docs/data-model.md).
 */
import type { Deps } from '../platform/deps.js';
import { notFound, validationFailed, type FieldError } from '../platform/errors.js';
import { newId } from '../platform/ids.js';
import { keys } from '../platform/model.js';
import { matchKeyOf } from '../platform/match-key.js';
import { WORK_ORDER_STATUSES, type ClientFields } from '../platform/crm-fields.js';
import { parseLead } from '../intake/lead-schema.js';
import { clientsStore } from '../intake/clients-store.js';
import { requireOrganization } from '../tenancy/organizations.js';
import { workOrdersStore, type RecordRef, type StoredRecord } from './work-orders-store.js';

type Item = Record<string, unknown>;

const iso = (deps: Deps) => new Date(deps.now()).toISOString();
const fail = (errors: FieldError[]) => { if (errors.length) throw validationFailed(errors); };
const isoOrFail = (field: string, value: string | undefined, errors: FieldError[]) => {
  if (value === undefined) return undefined;
  const t = Date.parse(value);
  if (Number.isNaN(t)) errors.push({ field, message: 'must be an ISO 8601 date-time' });
  return Number.isNaN(t) ? undefined : new Date(t).toISOString();
};
const what = ({ kind, organizationId, id }: RecordRef) => `${{ workOrder: 'work order', invoice: 'invoice', booking: 'booking' }[kind]} ${id} in ${organizationId}`;
const found = <T>(item: T | undefined, name: string): T => { if (!item) throw notFound(`No ${name}.`); return item; };

/** A new record of the work-orders table (a fresh id cannot be taken: a collision is a bug, thrown). */
async function create(deps: Deps, ref: RecordRef, fields: StoredRecord): Promise<Item> {
  const item = await workOrdersStore(deps).createRecord(ref, fields);
  if (!item) throw new Error(`${what(ref)} already exists`);
  return item;
}
const require_ = async (deps: Deps, ref: RecordRef) => found(await workOrdersStore(deps).getRecord(ref), what(ref));
const patch = async (deps: Deps, ref: RecordRef, fields: Item) => found(await workOrdersStore(deps).updateRecord(ref, { ...fields, updated_at: iso(deps) }), what(ref));
const remove = async (deps: Deps, ref: RecordRef) => found(await workOrdersStore(deps).deleteRecord(ref), what(ref));
const workOrder = (organizationId: string, id: string): RecordRef => ({ kind: 'workOrder', organizationId, id });
const invoice = (organizationId: string, id: string): RecordRef => ({ kind: 'invoice', organizationId, id });

// ---- clients ----
export async function createClient(deps: Deps, organizationId: string, input: Record<string, unknown>, status = 'lead'): Promise<Item> {
  await requireOrganization(deps, organizationId);
  const lead = parseLead(input);
  const id = newId('cli');
  const at = iso(deps);
  const { sms_consent_source: _source, ...fields } = lead;
  // Indexed for duplicate matching like a lead's client (docs/data-model.md "match").
  const matchKey = matchKeyOf(organizationId, fields);
  const item = { ...keys.client(organizationId, id), entity: 'client', id, organization_id: organizationId, status, source: 'crm', ...fields, ...(matchKey ? { matchKey } : {}), created_at: at, updated_at: at };
  if (!await clientsStore(deps).createClient(item)) throw new Error(`client ${id} in ${organizationId} already exists`);
  return item;
}
export async function updateClient(deps: Deps, organizationId: string, clientId: string, fields: Pick<ClientFields, 'email' | 'phone' | 'notes' | 'first_name' | 'last_name'> & { status?: string }): Promise<Item> {
  const name = `client ${clientId} in ${organizationId}`;
  const current = found(await clientsStore(deps).getClient(organizationId, clientId, { consistent: true }), name);
  // A changed e-mail or phone moves the client's key in the match index (or takes it out).
  const matchKey = matchKeyOf(organizationId, { email: fields.email ?? current.email, phone: fields.phone ?? current.phone });
  const remove = !matchKey && current.matchKey ? ['matchKey'] : [];
  return found(await clientsStore(deps).updateClient(organizationId, clientId, { set: { ...fields, matchKey, updated_at: iso(deps) }, remove }), name);
}
export const deleteClient = async (deps: Deps, organizationId: string, clientId: string) =>
  found(await clientsStore(deps).deleteClient(organizationId, clientId), `client ${clientId} in ${organizationId}`);

// ---- work orders ----
export async function createWorkOrder(deps: Deps, organizationId: string, input: { title: string; clientId?: string; scheduledFor?: string }): Promise<Item> {
  await requireOrganization(deps, organizationId);
  const errors: FieldError[] = [];
  if (!input.title?.trim() || input.title.length > 200) errors.push({ field: 'title', message: 'must be 1 to 200 characters' });
  const scheduledFor = isoOrFail('scheduled_for', input.scheduledFor, errors);
  fail(errors);
  const id = newId('wo');
  const at = iso(deps);
  return create(deps, workOrder(organizationId, id), {
    entity: 'work_order', id, organization_id: organizationId, title: input.title.trim(), status: 'scheduled',
    ...(input.clientId ? { client_id: input.clientId } : {}), ...(scheduledFor ? { scheduled_for: scheduledFor } : {}), created_at: at, updated_at: at,
  });
}
export async function setWorkOrderStatus(deps: Deps, organizationId: string, workOrderId: string, status: string): Promise<Item> {
  if (!(WORK_ORDER_STATUSES as readonly string[]).includes(status)) fail([{ field: 'status', message: `must be one of ${WORK_ORDER_STATUSES.join(', ')}` }]);
  await require_(deps, workOrder(organizationId, workOrderId));
  return patch(deps, workOrder(organizationId, workOrderId), { status });
}
export const deleteWorkOrder = (deps: Deps, organizationId: string, workOrderId: string) => remove(deps, workOrder(organizationId, workOrderId));

// ---- invoices ----
export async function createInvoice(deps: Deps, organizationId: string, input: { amountCents: number; currency?: string; workOrderId?: string; clientId?: string; sent?: boolean }): Promise<Item> {
  await requireOrganization(deps, organizationId);
  const errors: FieldError[] = [];
  if (!Number.isSafeInteger(input.amountCents) || input.amountCents < 0) errors.push({ field: 'amount', message: 'must be zero or more cents' });
  const currency = (input.currency ?? 'USD').toUpperCase();
  if (!/^[A-Z]{3}$/.test(currency)) errors.push({ field: 'currency', message: 'must be a 3-letter ISO 4217 code' });
  fail(errors);
  const id = newId('inv');
  const at = iso(deps);
  return create(deps, invoice(organizationId, id), {
    entity: 'invoice', id, organization_id: organizationId, amount_cents: input.amountCents, currency, payments: [],
    ...(input.workOrderId ? { work_order_id: input.workOrderId } : {}), ...(input.clientId ? { client_id: input.clientId } : {}),
    ...(input.sent ? { sent_at: at } : {}), created_at: at, updated_at: at,
  });
}
export async function sendInvoice(deps: Deps, organizationId: string, invoiceId: string): Promise<Item> {
  const current = await require_(deps, invoice(organizationId, invoiceId));
  if (current.sent_at) return current; // sending twice is not a second `invoice.sent`
  return patch(deps, invoice(organizationId, invoiceId), { sent_at: iso(deps) });
}
export async function recordPayment(deps: Deps, organizationId: string, invoiceId: string, amountCents: number): Promise<Item> {
  if (!Number.isSafeInteger(amountCents) || amountCents <= 0) fail([{ field: 'amount', message: 'must be a positive number of cents' }]);
  await require_(deps, invoice(organizationId, invoiceId));
  const payment = { id: newId('pay'), amount_cents: amountCents, paid_at: iso(deps) };
  return found(await workOrdersStore(deps).appendPayment(invoice(organizationId, invoiceId), payment), what(invoice(organizationId, invoiceId)));
}

// ---- bookings ----
export async function createBooking(deps: Deps, organizationId: string, input: { startsAt: string; service?: string; clientId?: string; notes?: string }): Promise<Item> {
  await requireOrganization(deps, organizationId);
  const errors: FieldError[] = [];
  const startsAt = isoOrFail('starts_at', input.startsAt, errors);
  if (!startsAt && !errors.length) errors.push({ field: 'starts_at', message: 'is required' });
  fail(errors);
  const id = newId('bkg');
  return create(deps, { kind: 'booking', organizationId, id }, {
    entity: 'booking', id, organization_id: organizationId, starts_at: startsAt,
    ...(input.service ? { service: input.service } : {}), ...(input.clientId ? { client_id: input.clientId } : {}), ...(input.notes ? { notes: input.notes } : {}),
    created_at: iso(deps),
  });
}
