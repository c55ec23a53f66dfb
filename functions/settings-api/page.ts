/**
 * The settings page (docs/settings.md): static HTML, CSS and plain ES modules (one per section, docs/decisions.md "Settings page modules"), served by the settings
 * function at GET /settings and /settings/<asset>. The files sit in ./page next to this module and
 * are read once per container: from functions/settings-api/page locally, and from the `page/` folder
 * the CDK bundling copies next to index.mjs on Lambda (lib/stacks/crm-function.ts), so both read the
 * same bytes. Every answer carries a strict Content-Security-Policy: the page has no inline script
 * or style and sets user data only as text. The HTML names its assets and the API relative to its own
 * URL, so it works under an API Gateway stage prefix (/prod/settings) as on the local stack.
 */
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';

export interface PageResponse { status: number; headers: Record<string, string>; body: string }

/** The page's paths (routed to the settings function in functions/front-door/routes.ts); each module is `/settings/<name>.js`. */
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

const pageDir = new URL('./page/', import.meta.url);
const read = (file: string) => readFileSync(new URL(file, pageDir), 'utf8');
const version = (body: string) => createHash('sha256').update(body).digest('hex').slice(0, 12);

let assets: Map<string, Asset> | undefined;

/**
 * The modules with their imports versioned (`./dom.js` → `./dom.js?v=<hash>`), each hash taken
 * after its own imports were rewritten: a change in any module changes the URL of every module
 * that imports it, up to the entry the HTML names, so a browser never pairs new and stale modules.
 */
function versionedModules(): Map<string, string> {
  const sources = new Map(readdirSync(pageDir).filter((f) => f.endsWith('.js')).map((f) => [f, read(f)]));
  const done = new Map<string, string>();
  const resolve = (file: string, path: string[] = []): string => {
    const ready = done.get(file);
    if (ready !== undefined) return ready;
    if (path.includes(file)) throw new Error(`settings page modules import each other in a cycle: ${[...path, file].join(' → ')}`);
    const source = sources.get(file);
    if (source === undefined) throw new Error(`settings page module ${path.at(-1)} imports ${file}, which does not exist`);
    const body = source.replace(/(from\s+'\.\/)([\w-]+\.js)(')/g, (_, head: string, dep: string, tail: string) => `${head}${dep}?v=${version(resolve(dep, [...path, file]))}${tail}`);
    done.set(file, body);
    return body;
  };
  for (const file of sources.keys()) resolve(file);
  return done;
}

/**
 * Read once per container. The HTML names the assets with a content hash (`?v=`), so a browser
 * never pairs a new page with a stale cached script: the HTML is never cached (it is the page that
 * receives the token), the assets briefly.
 */
function loadAssets(): Map<string, Asset> {
  const css = read('settings.css');
  const modules = versionedModules();
  const html = read('settings.html')
    .replaceAll('{{cssVersion}}', version(css))
    .replaceAll('{{jsVersion}}', version(modules.get('settings.js')!));
  const briefly = 'public, max-age=300';
  return new Map([
    [pagePaths.html, { body: html, contentType: 'text/html; charset=utf-8', cacheControl: 'no-store' }],
    [pagePaths.css, { body: css, contentType: 'text/css; charset=utf-8', cacheControl: briefly }],
    ...[...modules].map(([file, body]): [string, Asset] => [`/settings/${file}`, { body, contentType: 'text/javascript; charset=utf-8', cacheControl: briefly }]),
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
