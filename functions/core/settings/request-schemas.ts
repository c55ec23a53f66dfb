/**
 * The settings API's request bodies and queries as zod schemas, by route (`METHOD resource`, the
 * resources of functions/front-door/routes.ts): the one source for validation (the handler parses
 * every request with its route's schemas before the operation runs: request-fields.ts readRequest)
 * and for the request half of the OpenAPI document (openapi.ts), so the document states exactly
 * what the server refuses: unknown fields, bounds, formats. What needs the organization's data or
 * the domain's rules (an SSRF-blocked address, a publishable key's origins, the 10 headers an
 * endpoint may hold, a time in the future) is still the domain's, after this.
 */
// zod/mini like the lead schemas (intake/lead-schema.ts): the settings bundle carries only the parts used.
import * as z from '../platform/zod-mini.js';
import { DomainError } from '../platform/errors.js';
import type { DeliveryStatusView } from './views.js';
import { aliases, eventTypes } from '../delivery/subscriptions.js';
import { NOTICE_KINDS } from '../notify/notice.js';
import { MAX_RECIPIENTS } from '../notify/recipients.js';
import { MAX_CUSTOM_HEADERS, MAX_HEADER_NAME_LENGTH, MAX_HEADER_VALUE_LENGTH, MAX_RATE_LIMIT_PER_SECOND, validateOptions } from '../delivery/endpoint-fields.js';

/** The longest cursor any of the settings API's lists hands out (base64url): a longer one is refused before it is parsed. */
export const MAX_CURSOR_CHARS = 200;
export const MAX_GRACE_HOURS = 168;
/** A search is a delivery or event id; anything longer is not one. */
export const MAX_SEARCH_CHARS = 100;
/** As tenancy/api-keys.ts keyPolicy refuses beyond (it says why each is bounded). */
const MAX_ORIGINS = 20;
const MAX_DAILY_CAP = 1_000_000;
const MAX_PER_IP_LIMIT = 1000;
/** As delivery/endpoints.ts refuses beyond. */
const MAX_DESCRIPTION_CHARS = 500;
const MAX_URL_CHARS = 2000;

/** `schema` with a description (for the OpenAPI document). */
const described = <T extends z.ZodMiniType>(schema: T, description: string) => schema.check(z.describe(description));
/** One message whether the field is missing or wrong (zod's own would read "Invalid input: expected string, received undefined"). */
const says = (required: string, invalid: string) => ({ error: (issue: { input?: unknown }) => (issue.input === undefined ? required : invalid) });
const int = (message: string, min: number, max: number) => z.number(message).check(z.int(message), z.minimum(min, message), z.maximum(max, message));
const time = () => z.iso.datetime({ offset: true, error: 'must be an ISO-8601 time (2026-11-01T09:00:00Z)' });
const text = (max: number, message = `must be text of at most ${max} characters`) => z.string(message).check(z.maxLength(max, message));
const grace = (defaultHours: number) => z.strictObject({
  grace_hours: described(
    z.optional(z.number(`must be 0 to ${MAX_GRACE_HOURS} hours`).check(z.minimum(0, `must be 0 to ${MAX_GRACE_HOURS} hours`), z.maximum(MAX_GRACE_HOURS, `must be 0 to ${MAX_GRACE_HOURS} hours`), z.meta({ default: defaultHours }))),
    'Hours the old one keeps working (0: it stops now)',
  ),
});

/** Names an endpoint subscribes with: dotted or their alias, or `all` / `*` (delivery/subscriptions.ts). */
const eventNames = [...eventTypes, ...Object.keys(aliases)] as [string, ...string[]];
const eventName = z.enum(eventNames, 'must be an event name of the catalog (GET /api/settings/events), dotted or its alias');
const subscription = described(
  z.array(z.enum([...eventNames, 'all', '*'], 'must be an event name of the catalog, or all'), says('is required: a non-empty list of event names', 'must be a non-empty list of event names'))
    .check(z.minLength(1, 'must be a non-empty list of event names')),
  'Event names (dotted or their alias), or ["all"] / ["*"]: every event',
);
const endpointUrl = z.url({ ...says('is required: an https URL', 'must be an absolute URL'), protocol: /^https?$/ }).check(z.maxLength(MAX_URL_CHARS, `must be at most ${MAX_URL_CHARS} characters`));

const headerValue = `must be 1 to ${MAX_HEADER_VALUE_LENGTH} printable ASCII characters, without line breaks or leading or trailing spaces`;
/**
 * The names and the reserved ones are the domain's rules (delivery/endpoint-fields.ts), run here as
 * the schema's check so one 422 names every bad field, headers and the others alike.
 */
