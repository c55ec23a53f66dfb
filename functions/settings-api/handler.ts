/**
 * The organization settings (docs/settings.md): GET /settings and its assets (page.ts), and the management
 * API under /api/settings (functions/core/settings/handle-settings-request.ts) behind the shared
 * HTTP adapter. The session-token secret is read from Secrets Manager through the secret the topology
 * binds (its name in SETTINGS_TOKEN_SECRET; on the local stack the stand-in serves it), cached.
 */
import type { APIGatewayProxyEvent, APIGatewayProxyResult, Context } from 'aws-lambda';
import { httpAdapter } from '../adapters/http-adapter.js';
import { settingsApi } from '../core/settings/handle-settings-request.js';
import { boundSecret } from '../core/settings/token-secret.js';
import { servePage } from './page.js';
import { instrumented } from '../adapters/instrumentation.js';
import { lambdaDeps } from '../core/platform/deps.js';
import { noticePageResources, serveNoticePage } from './notice-pages.js';

const readLinkSecret = boundSecret('noticeLinks');
const readTokenSecret = boundSecret('settingsToken');

// Same-origin: the page calls it from its own origin; no other origin's script may (no CORS headers).
const api = httpAdapter(settingsApi({ tokenSecret: readTokenSecret }), { sameOrigin: true });

/** The page path from the matched resource (the stage prefix of event.path differs between hosts). */
function pagePath(event: APIGatewayProxyEvent): string | undefined {
  if (event.resource === '/settings') return '/settings';
  if (event.resource === '/settings/{asset}') return `/settings/${event.pathParameters?.asset ?? ''}`;
  return undefined;
}

export const handler = instrumented(async (event: APIGatewayProxyEvent, context: Context): Promise<APIGatewayProxyResult> => {
  // The links in notice e-mails: public pages, no session (docs/notifications.md "Links").
  const notice = noticePageResources[event.resource];
  if (notice) return serveNoticePage(await lambdaDeps(), event, notice, readLinkSecret);
  const path = pagePath(event);
  const page = path === undefined ? undefined : servePage(path);
  if (page) return { statusCode: page.status, headers: page.headers, body: page.body };
  return api(event, context);
});
