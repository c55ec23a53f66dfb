/**
 * The CRM-side records whose changes become events (docs/events.md): clients in the clients table;
 * work orders, invoices and bookings as typed items in the work-orders table. The CRM application
 * writes these; the `crm` CLI uses this module to produce every event by hand (docs/data-model.md).
 */
import { DeleteCommand, GetCommand, PutCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import type { Deps } from '../platform/deps.js';
import { notFound, validationFailed, type FieldError } from '../platform/errors.js';
import { newId } from '../platform/ids.js';
import { keys } from '../platform/model.js';
import { matchKeyOf } from '../platform/match-key.js';
import { WORK_ORDER_STATUSES, type ClientFields } from '../platform/crm-fields.js';
import { parseLead } from '../intake/lead-schema.js';
import { requireOrganization } from '../tenancy/organizations.js';

type Item = Record<string, unknown>;

const iso = (deps: Deps) => new Date(deps.now()).toISOString();
const fail = (errors: FieldError[]) => { if (errors.length) throw validationFailed(errors); };
const isoOrFail = (field: string, value: string | undefined, errors: FieldError[]) => {
  if (value === undefined) return undefined;
  const t = Date.parse(value);
  if (Number.isNaN(t)) errors.push({ field, message: 'must be an ISO 8601 date-time' });
  return Number.isNaN(t) ? undefined : new Date(t).toISOString();
};

async function put(deps: Deps, table: string, item: Item): Promise<Item> {
  await deps.doc.send(new PutCommand({ TableName: table, Item: item, ConditionExpression: 'attribute_not_exists(pk)' }));
  return item;
}

async function require_(deps: Deps, table: string, key: { pk: string; sk: string }, what: string): Promise<Item> {
  const { Item } = await deps.doc.send(new GetCommand({ TableName: table, Key: key, ConsistentRead: true }));
  if (!Item) throw notFound(`No ${what}.`);
  return Item;
}

/** Sets fields (undefined ones are left alone) and `updated_at`, removes `remove`; returns the new item. */
async function patch(deps: Deps, table: string, key: { pk: string; sk: string }, fields: Item, remove: string[] = []): Promise<Item> {
  const entries = Object.entries(fields).filter(([, v]) => v !== undefined);
  const names = Object.fromEntries([...entries.map(([k], i) => [`#f${i}`, k]), ...remove.map((k, i) => [`#r${i}`, k])]);
  const values = Object.fromEntries(entries.map(([, v], i) => [`:v${i}`, v]));
  const { Attributes } = await deps.doc.send(new UpdateCommand({
    TableName: table, Key: key,
    UpdateExpression: `SET ${[...entries.map((_, i) => `#f${i} = :v${i}`), '#u = :u'].join(', ')}${remove.length ? ` REMOVE ${remove.map((_, i) => `#r${i}`).join(', ')}` : ''}`,
    ConditionExpression: 'attribute_exists(pk)',
    ExpressionAttributeNames: { ...names, '#u': 'updated_at' },
    ExpressionAttributeValues: { ...values, ':u': iso(deps) },
    ReturnValues: 'ALL_NEW',
  }));
  return Attributes!;
}

async function remove(deps: Deps, table: string, key: { pk: string; sk: string }, what: string): Promise<Item> {
  const { Attributes } = await deps.doc.send(new DeleteCommand({ TableName: table, Key: key, ReturnValues: 'ALL_OLD' }));
  if (!Attributes) throw notFound(`No ${what}.`);
  return Attributes;
}

// ---- clients ----
export async function createClient(deps: Deps, organizationId: string, input: Record<string, unknown>, status = 'lead'): Promise<Item> {
  await requireOrganization(deps, organizationId);
  const lead = parseLead(input);
  const id = newId('cli');
  const at = iso(deps);
  const { sms_consent_source: _source, ...fields } = lead;
  // Indexed for duplicate matching like a lead's client (docs/data-model.md "match").
  const matchKey = matchKeyOf(organizationId, fields);
  return put(deps, deps.tables.clients, { ...keys.client(organizationId, id), entity: 'client', id, organization_id: organizationId, status, source: 'crm', ...fields, ...(matchKey ? { matchKey } : {}), created_at: at, updated_at: at });
}
export async function updateClient(deps: Deps, organizationId: string, clientId: string, fields: Pick<ClientFields, 'email' | 'phone' | 'notes' | 'first_name' | 'last_name'> & { status?: string }): Promise<Item> {
  const current = await require_(deps, deps.tables.clients, keys.client(organizationId, clientId), `client ${clientId} in ${organizationId}`);
  // A changed e-mail or phone moves the client's key in the match index (or takes it out).
  const matchKey = matchKeyOf(organizationId, { email: fields.email ?? current.email, phone: fields.phone ?? current.phone });
  const remove = !matchKey && current.matchKey ? ['matchKey'] : [];
  return patch(deps, deps.tables.clients, keys.client(organizationId, clientId), { ...fields, matchKey }, remove);
}
export const deleteClient = (deps: Deps, organizationId: string, clientId: string) =>
  remove(deps, deps.tables.clients, keys.client(organizationId, clientId), `client ${clientId} in ${organizationId}`);

// ---- work orders ----
export async function createWorkOrder(deps: Deps, organizationId: string, input: { title: string; clientId?: string; scheduledFor?: string }): Promise<Item> {
  await requireOrganization(deps, organizationId);
  const errors: FieldError[] = [];
  if (!input.title?.trim() || input.title.length > 200) errors.push({ field: 'title', message: 'must be 1 to 200 characters' });
  const scheduledFor = isoOrFail('scheduled_for', input.scheduledFor, errors);
  fail(errors);
  const id = newId('wo');
  const at = iso(deps);
  return put(deps, deps.tables.workOrders, {
    ...keys.workOrder(organizationId, id), entity: 'work_order', id, organization_id: organizationId, title: input.title.trim(), status: 'scheduled',
    ...(input.clientId ? { client_id: input.clientId } : {}), ...(scheduledFor ? { scheduled_for: scheduledFor } : {}), created_at: at, updated_at: at,
  });
}
export async function setWorkOrderStatus(deps: Deps, organizationId: string, workOrderId: string, status: string): Promise<Item> {
  if (!(WORK_ORDER_STATUSES as readonly string[]).includes(status)) fail([{ field: 'status', message: `must be one of ${WORK_ORDER_STATUSES.join(', ')}` }]);
  await require_(deps, deps.tables.workOrders, keys.workOrder(organizationId, workOrderId), `work order ${workOrderId} in ${organizationId}`);
  return patch(deps, deps.tables.workOrders, keys.workOrder(organizationId, workOrderId), { status });
}
export const deleteWorkOrder = (deps: Deps, organizationId: string, workOrderId: string) =>
  remove(deps, deps.tables.workOrders, keys.workOrder(organizationId, workOrderId), `work order ${workOrderId} in ${organizationId}`);

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
  return put(deps, deps.tables.workOrders, {
    ...keys.invoice(organizationId, id), entity: 'invoice', id, organization_id: organizationId, amount_cents: input.amountCents, currency, payments: [],
    ...(input.workOrderId ? { work_order_id: input.workOrderId } : {}), ...(input.clientId ? { client_id: input.clientId } : {}),
    ...(input.sent ? { sent_at: at } : {}), created_at: at, updated_at: at,
  });
}
export async function sendInvoice(deps: Deps, organizationId: string, invoiceId: string): Promise<Item> {
  const current = await require_(deps, deps.tables.workOrders, keys.invoice(organizationId, invoiceId), `invoice ${invoiceId} in ${organizationId}`);
  if (current.sent_at) return current; // sending twice is not a second `invoice.sent`
  return patch(deps, deps.tables.workOrders, keys.invoice(organizationId, invoiceId), { sent_at: iso(deps) });
}
export async function recordPayment(deps: Deps, organizationId: string, invoiceId: string, amountCents: number): Promise<Item> {
  if (!Number.isSafeInteger(amountCents) || amountCents <= 0) fail([{ field: 'amount', message: 'must be a positive number of cents' }]);
  await require_(deps, deps.tables.workOrders, keys.invoice(organizationId, invoiceId), `invoice ${invoiceId} in ${organizationId}`);
  const payment = { id: newId('pay'), amount_cents: amountCents, paid_at: iso(deps) };
  const { Attributes } = await deps.doc.send(new UpdateCommand({
    TableName: deps.tables.workOrders, Key: keys.invoice(organizationId, invoiceId),
    UpdateExpression: 'SET payments = list_append(if_not_exists(payments, :empty), :p), updated_at = :u',
    ConditionExpression: 'attribute_exists(pk)',
    ExpressionAttributeValues: { ':p': [payment], ':empty': [], ':u': payment.paid_at },
    ReturnValues: 'ALL_NEW',
  }));
  return Attributes!;
}

// ---- bookings ----
export async function createBooking(deps: Deps, organizationId: string, input: { startsAt: string; service?: string; clientId?: string; notes?: string }): Promise<Item> {
  await requireOrganization(deps, organizationId);
  const errors: FieldError[] = [];
  const startsAt = isoOrFail('starts_at', input.startsAt, errors);
  if (!startsAt && !errors.length) errors.push({ field: 'starts_at', message: 'is required' });
  fail(errors);
  const id = newId('bkg');
  return put(deps, deps.tables.workOrders, {
    ...keys.booking(organizationId, id), entity: 'booking', id, organization_id: organizationId, starts_at: startsAt,
    ...(input.service ? { service: input.service } : {}), ...(input.clientId ? { client_id: input.clientId } : {}), ...(input.notes ? { notes: input.notes } : {}),
    created_at: iso(deps),
  });
}