const headerRules = z.check<Record<string, string | null>>((ctx) => {
  try {
    validateOptions({ headers: ctx.value });
  } catch (error) {
    if (!(error instanceof DomainError)) throw error;
    for (const { field, message } of error.extra.errors ?? []) {
      ctx.issues.push({ code: 'custom', message, input: ctx.value, path: field === 'headers' ? [] : [field.slice('headers.'.length)] });
    }
  }
});
const endpointOptions = {
  headers: described(
    z.optional(z.record(z.string(), z.nullable(z.string('must be text, or null to remove the header').check(z.minLength(1, headerValue), z.maxLength(MAX_HEADER_VALUE_LENGTH, headerValue))),
      'must be an object of header name to value (null removes one)').check(
      headerRules,
      // Stated for the document; the check above enforces them (20 names at once: set 10, remove 10).
      z.meta({ maxProperties: 2 * MAX_CUSTOM_HEADERS, propertyNames: { pattern: "^[!#$%&'*+.^_`|~0-9A-Za-z-]+$", maxLength: MAX_HEADER_NAME_LENGTH } }),
    )),
    `Custom headers by name (an RFC 9110 token; webhook-*, proxy-*, content-type, content-length, host, user-agent, connection and other headers the delivery sets are refused): a value sets one, null removes one; the others stay. An endpoint holds at most ${MAX_CUSTOM_HEADERS}.`,
  ),
  rate_limit_per_second: described(
    z.optional(z.nullable(int(`must be a whole number of deliveries a second from 1 to ${MAX_RATE_LIMIT_PER_SECOND}, or null for no limit`, 1, MAX_RATE_LIMIT_PER_SECOND))),
    'At most this many deliveries a second to the endpoint; null: no limit. Over it, deliveries wait without using attempts.',
  ),
};

const limit = described(z.optional(z.coerce.number('must be 1 to 200').check(z.int('must be 1 to 200'), z.minimum(1, 'must be 1 to 200'), z.maximum(200, 'must be 1 to 200'), z.meta({ default: 50 }))), 'Rows a page holds at most');
const cursor = described(z.optional(z.string().check(z.maxLength(MAX_CURSOR_CHARS, 'is not a cursor this API returned'))), 'nextCursor of the previous page');
/** The statuses the deliveries list filters by (an unknown one is a 422, not an empty list). */
const deliveryStatuses = ['pending', 'retrying', 'delivered', 'failed', 'skipped'] as const satisfies readonly DeliveryStatusView[];

export interface RequestSchemas {
  /** The JSON body's schema; `bodyRequired: false`: an empty body is `{}`. */
  body?: z.ZodMiniType<Record<string, unknown>>;
  bodyRequired?: boolean;
  /** The query string's schema (its values arrive as text; an empty one counts as absent). */
  query?: z.ZodMiniType<Record<string, unknown>>;
}

