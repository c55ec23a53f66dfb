/**
 * The CRM's client and work-order statuses, described once for every stage that shows them: the
 * lead contract (intake/lead-schema.ts), the 201 body of the OpenAPI document, the events'
 * public objects (events/public-objects.ts) and the CRM-side writes (crm/entities.ts). The schemas
 * there keep their own descriptions and field order (the documents they render are published) and
 * are checked against these types at compile time (`SameShape`), so a field added in one place
 * and not the others fails the build.
 */

export type CustomFieldValue = string | number | boolean;

/** The client's own fields: what a lead gives it and the CRM may edit. */
export interface ClientFields {
  first_name?: string;
  last_name?: string;
  /** Lower-cased. */
  email?: string;
  /** E.164 where it parsed, else as given. */
  phone?: string;
  notes?: string;
  address?: string;
  service?: string;
  sms_consent: boolean;
  custom_fields?: Record<string, CustomFieldValue>;
}

/** Where, when and from whom SMS consent was captured; never sent to webhook receivers. */
export interface ConsentProof { source: string; captured_at: string; ip?: string; user_agent?: string; key_id: string }

/** A stored client as the API returns it. The lead endpoint creates `lead`s from `api`. */
export interface Client<Status extends string = string, Source extends string = string> extends ClientFields {
  id: string;
  organization_id: string;
  status: Status;
  source: Source;
  sms_consent_proof?: ConsentProof;
  /** The earlier client this one may duplicate (same e-mail or phone; the `flag` policy, docs/leads.md). */
  possible_duplicate_of?: string;
  /** Lead submissions this client holds: 1 when created, one more per submission merged into it. */
  submission_count?: number;
  created_at: string;
  updated_at: string;
}

/** What webhook receivers see of a client: no consent proof; `source` may be absent on items the CRM wrote. */
export type PublicClient = Omit<Client, 'sms_consent_proof' | 'source'> & { source?: string };

export const WORK_ORDER_STATUSES = ['scheduled', 'in_progress', 'completed', 'invoiced'] as const;
export type WorkOrderStatus = (typeof WORK_ORDER_STATUSES)[number];

/** `true` when A and B have the same keys, each optional alike and of the same type; a compile-time check. */
export type SameShape<A, B> =
  (<T>() => T extends Flat<A> ? 1 : 2) extends (<T>() => T extends Flat<B> ? 1 : 2) ? true : false;
type Flat<T> = T extends object ? { [K in keyof T]: Flat<T[K]> } : T;
