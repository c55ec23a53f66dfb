/**
 * The event catalog (DESIGN §10): names, aliases, the public shape of each entity, and one example
 * payload per event. docs/events.md is generated from this module (`npm run docs:events`).
 */
// A namespace import, not `{ z }`: esbuild can then drop the parts of zod we do not use (≈85 KB instead of ≈450 KB).
import * as z from 'zod';
import { validationFailed } from '../errors.js';
import type { EventPayload } from '../model.js';

export const API_VERSION = '2026-11-01';

export const eventTypes = [
  'client.created', 'client.updated', 'client.deleted',
  'work_order.created', 'work_order.status_changed', 'work_order.completed', 'work_order.deleted',
  'invoice.created', 'invoice.sent', 'invoice.paid',
  'booking.received',
  'webhook.test',
] as const;
export type EventType = (typeof eventTypes)[number];

/** Underscore aliases accepted in subscriptions (DESIGN §10). */
export const aliases: Record<string, EventType> = {
  client_created: 'client.created',
  client_updated: 'client.updated',
  work_order_created: 'work_order.created',
  work_order_completed: 'work_order.completed',
  invoice_sent: 'invoice.sent',
  invoice_paid: 'invoice.paid',
  booking_received: 'booking.received',
};

export function normalizeEventName(name: string): EventType | undefined {
  const trimmed = name.trim();
  if ((eventTypes as readonly string[]).includes(trimmed)) return trimmed as EventType;
  return aliases[trimmed];
}

/** `all` (or `*`) or a list of names in either form; unknown names are refused, naming the valid ones. */
export function parseSubscription(input: string | string[]): string[] {
  const names = (Array.isArray(input) ? input : input.split(',')).map((n) => n.trim()).filter(Boolean);
  if (names.length === 0) throw validationFailed([{ field: 'events', message: 'give `all` or at least one event name' }]);
  if (names.some((n) => n === 'all' || n === '*')) return ['*'];
  const unknown = names.filter((n) => !normalizeEventName(n));
  if (unknown.length > 0) {
    throw validationFailed([{ field: 'events', message: `unknown event ${unknown.join(', ')}; valid: all, ${eventTypes.filter((t) => t !== 'webhook.test').join(', ')} (or their underscore aliases)` }]);
  }
  return [...new Set(names.map((n) => normalizeEventName(n)!))];
}

export const isSubscribed = (events: string[], type: string) => type === 'webhook.test' || events.includes('*') || events.includes(type);

// The public objects of each entity, as receivers see them in `data.object`.
const timestamps = { created_at: z.iso.datetime(), updated_at: z.iso.datetime() };
export const schemas = {
  client: z.object({
    id: z.string(), organization_id: z.string(), status: z.string(), source: z.string().optional(),
    first_name: z.string().optional(), last_name: z.string().optional(), email: z.string().optional(), phone: z.string().optional(),
    notes: z.string().optional(), address: z.string().optional(), service: z.string().optional(), sms_consent: z.boolean(),
    custom_fields: z.record(z.string(), z.union([z.string(), z.number(), z.boolean()])).optional(),
    ...timestamps,
  }),
  work_order: z.object({
    id: z.string(), organization_id: z.string(), client_id: z.string().optional(), title: z.string(),
    status: z.enum(['scheduled', 'in_progress', 'completed', 'invoiced']), scheduled_for: z.iso.datetime().optional(),
    ...timestamps,
  }),
  invoice: z.object({
    id: z.string(), organization_id: z.string(), work_order_id: z.string().optional(), client_id: z.string().optional(),
    amount_cents: z.number().int(), currency: z.string().length(3), sent_at: z.iso.datetime().optional(),
    payments: z.array(z.object({ id: z.string(), amount_cents: z.number().int(), paid_at: z.iso.datetime() })),
    ...timestamps,
  }),
  booking: z.object({
    id: z.string(), organization_id: z.string(), client_id: z.string().optional(), service: z.string().optional(),
    starts_at: z.iso.datetime(), notes: z.string().optional(), created_at: z.iso.datetime(),
  }),
  webhook_test: z.object({ message: z.string() }),
};
export type Entity = 'client' | 'work_order' | 'invoice' | 'booking';

/** Storage attributes and internal data that never leave the service in a payload. */
const PRIVATE = new Set(['pk', 'sk', 'gsi1pk', 'gsi1sk', 'entity', 'expiresAt', 'sms_consent_proof']);
/** Field order in payloads: a stable, readable order instead of DynamoDB's attribute order. */
const ORDER = ['id', 'organization_id', 'status', 'source', 'title', 'first_name', 'last_name', 'email', 'phone', 'address', 'service',
  'client_id', 'work_order_id', 'amount_cents', 'currency', 'payments', 'sent_at', 'starts_at', 'scheduled_for', 'notes',
  'sms_consent', 'custom_fields', 'created_at', 'updated_at'];
