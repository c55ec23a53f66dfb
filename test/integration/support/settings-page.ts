/**
 * The organization settings page (docs/settings.md) in real headless Chromium, for the browser test
 * files that drive it (test/integration/browser/settings-page*.test.ts): one browser per file, the
 * page's controls, screenshots (test-artifacts/settings/, git-ignored; with UPDATE_SCREENSHOTS=1
 * those docs/settings.md shows are written to docs/img/ too) and axe-core (injected from its package).
 */
import { afterAll, afterEach, expect } from '@jest/globals';
import { copyFileSync, existsSync, mkdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { chromium, type Browser, type BrowserContext, type Locator, type Page } from 'playwright-core';
import { testStack } from './stack.js';
import { requireEndpoint } from '../../../functions/core/delivery/endpoints.js';
import { recordDelivery } from '../../../functions/core/delivery/queue.js';
import { transition } from '../../../functions/core/delivery/delivery-port.js';
import { deliveryAttempts } from '../../../functions/core/delivery/schedule.js';
import { webhookTestEvent } from '../../../functions/core/events/catalog.js';

// Browser globals used inside page.evaluate callbacks (the project's tsconfig has no DOM library).
declare const sessionStorage: { getItem(key: string): string | null };

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
export const shots = path.resolve('test-artifacts/settings');
/** The screenshots docs/settings.md shows (as docs/img/settings-<name>.png), rewritten only on request. */
const docShots = process.env.UPDATE_SCREENSHOTS === '1' ? path.resolve('docs/img') : undefined;
const documented = new Set(['deliveries-failed', 'deliveries-search', 'delivery-redelivered', 'endpoint-add', 'endpoint-chart', 'endpoint-options', 'leads-chart', 'expired-link', 'key-revoke-confirm', 'key-rotated', 'key-shown-once', 'lead-trail', 'lead-trail-mobile', 'link-expiring', 'mobile', 'page', 'recover-count', 'notifications']);
const axeSource = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

/** The file's browser and its context (each test file has its own copy of this module). */
export let browser: Browser;
export let context: BrowserContext;

/** Launches Chromium with a context whose copy buttons may use the clipboard on the stack's origin. */
export async function startBrowser(): Promise<void> {
  if (!existsSync(CHROMIUM)) {
    throw new Error(`Chromium not found at ${CHROMIUM}: install it (apt-get install chromium) or set CHROMIUM_PATH.`);
  }
  const { info } = await testStack();
  mkdirSync(shots, { recursive: true });
  if (docShots) mkdirSync(docShots, { recursive: true });
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
  // The copy buttons write to the clipboard; the test reads it back.
  context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  context.setDefaultTimeout(60_000); // a loaded machine renders slowly; each wait is for a condition
  await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: new URL(info.apiUrl).origin });
}

/** The hooks both browser files need: no page problem after each test; the browser and the receiver closed at the end. */
export function checkPagesThenClose(receiver: { stop(): Promise<void> }): void {
  afterEach(() => {
    expect(pageProblems.splice(0)).toEqual([]);
  });
  afterAll(async () => {
    await browser?.close();
    await receiver.stop();
  });
}

/** Script errors and Content-Security-Policy violations of every page: each test ends without any (the files check it after each). */
export const pageProblems: string[] = [];
export function watch(page: Page): Page {
  page.on('pageerror', (error) => pageProblems.push(`script error: ${error.message}`));
  page.on('console', (message) => {
    if (message.type() === 'error' && /Content Security Policy/i.test(message.text())) pageProblems.push(message.text());
  });
  return page;
}

export async function openSettings(url: string): Promise<Page> {
  const page = watch(await context.newPage());
  await page.goto(url);
  return page;
}

/** `section`: the docs show only that section (the run's artifact is still the whole page). */
export async function screenshot(page: Page, name: string, fullPage = true, section?: string): Promise<void> {
  // From the top: a full-page capture of a scrolled page draws the sticky header mid-page.
  if (fullPage) await page.evaluate('window.scrollTo(0, 0)');
  await page.screenshot({ path: path.join(shots, `${name}.png`), fullPage });
  if (!docShots || !documented.has(name)) return;
  const doc = path.join(docShots, `settings-${name}.png`);
  if (section) await page.locator(section).screenshot({ path: doc });
  else copyFileSync(path.join(shots, `${name}.png`), doc);
}

