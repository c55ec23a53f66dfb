/**
 * The OpenAPI 3.1 document of the lead endpoint, generated from the zod schemas the handler
 * validates with (functions/core/intake/lead-schema.ts), so the reference cannot drift from the code.
 * Served by the local stack at /openapi.json; `npm run docs:openapi` writes docs/openapi.json.
 */
// zod/mini like the schemas it documents (functions/core/intake/lead-schema.ts). This module is served by
// the local stack only: no Lambda handler imports it, so z.toJSONSchema stays out of every bundle.
import * as z from '../platform/zod-mini.js';
import { cors } from './cors.js';
import { clientSchema, leadRequestSchema, MAX_BODY_BYTES } from './lead-schema.js';

const described = <T extends z.ZodMiniType>(schema: T, description: string) => schema.check(z.describe(description));
const int = () => z.number().check(z.int());

const problemSchema = described(
  z.object({
    type: z.url(),
    title: z.string(),
    status: int(),
    detail: z.string(),
    request_id: z.optional(z.string()),
    errors: described(
      z.optional(z.array(z.object({ field: described(z.string(), 'Dotted path of the field; empty for the body itself'), message: z.string() }))),
      'Per-field problems (422 validation-failed)',
    ),
  }),
  'RFC 9457 problem details',
);

const keyCheckSchema = z.object({
  organization: z.object({ id: z.string(), name: z.string() }),
  key: z.object({ id: described(z.string(), 'Public key id; never the key'), name: z.string() }),
  rate_limit: z.object({ limit: int(), remaining: int(), reset_seconds: int(), window_seconds: z.literal(60) }),
});

const jsonSchema = (schema: z.ZodMiniType, io: 'input' | 'output') => {
  const { $schema: _ignored, ...rest } = z.toJSONSchema(schema, { io, unrepresentable: 'any' }) as Record<string, unknown>;
  return rest;
};

const header = (description: string, type: 'string' | 'integer' = 'string') => ({ description, schema: { type } });
const rateLimitHeaders = {
  RateLimit: header('IETF draft: `limit=N, remaining=N, reset=S`'),
  'RateLimit-Policy': header('IETF draft: `N;w=60`'),
  'X-RateLimit-Limit': header('Requests allowed per 60 s window', 'integer'),
  'X-RateLimit-Remaining': header('Requests left in the window', 'integer'),
  'X-RateLimit-Reset': header('Seconds until the window ends', 'integer'),
};
const problem = (description: string, extraHeaders: Record<string, unknown> = {}) => ({
  description,
  headers: { ...rateLimitHeaders, ...extraHeaders },
  content: { 'application/problem+json': { schema: { $ref: '#/components/schemas/Problem' } } },
});
const authProblems = {
  401: problem('Missing, malformed, unknown, revoked or expired API key', { 'WWW-Authenticate': header('`Bearer realm="crm"`') }),
  403: problem('The organization’s plan does not include the integration API'),
  429: problem('Rate limit exceeded', { 'Retry-After': header('Seconds to wait (at least 1)', 'integer') }),
  500: problem('Unexpected fault; quote the request id'),
};

const awsServer = {
  url: 'https://{apiId}.execute-api.{region}.amazonaws.com/{stage}',
  description: 'Your deployment (the ApiUrl output of the stack)',
  variables: { apiId: { default: 'abc123' }, region: { default: 'us-east-1' }, stage: { default: 'prod' } },
};

