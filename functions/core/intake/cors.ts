/**
 * The lead endpoint's CORS policy (docs/leads.md#browsers): browsers of any origin may call it.
 * The settings routes are same-origin and get none of it (functions/front-door/routes.ts `sameOrigin`).
 */

/** Headers a browser may send cross-origin, and the ones it may read back. */
export const cors = {
  allowOrigins: ['*'],
  allowHeaders: ['Content-Type', 'X-API-Key', 'Authorization', 'Idempotency-Key'],
  exposeHeaders: [
    'Retry-After', 'RateLimit', 'RateLimit-Policy',
    'X-RateLimit-Limit', 'X-RateLimit-Remaining', 'X-RateLimit-Reset', 'X-Request-Id',
  ],
  maxAgeSeconds: 600,
};

/** The CORS headers on every answer a browser may read (the function's, the gateway's own). */
export const corsResponseHeaders: Record<string, string> = {
  'Access-Control-Allow-Origin': cors.allowOrigins.join(','),
  'Access-Control-Expose-Headers': cors.exposeHeaders.join(','),
};