interface AxeViolation { id: string; impact: string | null; help: string; nodes: { target: string[] }[] }
/** axe-core's serious and critical violations on the page as it is now (its script added by the test, not the page). */
export async function seriousViolations(page: Page): Promise<string[]> {
  // Evaluated through the DevTools protocol: the page's CSP (rightly) refuses an inline script tag.
  if (!(await page.evaluate('typeof window.axe !== "undefined"'))) await page.evaluate(axeSource);
  const violations = await page.evaluate('window.axe.run(document, { resultTypes: ["violations"] }).then((r) => r.violations)') as AxeViolation[];
  return violations.filter((v) => v.impact === 'serious' || v.impact === 'critical').map((v) => `${v.impact} ${v.id}: ${v.help} (${v.nodes.map((n) => n.target.join(' ')).join(', ')})`);
}

export const button = (scope: Page | Locator, name: string) => scope.getByRole('button', { name, exact: true });
/** The secret shown once in the panel whose title mentions `about` (an earlier panel may still be on screen). */
export async function shownOnce(page: Page, section: string, about: string): Promise<string> {
  const value = page.locator(`#${section} .reveal`, { hasText: about }).locator('[data-testid="shown-once"]');
  await value.waitFor();
  return (await value.textContent())!.trim();
}
export const keyRow = (page: Page, name: string) => page.locator('#keys tbody tr', { has: page.getByRole('rowheader', { name: new RegExp(`^${name}`) }) });
export const endpointCard = (page: Page, url: string) => page.getByRole('article', { name: url, exact: true });
/** Adds an endpoint for `client.created` through the page's dialog; its signing secret, shown once. */
export async function addEndpointInPage(page: Page, url: string): Promise<string> {
  await button(page, 'Add endpoint').click();
  const dialog = page.getByRole('dialog', { name: 'Add endpoint' });
  await dialog.getByLabel('Endpoint URL').fill(url);
  await dialog.locator('input[value="client.created"]').check();
  await button(dialog, 'Save endpoint').click();
  return shownOnce(page, 'webhooks', url);
}

/** Refreshes the deliveries list and counts its rows in `status` once the answer is shown. */
export async function listedDeliveries(page: Page, status: string): Promise<number> {
  await button(page.locator('#deliveries'), 'Refresh').click();
  await page.locator('#deliveries-body[aria-busy="false"]').waitFor();
  return page.locator('#deliveries tbody tr', { has: page.locator('.badge', { hasText: new RegExp(`^${status}$`) }) }).count();
}

export async function leadEndpointStatus(key: string): Promise<number> {
  const { api } = await testStack();
  return (await api('/api/webhook/leads', { headers: { 'X-API-Key': key } })).status;
}

/**
 * A `webhook.test` delivery of organization `orgA` to `endpointId` that failed for good, every attempt
 * answered `statusCode` with `body`: recorded as the fan-out records one (recordDelivery), then
 * written through the delivery record's own transitions, as the delivery function writes each
 * attempt and the last one. For a case that needs a failed delivery to exist: the real path (an
 * attempt, retries 1 s apart, none left) is the failing endpoint's first test event in settings-page.test.ts. Not
 * made by the stack: its retries take about 4 s, and two deliveries failing together on one
 * endpoint open its circuit (5 failures in a row), after which the rest wait for probes 2 s apart.
 */
export async function failedDelivery(orgA: string, endpointId: string, statusCode: number, body: string): Promise<string> {
  const { deps } = await testStack();
  const endpoint = await requireEndpoint(deps, orgA, endpointId);
  const message = (await recordDelivery(deps, webhookTestEvent(orgA, new Date()), endpoint))!;
  const attempts = deliveryAttempts(deps.config);
  for (let n = 1; n <= attempts; n++) {
    const attempt = { at: new Date().toISOString(), attempt: n, statusCode, latencyMs: 4, responseBody: body };
    const written = n < attempts
      ? await transition(deps, message, { to: 'attempted', attempt, nextAttemptAt: new Date(Date.now() + 1000).toISOString(), round: message.round })
      : await transition(deps, message, { to: 'failed', attempt, reason: `no success after ${n} attempts`, round: message.round });
    expect(written).toBe(true);
  }
  return message.deliveryId;
}

/** The token the page keeps for this tab (the link's fragment is gone from the address bar). */
export const pageToken = (page: Page) => page.evaluate(() => sessionStorage.getItem('crm-settings-token'));

/** A management API call made from the page's own origin with its own token, as its script does. */
export async function fetchFromPage(page: Page, pathname: string, method = 'GET', body?: unknown) {
  return page.evaluate(async ({ pathname, method, body }) => {
    const res = await fetch(pathname, {
      method,
      headers: { Authorization: `Bearer ${sessionStorage.getItem('crm-settings-token')}`, 'Content-Type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: res.status, text: await res.text() };
  }, { pathname, method, body });
}
