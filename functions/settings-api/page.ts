/**
 * The settings page (DESIGN §14): static HTML, CSS and one small script, served by the settings
 * function at GET /settings and /settings/<asset>. The files sit in ./page next to this module and
 * are read once per container: from functions/settings-api/page locally, and from the `page/` folder
 * the CDK bundling copies next to index.mjs on Lambda (lib/stacks/crm-function.ts), so both read the
 * same bytes. Every answer carries a strict Content-Security-Policy: the page has no inline script
 * or style and sets user data only as text. The HTML names its assets and the API relative to its own
 * URL, so it works under an API Gateway stage prefix (/prod/settings) as on the local stack.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';

export interface PageResponse { status: number; headers: Record<string, string>; body: string }

/** The page's paths (routed to the settings function in lib/topology.ts). */
export const pagePaths = { html: '/settings', css: '/settings/settings.css', js: '/settings/settings.js' } as const;

export const contentSecurityPolicy = [
  "default-src 'none'", "script-src 'self'", "style-src 'self'", "connect-src 'self'", "img-src 'self' data:",
  "base-uri 'none'", "form-action 'none'", "frame-ancestors 'none'",
].join('; ');

const securityHeaders: Record<string, string> = {
  'Content-Security-Policy': contentSecurityPolicy,
  'X-Content-Type-Options': 'nosniff',
  'Referrer-Policy': 'no-referrer',
  'X-Frame-Options': 'DENY',
  'Cross-Origin-Opener-Policy': 'same-origin',
};

interface Asset { body: string; contentType: string; cacheControl: string }

const read = (file: string) => readFileSync(new URL(`./page/${file}`, import.meta.url), 'utf8');
const version = (body: string) => createHash('sha256').update(body).digest('hex').slice(0, 12);

let assets: Map<string, Asset> | undefined;

/**
 * Read once per container. The HTML names the assets with a content hash (`?v=`), so a browser
 * never pairs a new page with a stale cached script: the HTML is never cached (it is the page that
 * receives the token), the assets briefly.
 */
function loadAssets(): Map<string, Asset> {
  const css = read('settings.css');
  const js = read('settings.js');
  const html = read('settings.html')
    .replaceAll('{{cssVersion}}', version(css))
    .replaceAll('{{jsVersion}}', version(js));
  const briefly = 'public, max-age=300';
  return new Map([
    [pagePaths.html, { body: html, contentType: 'text/html; charset=utf-8', cacheControl: 'no-store' }],
    [pagePaths.css, { body: css, contentType: 'text/css; charset=utf-8', cacheControl: briefly }],
    [pagePaths.js, { body: js, contentType: 'text/javascript; charset=utf-8', cacheControl: briefly }],
  ]);
}

/** The answer for a page path, or undefined when `path` is not one (the API routes take it). */
export function servePage(path: string): PageResponse | undefined {
  assets ??= loadAssets();
  const asset = assets.get(path);
  if (!asset) return undefined;
  return {
    status: 200,
    headers: { 'Content-Type': asset.contentType, 'Cache-Control': asset.cacheControl, ...securityHeaders },
    body: asset.body,
  };
}
