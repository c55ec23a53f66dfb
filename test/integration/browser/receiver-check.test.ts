/**
 * "Check my receiver" on the settings page (docs/settings.md "Webhooks") in headless Chromium
 * against the local stack: the admin clicks it on an endpoint whose receiver (on 127.0.0.1) accepts
 * everything; the verdict table shows each rule, the failed ones with what to change; it is there
 * again when the page opens; axe finds no serious or critical violation at 1280 and 375 px.
 * With UPDATE_SCREENSHOTS=1 the table's screenshot is written to docs/img/settings-receiver-check.png.
 */
import { describe, it, expect, beforeAll, afterAll } from '@jest/globals';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createRequire } from 'node:module';
import path from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { newTenant, testStack } from '../support/stack.js';
import { settingsLink } from '../support/settings-links.js';
import { addEndpoint } from '../../../functions/core/delivery/endpoints.js';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const shots = path.resolve('test-artifacts/settings');
const docShot = process.env.UPDATE_SCREENSHOTS === '1' ? path.resolve('docs/img/settings-receiver-check.png') : undefined;
const axeSource = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

interface AxeViolation { id: string; impact: string | null; help: string; nodes: { target: string[] }[] }
async function seriousViolations(page: Page): Promise<string[]> {
  if (!(await page.evaluate('typeof window.axe !== "undefined"'))) await page.evaluate(axeSource);
  const violations = await page.evaluate('window.axe.run(document, { resultTypes: ["violations"] }).then((r) => r.violations)') as AxeViolation[];
  return violations.filter((v) => v.impact === 'serious' || v.impact === 'critical').map((v) => `${v.impact} ${v.id}: ${v.help} (${v.nodes.map((n) => n.target.join(' ')).join(', ')})`);
}

let browser: Browser;
/** A receiver that accepts everything: the check fails it on every refusal rule. */
let careless: Server;
let carelessUrl: string;

beforeAll(async () => {
  if (!existsSync(CHROMIUM)) throw new Error(`Chromium not found at ${CHROMIUM}: install it (apt-get install chromium) or set CHROMIUM_PATH.`);
  careless = createServer((req, res) => {
    req.resume();
    req.on('end', () => res.writeHead(200).end('ok'));
  });
  await new Promise<void>((resolve) => careless.listen(0, '127.0.0.1', resolve));
  carelessUrl = `http://127.0.0.1:${(careless.address() as AddressInfo).port}/hooks`;
  mkdirSync(shots, { recursive: true });
  browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking'] });
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await new Promise<void>((resolve) => careless.close(() => resolve()));
});

describe('Check my receiver', () => {
  it('shows the verdict table with advice for each failed rule, keeps it for the next visit, and passes axe at 1280 and 375 px', async () => {
    const { deps } = await testStack();
    const { organizationId } = await newTenant({ name: 'Rosa’s Plumbing & Heating' });
    await addEndpoint(deps, organizationId, { url: carelessUrl, events: 'client.created', description: 'Zapier bridge' });
    const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    page.setDefaultTimeout(60_000);
    const problems: string[] = [];
    page.on('pageerror', (error) => problems.push(error.message));
    await page.goto(await settingsLink(organizationId));

    const card = page.getByRole('article', { name: carelessUrl, exact: true });
    await card.getByRole('button', { name: 'Check my receiver', exact: true }).click();
    const table = card.locator('[data-testid="check-result"]');
    await table.waitFor();
    await expect(table.locator('.outcome-title').textContent()).resolves.toContain('Receiver check: failed');
    await expect(table.locator('tbody tr').count()).resolves.toBe(8);
    const row = (rule: string) => table.locator(`tr[data-rule="${rule}"]`);
    await expect(row('signed').locator('.badge').allTextContents()).resolves.toEqual(['200', 'ok']);
    await expect(row('wrong-signature').locator('.badge').allTextContents()).resolves.toEqual(['200', 'fail']);
    await expect(row('wrong-signature').locator('td.advice').textContent()).resolves.toContain('docs/webhooks.md#checking-a-receiver-wrong-signature');
    await expect(row('retired-secret').locator('.badge').allTextContents()).resolves.toEqual(['not checked']);
    expect(await seriousViolations(page)).toEqual([]);
    await page.screenshot({ path: path.join(shots, 'receiver-check.png'), fullPage: true });
    if (docShot) await card.screenshot({ path: docShot });

    // Kept on the endpoint: there again when the page opens.
    await page.reload();
    await card.locator('[data-testid="check-result"] tr[data-rule="stale-timestamp"]').waitFor();
    await expect(card.locator('[data-testid="check-result"] .outcome-title').textContent()).resolves.toContain('failed');

    await page.setViewportSize({ width: 375, height: 812 });
    expect(await seriousViolations(page)).toEqual([]);
    await card.screenshot({ path: path.join(shots, 'receiver-check-mobile.png') });

    // A second check within the minute: the 429 is shown, the kept table stays.
    await card.getByRole('button', { name: 'Check my receiver', exact: true }).click();
    await card.getByText(/retry in \d+ s/).waitFor();
    await expect(card.locator('[data-testid="check-result"]').count()).resolves.toBe(1);
    expect(problems).toEqual([]);
    await page.close();
  });
});
