/**
 * The lead contract (docs/leads.md) as zod schemas: the one source for validation and for the OpenAPI
 * document (functions/core/intake/openapi.ts). Form tools send empty strings for blank fields; those count
 * as absent.
 */
// zod/mini, not classic zod: its functional API tree-shakes, so the bundle carries only the parts
// it uses (settings.ts says why). Same validation and messages as the classic API.
import * as z from '../platform/zod-mini.js';
// The core API with our own copy of the `min` metadata, formats left out (scripts/gen-phone-metadata.ts).
import { parsePhoneNumberFromString } from 'libphonenumber-js/core';
import { phoneMetadata } from './phone-metadata.js';
import { validationFailed, type FieldError } from '../platform/errors.js';
import { codePointLength } from '../platform/model.js';
import type { Client, ClientFields, SameShape } from '../platform/crm-fields.js';

export const MAX_BODY_BYTES = 64 * 1024;
const MAX_CUSTOM_FIELDS = 50;
const CUSTOM_KEY = /^[A-Za-z0-9_.-]{1,64}$/;
/** Names that could reach an object's prototype if ever used as plain-object keys. */
const FORBIDDEN_KEYS = new Set(['__proto__', 'constructor', 'prototype']);

/**
 * C0 and C1 control characters except tab and newline, and the bidi embeddings, overrides and
 * isolates (U+202A–202E, U+2066–2069): they would be stored and later rendered by an admin's
 * terminal or a UI (a hidden escape sequence, text that reads backwards). They are removed.
 */
// Bidi marks (U+061C, U+200E, U+200F) reorder text as overrides do; U+2028/U+2029 break lines in UIs and JS.
// eslint-disable-next-line no-control-regex -- matching control characters is the point
const UNSAFE = /[\u0000-\u0008\u000B-\u001F\u007F-\u009F\u061C\u200E\u200F\u2028\u2029\u202A-\u202E\u2066-\u2069]/g;
/** Single-line fields: tabs and line breaks become a space, other unsafe characters go. */
export const cleanLine = (s: string) => s.replace(/[\t\r\n\u2028\u2029]+/g, ' ').replace(UNSAFE, '');
/** Multi-line fields (notes, address, custom values): newlines (CRLF normalized) and tabs stay. */
export const cleanMultiline = (s: string) => s.replace(/\r\n?|[\u2028\u2029]/g, '\n').replace(UNSAFE, '');

const blankToUndefined = (v: unknown) => (typeof v === 'string' && v.trim() === '' ? undefined : v);
/** `schema` with a description (for the OpenAPI document). */
const described = <T extends z.ZodMiniType>(schema: T, description: string) => schema.check(z.describe(description));
/** Classic zod's `preprocess`: `fn` runs on the raw value, then `schema` validates its result. */
const preprocess = <T extends z.ZodMiniType>(fn: (v: unknown) => unknown, schema: T) => z.pipe(z.transform(fn), schema);
/** A string of at most `max` code points; the OpenAPI document says maxLength, which JSON Schema counts in code points too. */
const bounded = (max: number) =>
  z.string().check(z.trim(), z.refine((s) => codePointLength(s) <= max, `must be at most ${max} characters`), z.meta({ maxLength: max }));
const text = (max: number, clean: (s: string) => string = cleanLine) =>
  preprocess((v) => blankToUndefined(typeof v === 'string' ? clean(v) : v), z.optional(bounded(max)));
const scalar = z.union([bounded(1000), z.number(), z.boolean()]);

export const leadRequestSchema = described(
  z.catchall(z.object({
    first_name: described(text(100), 'Given name'),
    last_name: described(text(100), 'Family name'),
    name: described(text(201), 'Full name, split into first and last at the first whitespace; an alternative to first_name/last_name'),
    email: described(preprocess(blankToUndefined, z.optional(z.pipe(bounded(254), z.email('must be a valid e-mail address')))), 'E-mail address, stored lower-cased'),
    phone: described(text(32), 'Normalized to E.164 where it parses'),
    notes: text(5000, cleanMultiline),
    address: text(500, cleanMultiline),
    service: described(text(200), 'The service asked for'),
    sms_consent: described(
      preprocess((v) => (v === 'true' ? true : v === 'false' ? false : blankToUndefined(v)), z.optional(z.boolean('must be true or false'))),
      'Whether the lead agreed to text messages (the strings "true"/"false" are accepted too); default false',
    ),
    sms_consent_source: described(text(500), 'Where and how consent was given; required when sms_consent is true'),
    custom_fields: described(z.optional(z.record(z.string(), z.nullable(scalar))), 'Up to 50 scalar values; unknown top-level scalar properties are collected here too'),
  }), z.unknown()),
  'A lead: at least one of first_name, last_name or name',
);