/** The lead endpoint's part of the OpenAPI document (functions/core/settings/openapi.ts adds the settings API's). */
export function leadEndpointDocument(serverUrl?: string) {
  return {
    openapi: '3.1.0',
    info: {
      title: 'CRM integration API',
      version: '2026-11-01',
      description: 'Send leads into the CRM from forms and automation tools. Authenticate with an organization API key.',
    },
    servers: serverUrl ? [{ url: serverUrl, description: 'This local stack' }] : [awsServer],
    security: [{ apiKeyHeader: [] }, { bearer: [] }],
    paths: {
      '/api/webhook/leads': {
        get: {
          operationId: 'checkKey',
          summary: 'Check an API key (connectivity test)',
          description: 'Counts against the rate limit; not billed.',
          responses: {
            200: { description: 'The key is valid', headers: rateLimitHeaders, content: { 'application/json': { schema: { $ref: '#/components/schemas/KeyCheck' } } } },
            ...authProblems,
          },
        },
        post: {
          operationId: 'createLead',
          summary: 'Create a lead',
          description:
            `Creates a client with status \`lead\` and notifies the team. Body at most ${MAX_BODY_BYTES} bytes. ` +
            'Unknown top-level scalar properties are kept as custom fields. Prepaid organizations are billed per created lead. ' +
            'A publishable key (`crm_pub_…`, for web pages) may only POST, with an `Origin` listed on the key, within its per-address window ' +
            'and daily cap; its posts pass a honeypot field and the organization’s CAPTCHA, if set, and may be url-encoded (a no-script form; ' +
            'the key in `api_key`; errors then come back as a small HTML page unless JSON is asked for).',
          parameters: [{
            name: 'Idempotency-Key', in: 'header', required: false,
            description: 'Retries with the same key and body within 24 h return the original response (with `Idempotent-Replayed: true`). ' +
              'Use a random value per submission (a UUID). Scoped to the organization for a secret key, to the key itself for a publishable key.',
            schema: { type: 'string', minLength: 1, maxLength: 255 },
          }],
          requestBody: {
            required: true,
            content: {
              'application/json': { schema: { $ref: '#/components/schemas/LeadRequest' } },
              // A plain HTML form's post (no script): publishable keys only, the key in `api_key` (docs/leads.md#lead-forms-in-public-pages-publishable-keys).
              'application/x-www-form-urlencoded': { schema: { $ref: '#/components/schemas/LeadFormRequest' } },
            },
          },
          responses: {
            201: {
              description: 'The lead was created (a filled honeypot gets the same answer and creates nothing); with the same e-mail or phone as an earlier client it is marked `possible_duplicate_of` (the `flag` policy). A no-script form post of a key without a thank-you URL gets a small HTML page.',
              headers: rateLimitHeaders,
              content: { 'application/json': { schema: { $ref: '#/components/schemas/Client' } }, 'text/html': { schema: { type: 'string' } } },
            },
            200: {
              description: 'No new client: the identical submission (same key, same normalized body) within 10 minutes (`duplicate: true`), or, under the `merge` policy, the submission attached to the earlier client with the same e-mail (`merged: true`; secret keys only: a publishable key gets the 201 of a new lead in both cases). Only the id is answered; billed as a call.',
              headers: rateLimitHeaders,
              content: { 'application/json': { schema: {
                type: 'object', required: ['id', 'organization_id'],
                properties: { id: { type: 'string' }, organization_id: { type: 'string' }, duplicate: { const: true }, merged: { const: true } },
              } } },
            },
            303: { description: 'No-script form post: the lead was created; go to the publishable key’s thank-you URL', headers: { Location: header('The key’s thank-you URL') } },
            400: problem('Malformed JSON, a body that is not UTF-8, more than one API-key header, or a bad Idempotency-Key'),
            402: problem('The prepaid wallet cannot pay for the call; nothing was written'),
            409: problem('A request with this Idempotency-Key is still in flight'),
            413: problem(`Body larger than ${MAX_BODY_BYTES} bytes (bytes, not characters)`),
            415: problem('Content-Type is not application/json, or a charset other than UTF-8'),
            422: problem('Invalid fields (`errors[]`; a lone UTF-16 surrogate in any text is one), or an Idempotency-Key reused with another body'),
            ...authProblems,
            403: problem('The plan does not include the integration API; or a publishable key’s refusal: no or another `Origin` (`origin-required`, `origin-not-allowed`), the CAPTCHA missing or rejected (`captcha-failed`), a secret key in a form body'),
            429: problem('Rate limit exceeded: the key’s (`rate-limited`), a publishable key’s per-address window (`rate-limited-address`) or daily cap (`daily-cap-reached`)', { 'Retry-After': header('Seconds to wait (at least 1)', 'integer') }),
            503: problem('The CAPTCHA could not be verified (`captcha-unavailable`; fails closed): retry', { 'Retry-After': header('Seconds to wait', 'integer') }),
          },
        },
      },
    },
    components: {
      securitySchemes: {
        apiKeyHeader: { type: 'apiKey', in: 'header', name: 'X-API-Key' },
        bearer: { type: 'http', scheme: 'bearer', description: 'The same API key as a Bearer token' },
      },
      schemas: {
        LeadRequest: jsonSchema(leadRequestSchema, 'input'),
        LeadFormRequest: {
          description: 'A no-script form: the lead fields as strings, plus the publishable key and the spam-defence fields (never stored)',
          allOf: [
            { $ref: '#/components/schemas/LeadRequest' },
            {
              type: 'object',
              required: ['api_key'],
              properties: {
                api_key: { type: 'string', description: 'A publishable key (`crm_pub_…`); a secret key here is refused' },
                website: { type: 'string', description: 'The honeypot (the key may name another field): leave empty; filled, the post is dropped' },
                'cf-turnstile-response': { type: 'string', description: 'Cloudflare Turnstile token, when the organization requires it' },
                'h-captcha-response': { type: 'string', description: 'hCaptcha token, when the organization requires it' },
                'g-recaptcha-response': { type: 'string', description: 'reCAPTCHA token, when the organization requires it' },
              },
            },
          ],
        },
        Client: jsonSchema(clientSchema, 'output'),
        KeyCheck: jsonSchema(keyCheckSchema, 'output'),
        Problem: jsonSchema(problemSchema, 'output'),
      },
    },
    'x-cors': { allowOrigins: cors.allowOrigins, allowHeaders: cors.allowHeaders, exposeHeaders: cors.exposeHeaders },
  };
}