export const requestSchemas = {
  'PATCH /api/settings': {
    body: z.strictObject({ duplicate_policy: z.enum(['flag', 'merge'], 'is required: flag or merge') }),
  },
  'POST /api/settings/keys': {
    body: z.strictObject({
      name: described(
        z.string(says('is required: 1 to 100 characters', 'must be 1 to 100 characters'))
          .check(z.trim(), z.minLength(1, 'is required: 1 to 100 characters'), z.maxLength(100, 'must be 1 to 100 characters'), z.regex(/\S/, 'is required: 1 to 100 characters')),
        'Surrounding spaces are trimmed first',
      ),
      kind: described(z.optional(z.enum(['secret', 'publishable'], 'must be secret or publishable')), 'Default secret; publishable: for web pages (docs/leads.md)'),
      origins: described(
        z.optional(z.array(z.string('must be a list of origins'), 'must be a list of origins').check(z.maxLength(MAX_ORIGINS, `at most ${MAX_ORIGINS} origins`))),
        'Publishable keys only, and required for them: the pages\' origins (https://shop.example)',
      ),
      thank_you_url: described(z.optional(z.url({ error: 'must be an absolute URL such as https://shop.example/thanks', protocol: /^https?$/ }).check(z.maxLength(MAX_URL_CHARS, `must be at most ${MAX_URL_CHARS} characters`))),
        'Publishable keys only: where a no-script form post is sent (303); https (http only for localhost)'),
      daily_cap: described(z.optional(int(`must be an integer from 1 to ${MAX_DAILY_CAP}`, 1, MAX_DAILY_CAP)), 'Publishable keys only: billed calls a day'),
      per_ip_limit: described(z.optional(int(`must be an integer from 1 to ${MAX_PER_IP_LIMIT}`, 1, MAX_PER_IP_LIMIT)), 'Publishable keys only: leads a minute per client address (default 5)'),
      honeypot_field: described(z.optional(z.string('must be 1 to 64 of A-Z a-z 0-9 _ . -').check(z.regex(/^[A-Za-z0-9_.-]{1,64}$/, 'must be 1 to 64 of A-Z a-z 0-9 _ . -'))),
        'Publishable keys only: the form field that must stay empty (default website)'),
    }),
  },
  'POST /api/settings/keys/{id}/rotate': { body: grace(24), bodyRequired: false },
  'POST /api/settings/webhooks': {
    body: z.strictObject({
      url: endpointUrl,
      events: subscription,
      description: z.optional(text(MAX_DESCRIPTION_CHARS)),
      ...endpointOptions,
    }),
  },
  'PATCH /api/settings/webhooks/{id}': {
    body: z.strictObject({
      url: z.optional(endpointUrl),
      events: z.optional(subscription),
      enabled: described(z.optional(z.boolean('must be true or false')), 'Enabling closes the circuit'),
      description: described(z.optional(z.nullable(text(MAX_DESCRIPTION_CHARS))), 'null clears it'),
      keep_headers: described(z.optional(z.boolean('must be true or false')), 'With a new `url` on the same origin: keep the stored custom headers (else each must be set again or removed); another origin always needs them again'),
      ...endpointOptions,
    }),
  },
  'POST /api/settings/webhooks/{id}/rotate-secret': { body: grace(24), bodyRequired: false },
  'POST /api/settings/webhooks/{id}/test': {
    body: z.strictObject({ event_type: described(z.optional(eventName), 'A type the endpoint subscribes to; default webhook.test') }),
    bodyRequired: false,
  },
  'GET /api/settings/deliveries': {
    query: z.strictObject({
      status: z.optional(z.enum(deliveryStatuses, `must be one of ${deliveryStatuses.join(', ')}`)),
      endpoint: described(z.optional(z.string()), 'An endpoint id'),
      event_type: z.optional(eventName),
      search: described(z.optional(z.string().check(z.maxLength(MAX_SEARCH_CHARS, `must be a delivery or event id (at most ${MAX_SEARCH_CHARS} characters)`))), 'An event id or a delivery id'),
      since: described(z.optional(time()), 'Created at or after'),
      until: described(z.optional(time()), 'Created at or before'),
      cursor,
      limit,
    }),
  },
  'POST /api/settings/deliveries/redeliver': {
    body: z.strictObject({
      endpoint: described(z.optional(z.string('must be an endpoint id')), 'Only this endpoint\'s'),
      since: described(z.optional(time()), 'Created at or after'),
      until: described(z.optional(time()), 'Created at or before'),
    }),
    bodyRequired: false,
  },
  'POST /api/settings/deliveries/recover': {
    body: z.strictObject({
      since: described(z.iso.datetime({ offset: true, error: 'is required: an ISO-8601 time (2026-11-01T09:00:00Z), not in the future' }), 'Failed since (not in the future)'),
      endpoint_id: described(z.optional(z.string('must be an endpoint id')), 'Only this endpoint\'s'),
      dry_run: described(z.optional(z.boolean('must be true or false')), 'Only count them'),
    }),
  },
  'GET /api/settings/requests': { query: z.strictObject({ cursor, limit }) },
  'GET /api/settings/audit': { query: z.strictObject({ limit }) },
  'POST /api/settings/links/revoke': { body: z.strictObject({}), bodyRequired: false },
  'PUT /api/settings/notifications': {
    body: z.strictObject({
      recipients: described(
        z.array(z.strictObject({
          email: described(text(254, 'must be an e-mail address (at most 254 characters)'), 'One address; a new one is sent a confirmation e-mail and gets nothing else until it is confirmed'),
          notices: described(z.array(z.enum(NOTICE_KINDS, `must be one of ${NOTICE_KINDS.join(', ')}`), 'must be a list of notices'), 'The notices it gets (may be empty)'),
        }), says('is required: a list of recipients', 'must be a list of recipients')).check(z.maxLength(MAX_RECIPIENTS, `at most ${MAX_RECIPIENTS} addresses per organization`)),
        `The whole list (at most ${MAX_RECIPIENTS}): addresses left out are removed`,
      ),
    }),
  },
} satisfies Record<string, RequestSchemas>;

export type RouteWithSchemas = keyof typeof requestSchemas;
type Schemas<R extends RouteWithSchemas> = (typeof requestSchemas)[R];
/** A route's body as validated (unknown fields refused, strings trimmed where the schema says). */
export type BodyOf<R extends RouteWithSchemas> = Schemas<R> extends { body: z.ZodMiniType } ? z.output<Schemas<R>['body']> : never;
/** A route's query as validated (numbers are numbers). */
export type QueryOf<R extends RouteWithSchemas> = Schemas<R> extends { query: z.ZodMiniType } ? z.output<Schemas<R>['query']> : never;