const rank = (key: string) => (ORDER.includes(key) ? ORDER.indexOf(key) : ORDER.length);
export function toPublic(item: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(item).filter(([k]) => !PRIVATE.has(k)).sort(([a], [b]) => rank(a) - rank(b) || a.localeCompare(b)));
}

export function webhookTestEvent(organizationId: string, id: string, at: Date): EventPayload {
  return {
    id, type: 'webhook.test', api_version: API_VERSION, timestamp: at.toISOString(), organization_id: organizationId,
    data: { object: { message: 'This is a test event from the CRM. Your endpoint received and verified it.' } },
  };
}

// ---- Examples (docs/events.md and the tests) ----
const org = 'org_8fK2mQ7xLp3T';
const at = '2026-11-01T14:03:27.000Z';
const client = { id: 'cli_Q1w2E3r4T5y6U7', organization_id: org, status: 'lead', source: 'api', first_name: 'Ada', last_name: 'Lovelace', email: 'ada@example.com', phone: '+14155550100', service: 'Leaky faucet', sms_consent: false, created_at: at, updated_at: at };
const workOrder = { id: 'wo_A9s8D7f6G5h4J3', organization_id: org, client_id: client.id, title: 'Replace kitchen faucet', status: 'scheduled', scheduled_for: '2026-11-03T09:00:00.000Z', created_at: at, updated_at: at };
const invoice = { id: 'inv_Z1x2C3v4B5n6M7', organization_id: org, work_order_id: workOrder.id, client_id: client.id, amount_cents: 18500, currency: 'USD', payments: [] as { id: string; amount_cents: number; paid_at: string }[], created_at: at, updated_at: at };
const booking = { id: 'bkg_P0o9I8u7Y6t5R4', organization_id: org, client_id: client.id, service: 'Boiler check', starts_at: '2026-11-05T13:30:00.000Z', notes: 'Side gate code 4411', created_at: at };

export interface CatalogEntry { type: EventType; alias?: string; description: string; entity: keyof typeof schemas; example: EventPayload }
const example = (type: EventType, object: Record<string, unknown>, previous?: Record<string, unknown>): EventPayload => ({
  id: 'evt_3kTq9WcV2nLx8RbY1mZ4aP', type, api_version: API_VERSION, timestamp: at, organization_id: org, data: { object, ...(previous ? { previous } : {}) },
});
const aliasOf = (type: EventType) => Object.entries(aliases).find(([, t]) => t === type)?.[0];
const entry = (type: EventType, entity: keyof typeof schemas, description: string, payload: EventPayload): CatalogEntry =>
  ({ type, ...(aliasOf(type) ? { alias: aliasOf(type) } : {}), entity, description, example: payload });

export const catalog: CatalogEntry[] = [
  entry('client.created', 'client', 'A client was created: by the lead endpoint (status `lead`) or by the CRM.', example('client.created', client)),
  entry('client.updated', 'client', 'A visible field of a client changed. `previous` holds the old values of the changed fields (null where a field was absent).', example('client.updated', { ...client, status: 'active', updated_at: '2026-11-02T10:00:00.000Z' }, { status: 'lead' })),
  entry('client.deleted', 'client', 'A client was deleted by a user (expiry by TTL is not an event). `object` is the client as it was.', example('client.deleted', client)),
  entry('work_order.created', 'work_order', 'A work order was created.', example('work_order.created', workOrder)),
  entry('work_order.status_changed', 'work_order', 'A work order moved between `scheduled`, `in_progress`, `completed` and `invoiced`; `previous.status` is where it came from. Other edits of a work order emit nothing.', example('work_order.status_changed', { ...workOrder, status: 'in_progress' }, { status: 'scheduled' })),
  entry('work_order.completed', 'work_order', 'A work order became `completed` (sent together with `work_order.status_changed`).', example('work_order.completed', { ...workOrder, status: 'completed' }, { status: 'in_progress' })),
  entry('work_order.deleted', 'work_order', 'A work order was deleted by a user.', example('work_order.deleted', workOrder)),
  entry('invoice.created', 'invoice', 'An invoice was created.', example('invoice.created', invoice)),
  entry('invoice.sent', 'invoice', 'An invoice got its `sent_at` time (on creation or later).', example('invoice.sent', { ...invoice, sent_at: at })),
  entry('invoice.paid', 'invoice', 'A payment was recorded on an invoice; `previous.payments` is the list before it. One event per change that adds payments.', example('invoice.paid', { ...invoice, sent_at: at, payments: [{ id: 'pay_1', amount_cents: 18500, paid_at: at }] }, { payments: [] })),
  entry('booking.received', 'booking', 'A booking was made (online booking or by the team).', example('booking.received', booking)),
  entry('webhook.test', 'webhook_test', 'Sent by `crm webhooks test`, whatever the endpoint subscribes to.', webhookTestEvent(org, 'evt_3kTq9WcV2nLx8RbY1mZ4aP', new Date(at))),
];
