/**
 * The HTTP routes and how API Gateway matches a request to them: the REST API's resources, each
 * route's function, throttles and CORS preflights. The CDK stack renders them
 * (lib/stacks/crm-api.ts); the local front door (lib/local/http-server.ts) matches requests with
 * the same functions, so the two cannot drift. Pure data and pure functions.
 */
import { cors, corsResponseHeaders } from '../core/intake/cors.js';

/** The functions that serve routes (lib/topology.ts checks each is one of its functions). */
export type RoutedFunction = 'leadIntake' | 'settingsApi';

export interface RouteSpec {
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  /** A segment `{name}` is a path parameter (one segment); a static sibling wins over it, as on API Gateway. */
  path: string;
  function: RoutedFunction;
  /**
   * Only for pages of this API's own origin (the settings page and its API): no CORS headers on its
   * answers and no preflight, so no other origin's script may call it (docs/settings.md).
   */
  sameOrigin?: true;
}

const settingsRoute = (method: RouteSpec['method'], path: string): RouteSpec => ({ method, path, function: 'settingsApi', sameOrigin: true });
export const routes: RouteSpec[] = [
  { method: 'GET', path: '/api/webhook/leads', function: 'leadIntake' },
  { method: 'POST', path: '/api/webhook/leads', function: 'leadIntake' },
  // Organization settings (docs/settings.md): the page and its assets, and the management API.
  settingsRoute('GET', '/settings'),
  settingsRoute('GET', '/settings/{asset}'),
  settingsRoute('GET', '/api/settings'),
  settingsRoute('PATCH', '/api/settings'),
  settingsRoute('GET', '/api/settings/keys'),
  settingsRoute('POST', '/api/settings/keys'),
  settingsRoute('DELETE', '/api/settings/keys/{id}'),
  settingsRoute('POST', '/api/settings/keys/{id}/rotate'),
  settingsRoute('GET', '/api/settings/events'),
  settingsRoute('GET', '/api/settings/webhooks'),
  settingsRoute('POST', '/api/settings/webhooks'),
  settingsRoute('PATCH', '/api/settings/webhooks/{id}'),
  settingsRoute('DELETE', '/api/settings/webhooks/{id}'),
  settingsRoute('POST', '/api/settings/webhooks/{id}/rotate-secret'),
  settingsRoute('POST', '/api/settings/webhooks/{id}/test'),
  settingsRoute('GET', '/api/settings/deliveries'),
  settingsRoute('POST', '/api/settings/deliveries/redeliver'),
  settingsRoute('POST', '/api/settings/deliveries/recover'),
  settingsRoute('GET', '/api/settings/deliveries/{id}'),
  settingsRoute('POST', '/api/settings/deliveries/{id}/redeliver'),
  settingsRoute('GET', '/api/settings/requests'),
  settingsRoute('GET', '/api/settings/clients/{id}/trail'),
  settingsRoute('GET', '/api/settings/audit'),
  settingsRoute('POST', '/api/settings/links/revoke'),
  settingsRoute('GET', '/api/settings/notifications'),
  settingsRoute('PUT', '/api/settings/notifications'),
  // The links in notice e-mails (docs/notifications.md "Links"): public pages, no session; the token
  // in the link is the authority. A GET only shows a button; its POST acts (a mail scanner's prefetch
  // confirms nothing). The unsubscribe POST is also RFC 8058's one-click.
  settingsRoute('GET', '/notices/confirm'),
  settingsRoute('POST', '/notices/confirm'),
  settingsRoute('GET', '/notices/unsubscribe'),
  settingsRoute('POST', '/notices/unsubscribe'),
];

/**
 * The answer to a CORS preflight on a path serving `methods`, without a key: what the stage's
 * OPTIONS mock (rendered by CDK from `cors`) answers, for the local stack to answer the same.
 */
export const corsPreflightHeaders = (methods: string[]): Record<string, string> => ({
  'Access-Control-Allow-Headers': cors.allowHeaders.join(','),
  'Access-Control-Allow-Origin': corsResponseHeaders['Access-Control-Allow-Origin'],
  'Access-Control-Max-Age': String(cors.maxAgeSeconds),
  'Access-Control-Allow-Methods': [...methods, 'OPTIONS'].join(','),
});

/** Whether a browser of another origin may call `path` (a preflight is answered there): every route but the same-origin ones. */
export const crossOrigin = (path: string) => routes.some((r) => r.path === path && !r.sameOrigin);