/** The stored client as the API returns it (201 body): these fields and no others. */
export const clientSchema = described(
  z.strictObject({
    id: described(z.string(), 'Client id, `cli_…`'),
    organization_id: z.string(),
    status: z.literal('lead'),
    source: z.literal('api'),
    first_name: z.optional(z.string()),
    last_name: z.optional(z.string()),
    email: z.optional(z.string()),
    phone: described(z.optional(z.string()), 'E.164 when it parsed, else as sent'),
    notes: z.optional(z.string()),
    address: z.optional(z.string()),
    service: z.optional(z.string()),
    sms_consent: z.boolean(),
    sms_consent_proof: described(
      z.optional(z.object({ source: z.string(), captured_at: z.iso.datetime(), ip: z.optional(z.string()), user_agent: z.optional(z.string()), key_id: z.string() })),
      'Present when sms_consent is true: where, when and from whom consent was captured',
    ),
    custom_fields: z.optional(z.record(z.string(), z.union([z.string(), z.number(), z.boolean()]))),
    possible_duplicate_of: described(z.optional(z.string()), 'The earlier client with the same e-mail or phone (the `flag` policy; answered to secret keys only)'),
    submission_count: described(z.optional(z.number()), 'Lead submissions the client holds (1 for a new client)'),
    created_at: z.iso.datetime(),
    updated_at: z.iso.datetime(),
  }),
  'A client with status `lead`',
);

/** A validated lead: the client's fields, and where consent was given (kept as the consent proof). */
export type LeadInput = ClientFields & { sms_consent_source?: string };

// The 201 body is the stored client (platform/crm-fields.ts): the build fails if they part.
const clientSchemaIsTheClient: SameShape<z.output<typeof clientSchema>, Client<'lead', 'api'>> = true;
void clientSchemaIsTheClient;

const known = new Set(Object.keys(leadRequestSchema.shape));

/** Numbers DynamoDB and JavaScript both hold exactly (DynamoDB refuses some doubles outright). */
function storableNumber(value: number): boolean {
  const size = Math.abs(value);
  return Number.isFinite(value) && size <= Number.MAX_SAFE_INTEGER && (size === 0 || size >= 1e-9);
}

function normalizePhone(raw: string): string {
  const parsed = parsePhoneNumberFromString(raw, 'US', phoneMetadata);
  return parsed?.isValid() ? parsed.number : raw;
}

/** A UTF-16 surrogate standing alone (`"\\ud800"` in JSON): not a character, refused by strict JSON parsers downstream. */
const LONE_SURROGATE = /\p{Cs}/u;

/** Every field, at any depth, whose name or text holds a lone surrogate. */
function loneSurrogates(value: unknown, field: string, out: FieldError[]): FieldError[] {
  if (typeof value === 'string') {
    if (LONE_SURROGATE.test(value)) out.push({ field, message: 'holds a lone UTF-16 surrogate (not a character)' });
  } else if (value && typeof value === 'object') {
    for (const [k, v] of Object.entries(value)) {
      const name = field ? `${field}.${k}` : k;
      if (LONE_SURROGATE.test(k)) out.push({ field: name, message: 'the field name holds a lone UTF-16 surrogate (not a character)' });
      loneSurrogates(v, name, out);
    }
  }
  return out;
}

