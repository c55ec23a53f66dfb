/**
 * What receivers see of each CRM record in `data.object` (docs/events.md): one zod schema per entity,
 * and `toPublic`, which turns a stored item into exactly that shape.
 *
 * The schemas are an allow-list, not a deny-list: a payload carries the documented fields and
 * nothing else. Storage attributes (`pk`, `sk`, `gsi*`, `entity`, `expiresAt`), the client's SMS
 * consent proof (IP address, user agent, key id) and any attribute the CRM application keeps for
 * itself never reach a receiver, and adding a public field is a deliberate change here (allowed
 * within an api_version, see docs/events.md).
 */
// A namespace import, not `{ z }`: esbuild can then drop the parts of zod we do not use (≈85 KB instead of ≈450 KB).
import * as z from 'zod';
import { WORK_ORDER_STATUSES, type PublicClient, type SameShape } from '../platform/crm-fields.js';

const iso = () => z.iso.datetime();
const timestamps = {
  created_at: iso().describe('When the record was created (ISO 8601, UTC)'),
  updated_at: iso().describe('When the record last changed'),
};

export const recordSchemas = {
  client: z.object({
    id: z.string().describe('Client id, `cli_…`'),
    organization_id: z.string(),
    status: z.string().describe('`lead` when created by the lead endpoint; afterwards whatever the CRM sets'),
    source: z.string().optional().describe('`api` (lead endpoint) or `crm`'),
    first_name: z.string().optional(),
    last_name: z.string().optional(),
    email: z.string().optional().describe('Lower-cased'),
    phone: z.string().optional().describe('E.164 where it parsed, else as given'),
    address: z.string().optional(),
    service: z.string().optional().describe('The service asked for'),
    notes: z.string().optional(),
    sms_consent: z.boolean().describe('Whether the client agreed to text messages; the proof of consent is never sent'),
    custom_fields: z.record(z.string(), z.union([z.string(), z.number(), z.boolean()])).optional().describe('Scalar values captured with the lead'),
    possible_duplicate_of: z.string().optional().describe('The earlier client with the same e-mail or phone, when the organization flags duplicates (docs/leads.md)'),
    submission_count: z.number().int().optional().describe('Lead submissions the client holds: one more per lead merged into it (the `merge` policy)'),
    ...timestamps,
  }),
  work_order: z.object({
    id: z.string().describe('Work order id, `wo_…`'),
    organization_id: z.string(),
    client_id: z.string().optional(),
    title: z.string(),
    status: z.enum(WORK_ORDER_STATUSES),
    scheduled_for: iso().optional().describe('When the work is planned'),
    ...timestamps,
  }),
  invoice: z.object({
    id: z.string().describe('Invoice id, `inv_…`'),
    organization_id: z.string(),
    work_order_id: z.string().optional(),
    client_id: z.string().optional(),
    amount_cents: z.number().int().describe('Total in the smallest unit of the currency'),
    currency: z.string().length(3).describe('ISO 4217 code, e.g. `USD`'),
    sent_at: iso().optional().describe('When the invoice was sent to the client'),
    payments: z.array(z.object({ id: z.string(), amount_cents: z.number().int(), paid_at: iso() })).describe('Payments recorded, oldest first'),
    paid: z.boolean().optional().describe('Set by the CRM when the invoice is settled in full'),
    ...timestamps,
  }),
  booking: z.object({
    id: z.string().describe('Booking id, `bkg_…`'),
    organization_id: z.string(),
    client_id: z.string().optional(),
    service: z.string().optional(),
    starts_at: iso().describe('Start of the booked slot'),
    notes: z.string().optional(),
    created_at: iso().describe('When the booking was made'),
  }),
};

// The public client is the stored one without its consent proof (platform/crm-fields.ts): the build fails if they part.
const publicClientIsTheClient: SameShape<z.output<typeof recordSchemas.client>, PublicClient> = true;
void publicClientIsTheClient;

export type Entity = keyof typeof recordSchemas;
export const entities = Object.keys(recordSchemas) as Entity[];
export const isEntity = (value: unknown): value is Entity => typeof value === 'string' && Object.hasOwn(recordSchemas, value);

/** Fields a receiver can count on even where the CRM left them out of the item. */
const normalize: Partial<Record<Entity, Record<string, (value: unknown) => unknown>>> = {
  // docs/leads.md: a client whose sms_consent is not true carries `sms_consent: false`.
  client: { sms_consent: (v) => v === true },
  invoice: { payments: (v) => v ?? [] },
};

/**
 * The public object of a stored item: the schema's fields in the schema's order (a stable, readable
 * order whatever order DynamoDB returns attributes in). Absent and null attributes are left out.
 */
export function toPublic(entity: Entity, item: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const field of Object.keys(recordSchemas[entity].shape)) {
    const fix = normalize[entity]?.[field];
    const value = fix ? fix(item[field]) : item[field];
    if (value !== undefined && value !== null) out[field] = value;
  }
  return out;
}