/** Methods served on a route's path, a resource path like `/api/settings/keys/{id}` (an ANY on the path answers the others 405). */
export const methodsOn = (path: string) => [...new Set(routes.filter((r) => r.path === path).map((r) => r.method))];

const isParameter = (segment: string) => /^\{[^+}]+\}$/.test(segment);

/**
 * The REST API resource a request path lands on, as API Gateway matches it: segment by segment, a
 * static child first, else the parameter child (`{id}`); where neither exists, the `{proxy+}` under
 * the deepest resource reached. `parameters` holds the path parameters' values (undefined on a proxy).
 */
export function resourceFor(pathname: string): { resource: string; parameters: Record<string, string>; proxy: boolean } {
  const resources = apiResourcePaths();
  const parameters: Record<string, string> = {};
  let current = '/';
  for (const segment of pathname.split('/').filter((s, i) => i > 0 && s !== '')) {
    const prefix = current === '/' ? '' : current;
    const children = resources.filter((r) => r.startsWith(`${prefix}/`) && !r.slice(prefix.length + 1).includes('/'));
    const exact = children.find((r) => r === `${prefix}/${segment}`);
    const parameter = children.find((r) => isParameter(r.slice(prefix.length + 1)));
    if (exact) current = exact;
    else if (parameter) {
      current = parameter;
      parameters[parameter.slice(prefix.length + 2, -1)] = decodeURIComponent(segment);
    } else return { resource: `${prefix}/{proxy+}`, parameters: {}, proxy: true };
  }
  return { resource: current, parameters, proxy: false };
}

/** Resources with a parameter child get no `{proxy+}` sibling (API Gateway allows one variable child): the parameter takes that place. */
export const hasParameterChild = (resource: string) => apiResourcePaths().some((r) => {
  const prefix = resource === '/' ? '' : resource;
  return r.startsWith(`${prefix}/`) && isParameter(r.slice(prefix.length + 1));
});

export interface ThrottleSpec { rateLimit: number; burstLimit: number }
/**
 * API Gateway throttles each method of the stage with a token bucket of its own (stage settings
 * apply "at the API method level"). Each lead method and its preflight: sized in docs/capacity.md;
 * per-key floods are stopped before it by the WAF rules below, so one key can not spend it for everyone.
 */
export const routeThrottle: ThrottleSpec = { rateLimit: 1000, burstLimit: 2000 };
/** Each catch-all MOCK method (the stage default): scanners' 404s must not claim the account's API Gateway quota. */
export const catchAllThrottle: ThrottleSpec = { rateLimit: 50, burstLimit: 100 };
/**
 * Each settings method and its preflight: a few admins per organization (300 calls/min each, the
 * function's own limit), not lead traffic. Sized like the catch-alls so the ~30 settings methods
 * (keyless floods of them reach the function as 401s) cannot claim the account's API Gateway quota
 * or the Lambda concurrency the lead endpoint needs (docs/capacity.md).
 */
export const settingsThrottle: ThrottleSpec = { rateLimit: 50, burstLimit: 100 };
/** The bucket of each routed method, by the function serving its path (routeThrottle unless named here). */
const functionThrottles: Partial<Record<RoutedFunction, ThrottleSpec>> = { settingsApi: settingsThrottle };

/** The REST API's resources: the root and every prefix of a route's path (each also has a `{proxy+}` child). */
export const apiResourcePaths = (): string[] => [...new Set(['/', ...routes.flatMap((r) =>
  r.path.split('/').slice(1).map((_, i, parts) => `/${parts.slice(0, i + 1).join('/')}`))])];

/**
 * The deployed method that takes `method` on `pathname` (API Gateway prefers an exact resource, else
 * the deepest `{proxy+}` above it), and its throttle: one bucket per (resource, method).
 */
export function apiMethodFor(pathname: string, method: string): { resource: string; method: string; throttle: ThrottleSpec } {
  const { resource, proxy } = resourceFor(pathname);
  const served = proxy ? [] : methodsOn(resource);
  if (served.includes(method as RouteSpec['method']) || (served.length > 0 && method === 'OPTIONS' && crossOrigin(resource))) {
    const fn = routes.find((r) => r.path === resource)!.function;
    return { resource, method, throttle: functionThrottles[fn] ?? routeThrottle };
  }
  return { resource, method: 'ANY', throttle: catchAllThrottle };
}