/** Validates a parsed JSON body into a lead, or throws a 422 naming every bad field. */
export function parseLead(body: unknown): LeadInput {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw validationFailed([{ field: '', message: 'the body must be a JSON object' }]);
  }
  // First and alone: such text must not reach the rules below, a stored item or a webhook.
  const unpaired = loneSurrogates(body, '', []);
  if (unpaired.length > 0) throw validationFailed(unpaired);
  const errors: FieldError[] = [];
  const result = leadRequestSchema.safeParse(body);
  if (!result.success) {
    for (const issue of result.error.issues) errors.push({ field: issue.path.map(String).join('.'), message: issue.message });
  }
  // Custom fields: the object, then unknown top-level scalars (flat payloads from form tools).
  const custom = new Map<string, string | number | boolean>();
  const addCustom = (key: string, value: unknown, field: string) => {
    if (value === null || value === undefined || value === '') return;
    if (FORBIDDEN_KEYS.has(key) || !CUSTOM_KEY.test(key)) {
      errors.push({ field, message: 'custom field names must match [A-Za-z0-9_.-]{1,64} and not be __proto__, constructor or prototype' });
    } else if (typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean') {
      if (typeof value === 'string' && codePointLength(cleanMultiline(value)) > 1000) errors.push({ field, message: 'must be at most 1000 characters' });
      else if (typeof value === 'number' && !storableNumber(value)) {
        errors.push({ field, message: `numbers must be within ±${Number.MAX_SAFE_INTEGER} and not smaller than 1e-9 in size; send other values as strings` });
      }
      else custom.set(key, typeof value === 'string' ? cleanMultiline(value) : value);
    } else {
      errors.push({ field, message: 'unknown fields must be a string, number or boolean (use custom_fields for extra data)' });
    }
  };
  const raw = body as Record<string, unknown>;
  const customObject = Object.prototype.hasOwnProperty.call(raw, 'custom_fields') ? raw.custom_fields : undefined;
  if (customObject && typeof customObject === 'object' && !Array.isArray(customObject)) {
    for (const [k, v] of Object.entries(customObject)) addCustom(k, v, `custom_fields.${k}`);
  }
  for (const [k, v] of Object.entries(raw)) if (!known.has(k)) addCustom(k, v, k);
  if (custom.size > MAX_CUSTOM_FIELDS) errors.push({ field: 'custom_fields', message: `at most ${MAX_CUSTOM_FIELDS} custom fields` });

  // Cross-field rules are checked on the raw body too, so one response names every problem.
  const present = (k: string) => typeof raw[k] === 'string' ? (raw[k] as string).trim() !== '' : raw[k] !== undefined && raw[k] !== null;
  const rawConsent = raw.sms_consent === true || raw.sms_consent === 'true';
  if (!present('first_name') && !present('last_name') && !present('name')) errors.push({ field: 'name', message: 'a name is required (first_name, last_name or name)' });
  if (rawConsent && !present('sms_consent_source')) errors.push({ field: 'sms_consent_source', message: 'is required when sms_consent is true' });
  if (rawConsent && !present('phone')) errors.push({ field: 'phone', message: 'is required when sms_consent is true' });
  if (errors.length > 0 || !result.success) throw validationFailed(dedupe(errors));
  const data = result.data;

  let first = data.first_name;
  let last = data.last_name;
  if (!first && !last && data.name) {
    const [head, ...rest] = data.name.split(/\s+/);
    first = head;
    last = rest.join(' ') || undefined;
  }
  if (first && codePointLength(first) > 100) errors.push({ field: 'name', message: 'the first name must be at most 100 characters' });
  if (last && codePointLength(last) > 100) errors.push({ field: 'name', message: 'the last name must be at most 100 characters' });
  if (errors.length > 0) throw validationFailed(errors);
  const consent = data.sms_consent === true;

  return {
    ...(first ? { first_name: first } : {}),
    ...(last ? { last_name: last } : {}),
    ...(data.email ? { email: data.email.toLowerCase() } : {}),
    ...(data.phone ? { phone: normalizePhone(data.phone) } : {}),
    ...(data.notes ? { notes: data.notes } : {}),
    ...(data.address ? { address: data.address } : {}),
    ...(data.service ? { service: data.service } : {}),
    sms_consent: consent,
    ...(consent ? { sms_consent_source: data.sms_consent_source } : {}),
    ...(custom.size > 0 ? { custom_fields: Object.fromEntries(custom) } : {}),
  };
}

function dedupe(errors: FieldError[]): FieldError[] {
  const seen = new Set<string>();
  return errors.filter((e) => {
    const k = `${e.field}\u0000${e.message}`;
    return seen.has(k) ? false : (seen.add(k), true);
  });
}
