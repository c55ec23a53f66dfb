/**
 * The event catalog (docs/events.md): one entry per event (names and aliases from
 * delivery/subscriptions.ts) with its payload schema and an example payload. The public shape of
 * each record is in public-objects.ts; how stream records become events is in derive.ts. docs/events.md is generated from these (`npm run docs:events`).
 */
import { createHash } from 'node:crypto';
// A namespace import, not `{ z }`: esbuild can then drop the parts of zod we do not use (≈85 KB instead of ≈450 KB).
import * as z from 'zod';
import { newId } from '../platform/ids.js';
import type { EventPayload } from '../platform/model.js';
import { aliasOf, type EventType } from '../delivery/subscriptions.js';
import { recordSchemas, toPublic, type Entity } from './public-objects.js';

export { toPublic, type Entity } from './public-objects.js';

/** The payload schema of every event sent today; see "Versioning" in docs/events.md. */
export const API_VERSION = '2026-11-01';

/** `data.object` schemas by the `entity` of catalog entries: the four CRM records and the test event. */
export const schemas = {
  ...recordSchemas,
  webhook_test: z.object({ message: z.string() }),
};
export type PayloadEntity = keyof typeof schemas;

/** A `webhook.test` event (`crm webhooks test`): a fresh id each time, so each test is its own delivery. */
export function webhookTestEvent(organizationId: string, now: Date, id: string = newId('evt', 22)): EventPayload {
  return {
    id, type: 'webhook.test', api_version: API_VERSION, timestamp: now.toISOString(), organization_id: organizationId,
    data: { object: { message: 'This is a test event from the CRM. Your endpoint received and verified it.' } },
  };
}

// ---- The catalog, with examples (docs/events.md, `crm events catalog` and the tests) ----

export interface CatalogEntry {
  type: EventType;
  alias?: string;
  /** Which schema `data.object` follows. */
  entity: PayloadEntity;
  /** When it is emitted, for receivers. */
  description: string;
  example: EventPayload;
}

const org = 'org_8fK2mQ7xLp3T';
const at = '2026-11-01T14:03:27.000Z';
const later = '2026-11-02T09:15:00.000Z';
const client = { id: 'cli_Q1w2E3r4T5y6U7', organization_id: org, status: 'lead', source: 'api', first_name: 'Ada', last_name: 'Lovelace', email: 'ada@example.com', phone: '+14155550100', service: 'Leaky faucet', sms_consent: true, custom_fields: { utm_source: 'google' }, created_at: at, updated_at: at };
const workOrder = { id: 'wo_A9s8D7f6G5h4J3', organization_id: org, client_id: client.id, title: 'Replace kitchen faucet', status: 'scheduled', scheduled_for: '2026-11-03T09:00:00.000Z', created_at: at, updated_at: at };
const invoice = { id: 'inv_Z1x2C3v4B5n6M7', organization_id: org, work_order_id: workOrder.id, client_id: client.id, amount_cents: 18500, currency: 'USD', payments: [] as unknown[], created_at: at, updated_at: at };
const booking = { id: 'bkg_P0o9I8u7Y6t5R4', organization_id: org, client_id: client.id, service: 'Boiler check', starts_at: '2026-11-05T13:30:00.000Z', notes: 'Side gate code 4411', created_at: at };

/** Example ids look like real ones and differ per event. */
const exampleId = (type: string) => 'evt_' + createHash('sha256').update(`example|${type}`).digest('base64url').slice(0, 22);

function entry(type: EventType, entity: Entity, description: string, object: Record<string, unknown>, previous?: Record<string, unknown>): CatalogEntry {
  const alias = aliasOf(type);
  const timestamp = typeof object.updated_at === 'string' ? object.updated_at : at;
  return {
    type, ...(alias ? { alias } : {}), entity, description,
    example: { id: exampleId(type), type, api_version: API_VERSION, timestamp, organization_id: org, data: { object: toPublic(entity, object), ...(previous ? { previous } : {}) } },
  };
}

export const catalog: readonly CatalogEntry[] = [
  entry('client.created', 'client', 'A client was created: by the lead endpoint (status `lead`, source `api`) or in the CRM.', client),
  entry('client.updated', 'client', 'A visible field of a client changed. `previous` holds the old value of each changed field (`null` where it was absent). A change of `updated_at` alone, or of data that is never sent, is not an event.',
    { ...client, status: 'customer', email: 'ada@lovelace.example', updated_at: later }, { status: 'lead', email: 'ada@example.com' }),
  entry('client.deleted', 'client', 'A user deleted a client. `object` is the client as it was. Expiry by TTL is not an event.', client),
  entry('work_order.created', 'work_order', 'A work order was created (and `work_order.completed` follows if it was created completed).', workOrder),
  entry('work_order.status_changed', 'work_order', 'A work order moved between `scheduled`, `in_progress`, `completed` and `invoiced`; `previous.status` is where it came from. Other edits of a work order are not events.',
    { ...workOrder, status: 'in_progress', updated_at: later }, { status: 'scheduled' }),
  entry('work_order.completed', 'work_order', 'A work order became `completed`: sent after its `work_order.status_changed`, with the same `previous`.',
    { ...workOrder, status: 'completed', updated_at: later }, { status: 'in_progress' }),
  entry('work_order.deleted', 'work_order', 'A user deleted a work order. `object` is the work order as it was.', workOrder),
  entry('invoice.created', 'invoice', 'An invoice was created (followed by `invoice.sent` and `invoice.paid` if it was created sent or with payments).', invoice),
  entry('invoice.sent', 'invoice', 'An invoice got its `sent_at` time, on creation or later. Changing `sent_at` once set is not a second event.', { ...invoice, sent_at: later, updated_at: later }),
  entry('invoice.paid', 'invoice', 'A payment was recorded on an invoice. One event per change that adds payments, however many it adds; `previous.payments` is the list before it, so the new payments are those not in it.',
    { ...invoice, sent_at: at, payments: [{ id: 'pay_K8j7H6g5F4d3S2', amount_cents: 18500, paid_at: later }], paid: true, updated_at: later }, { payments: [] }),
  entry('booking.received', 'booking', 'A booking was made, online or by the team. Later changes to a booking are not events.', booking),
  {
    type: 'webhook.test', entity: 'webhook_test', description: 'Sent by `crm webhooks test`, whatever the endpoint subscribes to. Its id is new each time.',
    example: webhookTestEvent(org, new Date(at), exampleId('webhook.test')),
  },
];
