/** The settings page's static answers (functions/settings-api/page.ts): paths, types, caching, headers. */
import { describe, it, expect } from '@jest/globals';
import { readdirSync, readFileSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { contentSecurityPolicy, pagePaths, servePage } from '../../../functions/settings-api/page.js';

const source = (file: string) => readFileSync(`functions/settings-api/page/${file}`, 'utf8');
const hash = (text: string) => createHash('sha256').update(text).digest('hex').slice(0, 12);
const modules = readdirSync('functions/settings-api/page').filter((f) => f.endsWith('.js'));

describe('servePage', () => {
  it('answers only the page, its styles and its modules; anything else is left to the API routes', () => {
    for (const path of [...Object.values(pagePaths), ...modules.map((m) => `/settings/${m}`)]) expect(servePage(path)?.status).toBe(200);
    for (const path of ['/settings/', '/settings/page.ts', '/settings/../handler.ts', '/settings/settings.html', '/api/settings', '/']) expect(servePage(path)).toBeUndefined();
  });

  it('never caches the HTML (it receives the token); caches the assets briefly, each named by its content hash', () => {
    const html = servePage('/settings')!;
    expect(html.headers).toMatchObject({ 'Content-Type': 'text/html; charset=utf-8', 'Cache-Control': 'no-store' });
    expect(html.body).toContain(`settings/settings.js?v=${hash(servePage('/settings/settings.js')!.body)}`);
    expect(html.body).toContain(`settings/settings.css?v=${hash(source('settings.css'))}`);
    expect(servePage('/settings/settings.js')!.headers).toMatchObject({ 'Content-Type': 'text/javascript; charset=utf-8', 'Cache-Control': 'public, max-age=300' });
    expect(servePage('/settings/settings.css')!.headers).toMatchObject({ 'Content-Type': 'text/css; charset=utf-8', 'Cache-Control': 'public, max-age=300' });
  });

  it('versions every module import by the content of what it imports, so no browser pairs a new module with a stale one', () => {
    expect(modules.length).toBeGreaterThan(3);
    for (const file of modules) {
      const served = servePage(`/settings/${file}`)!.body;
      const imports = [...source(file).matchAll(/from '\.\/([\w-]+\.js)'/g)].map((m) => m[1]);
      for (const dep of imports) expect(served).toContain(`from './${dep}?v=${hash(servePage(`/settings/${dep}`)!.body)}'`);
      expect(served).not.toMatch(/from '\.\/[\w-]+\.js'/);
    }
  });

  it('keeps each module under 400 lines', () => {
    for (const file of modules) expect(source(file).split('\n').length).toBeLessThan(400);
  });

  it('sends the strict policy and the hardening headers with every file, each module included', () => {
    expect(contentSecurityPolicy).toBe("default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'");
    for (const path of [...Object.values(pagePaths), ...modules.map((m) => `/settings/${m}`)]) {
      expect(servePage(path)!.headers).toMatchObject({ 'Content-Security-Policy': contentSecurityPolicy, 'X-Content-Type-Options': 'nosniff', 'Referrer-Policy': 'no-referrer' });
    }
  });

  it('the HTML has no inline script, style or event handler, and the script never parses markup', () => {
    const html = source('settings.html');
    expect(html).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>/);
    expect(html).not.toMatch(/<style|\sstyle=|\son[a-z]+=/i);
    for (const file of modules) expect(source(file)).not.toMatch(/innerHTML|outerHTML|insertAdjacentHTML|document\.write|\beval\(|new Function/);
  });
});
