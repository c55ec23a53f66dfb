/**
 * The organization settings page (docs/settings.md) in real headless Chromium against the local stack,
 * opened from a settings link as an admin would (`crm settings-link`). Keys made on the page are
 * used on the lead endpoint; webhooks go to a loopback receiver that verifies each request with
 * `standardwebhooks`. The tests run in the order an admin acts, sharing one organization.
 * axe-core (injected from its package) checks the page at desktop width and at 375 px.
 * Screenshots land in test-artifacts/settings/ (git-ignored); with UPDATE_SCREENSHOTS=1 those that
 * docs/settings.md shows are written to docs/img/ too.
 */
import { describe, it, expect, beforeAll, afterAll, afterEach } from '@jest/globals';
import { createPublicKey, verify } from 'node:crypto';
import { copyFileSync, existsSync, mkdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { chromium, type Browser, type BrowserContext, type Locator, type Page } from 'playwright-core';
import { eventually, testStack } from '../support/stack.js';
import { Receiver } from '../support/receiver.js';
import { createOrganization } from '../../../functions/core/tenancy/organizations.js';
import { createApiKey } from '../../../functions/core/tenancy/api-keys.js';
import { addEndpoint, requireEndpoint } from '../../../functions/core/delivery/endpoints.js';
import { recordDelivery } from '../../../functions/core/delivery/queue.js';
import { transition } from '../../../functions/core/delivery/delivery-port.js';
import { deliveryAttempts } from '../../../functions/core/delivery/schedule.js';
import { webhookTestEvent } from '../../../functions/core/events/catalog.js';
import { listRecipients, suppressRecipient } from '../../../functions/core/notify/recipients.js';
import { cliSettingsLink, expiredSettingsLink, settingsLink, settingsLinkExpiringIn } from '../support/settings-links.js';

// Browser globals used inside page.evaluate callbacks (the project's tsconfig has no DOM library).
declare const sessionStorage: { getItem(key: string): string | null };
declare const navigator: { clipboard: { readText(): Promise<string> } };

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const shots = path.resolve('test-artifacts/settings');
/** The screenshots docs/settings.md shows (as docs/img/settings-<name>.png), rewritten only on request. */
const docShots = process.env.UPDATE_SCREENSHOTS === '1' ? path.resolve('docs/img') : undefined;
const documented = new Set(['deliveries-failed', 'deliveries-search', 'delivery-redelivered', 'endpoint-add', 'endpoint-chart', 'endpoint-options', 'leads-chart', 'expired-link', 'key-revoke-confirm', 'key-rotated', 'key-shown-once', 'lead-trail', 'lead-trail-mobile', 'link-expiring', 'mobile', 'page', 'recover-count', 'notifications']);
const axeSource = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

let browser: Browser;
let context: BrowserContext;
const receiver = new Receiver();
/** The admin's organization (A) and another one (B) whose data A's link must never reach. */
let orgA: string;
let orgB: { id: string; key: string; keyId: string; endpointId: string; endpointUrl: string };

/** Script errors and Content-Security-Policy violations of every page: each test ends without any. */
const pageProblems: string[] = [];
function watch(page: Page): Page {
  page.on('pageerror', (error) => pageProblems.push(`script error: ${error.message}`));
  page.on('console', (message) => {
    if (message.type() === 'error' && /Content Security Policy/i.test(message.text())) pageProblems.push(message.text());
  });
  return page;
}

async function openSettings(url: string): Promise<Page> {
  const page = watch(await context.newPage());
  await page.goto(url);
  return page;
}

/** `section`: the docs show only that section (the run's artifact is still the whole page). */
async function screenshot(page: Page, name: string, fullPage = true, section?: string): Promise<void> {
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
async function seriousViolations(page: Page): Promise<string[]> {
  // Evaluated through the DevTools protocol: the page's CSP (rightly) refuses an inline script tag.
  if (!(await page.evaluate('typeof window.axe !== "undefined"'))) await page.evaluate(axeSource);
  const violations = await page.evaluate('window.axe.run(document, { resultTypes: ["violations"] }).then((r) => r.violations)') as AxeViolation[];
  return violations.filter((v) => v.impact === 'serious' || v.impact === 'critical').map((v) => `${v.impact} ${v.id}: ${v.help} (${v.nodes.map((n) => n.target.join(' ')).join(', ')})`);
}

const button = (scope: Page | Locator, name: string) => scope.getByRole('button', { name, exact: true });
/** The secret shown once in the panel whose title mentions `about` (an earlier panel may still be on screen). */
async function shownOnce(page: Page, section: string, about: string): Promise<string> {
  const value = page.locator(`#${section} .reveal`, { hasText: about }).locator('[data-testid="shown-once"]');
  await value.waitFor();
  return (await value.textContent())!.trim();
}
const keyRow = (page: Page, name: string) => page.locator('#keys tbody tr', { has: page.getByRole('rowheader', { name: new RegExp(`^${name}`) }) });
const endpointCard = (page: Page, url: string) => page.getByRole('article', { name: url, exact: true });
/** Adds an endpoint for `client.created` through the page's dialog; its signing secret, shown once. */
async function addEndpointInPage(page: Page, url: string): Promise<string> {
  await button(page, 'Add endpoint').click();
  const dialog = page.getByRole('dialog', { name: 'Add endpoint' });
  await dialog.getByLabel('Endpoint URL').fill(url);
  await dialog.locator('input[value="client.created"]').check();
  await button(dialog, 'Save endpoint').click();
  return shownOnce(page, 'webhooks', url);
}

/** Refreshes the deliveries list and counts its rows in `status` once the answer is shown. */
async function listedDeliveries(page: Page, status: string): Promise<number> {
  await button(page.locator('#deliveries'), 'Refresh').click();
  await page.locator('#deliveries-body[aria-busy="false"]').waitFor();
  return page.locator('#deliveries tbody tr', { has: page.locator('.badge', { hasText: new RegExp(`^${status}$`) }) }).count();
}

async function leadEndpointStatus(key: string): Promise<number> {
  const { api } = await testStack();
  return (await api('/api/webhook/leads', { headers: { 'X-API-Key': key } })).status;
}

/**
 * A `webhook.test` delivery of organization A to `endpointId` that failed for good, every attempt
 * answered `statusCode` with `body`: recorded as the fan-out records one (recordDelivery), then
 * written through the delivery record's own transitions, as the delivery function writes each
 * attempt and the last one. For a case that needs a failed delivery to exist: the real path (an
 * attempt, retries 1 s apart, none left) is the failing endpoint's first test event below. Not
 * made by the stack: its retries take about 4 s, and two deliveries failing together on one
 * endpoint open its circuit (5 failures in a row), after which the rest wait for probes 2 s apart.
 */
async function failedDelivery(endpointId: string, statusCode: number, body: string): Promise<string> {
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
const pageToken = (page: Page) => page.evaluate(() => sessionStorage.getItem('crm-settings-token'));

/** A management API call made from the page's own origin with its own token, as its script does. */
async function fetchFromPage(page: Page, pathname: string, method = 'GET', body?: unknown) {
  return page.evaluate(async ({ pathname, method, body }) => {
    const res = await fetch(pathname, {
      method,
      headers: { Authorization: `Bearer ${sessionStorage.getItem('crm-settings-token')}`, 'Content-Type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: res.status, text: await res.text() };
  }, { pathname, method, body });
}

beforeAll(async () => {
  if (!existsSync(CHROMIUM)) {
    throw new Error(`Chromium not found at ${CHROMIUM}: install it (apt-get install chromium) or set CHROMIUM_PATH.`);
  }
  const { deps, info } = await testStack();
  await receiver.start();
  orgA = (await createOrganization(deps, { name: 'Rosa’s Plumbing & Heating', plan: 'pro' })).id;
  const b = await createOrganization(deps, { name: 'Other Tenant Roofing' });
  const bKey = await createApiKey(deps, b.id, 'other tenant key');
  const bEndpoint = await addEndpoint(deps, b.id, { url: `${receiver.url}/other-tenant`, events: 'client.created' });
  orgB = { id: b.id, key: bKey.key, keyId: bKey.record.keyId, endpointId: bEndpoint.endpoint.id, endpointUrl: bEndpoint.endpoint.url };

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
}, 150_000);

afterEach(() => {
  expect(pageProblems.splice(0)).toEqual([]);
});

afterAll(async () => {
  await browser?.close();
  await receiver.stop();
});

describe('the settings page, opened from a settings link', () => {
  let page: Page;
  let firstKey: string;
  let rotatedKey: string;

  it('given a link, it shows the organization and takes the token out of the address bar, under a strict CSP', async () => {
    const link = await cliSettingsLink(orgA);
    page = watch(await context.newPage());
    const response = await page.goto(link);
    expect(response?.status()).toBe(200);
    const headers = response!.headers();
    expect(headers['content-security-policy']).toBe(
      "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'");
    expect(headers).toMatchObject({ 'x-content-type-options': 'nosniff', 'referrer-policy': 'no-referrer', 'cache-control': 'no-store' });

    await page.locator('#org-name', { hasText: 'Rosa’s Plumbing & Heating' }).waitFor();
    expect(page.url()).not.toContain('token');
    expect(page.url()).toMatch(/\/settings$/);
    await page.locator('#overview .stat').first().waitFor();
    expect(await page.textContent('#overview')).toContain('Pro');
    // The quick start uses the real base URL and a placeholder, never a key.
    const { info } = await testStack();
    const quickstart = await page.locator('#quickstart-body').innerText();
    expect(quickstart).toContain(`${info.apiUrl}/api/webhook/leads`);
    expect(quickstart).toContain('$CRM_API_KEY');
    expect(quickstart).not.toMatch(/crm_(live|pub)_[0-9A-Za-z]{8,}/);
    expect(quickstart).not.toContain('uuidgen');
    expect(await page.locator('h1:visible').count()).toBe(1);
    await page.getByText('No webhooks yet — add an endpoint to get events').waitFor();
    await screenshot(page, 'overview');

    // A reload keeps working: the token stays in this tab's session storage.
    await page.reload();
    await page.locator('#org-name', { hasText: 'Rosa’s Plumbing & Heating' }).waitFor();
  });

  it('Generate API key shows the key once, with a copy button; the key answers 200 on the lead endpoint', async () => {
    await button(page, 'Generate API key').click();
    await page.getByLabel('Name').fill('Website backend');
    await page.locator('#key-form [type=submit]').click();
    firstKey = await shownOnce(page, 'keys', 'Your new key “Website backend”');
    expect(firstKey).toMatch(/^crm_live_[0-9A-Za-z]+$/);
    // The line the quick start's commands read the key from, beside it.
    expect(await page.locator('[data-testid="export-line"]').textContent()).toBe(`export CRM_API_KEY='${firstKey}'`);
    // Told apart by its last 4 characters and its id.
    await keyRow(page, 'Website backend').locator('code', { hasText: `…${firstKey.slice(-4)}` }).waitFor();
    expect(await keyRow(page, 'Website backend').innerText()).toMatch(/key_\w+/);

    await button(page.locator('#keys .reveal'), 'Copy').click();
    expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(firstKey);
    await keyRow(page, 'Website backend').waitFor();
    await screenshot(page, 'key-shown-once', true, '#keys');

    expect(await leadEndpointStatus(firstKey)).toBe(200);

    // Shown once: after a reload the key is listed, never shown again.
    await page.reload();
    await keyRow(page, 'Website backend').waitFor();
    expect(await page.locator('[data-testid="shown-once"]').count()).toBe(0);
    expect(await page.content()).not.toContain(firstKey);
  });

  it('rotating with a grace period shows the new key once; old and new both work during the grace', async () => {
    await keyRow(page, 'Website backend').getByRole('button', { name: /^Rotate “Website backend”/ }).click();
    await page.getByLabel('Keep the old one working for').selectOption('24');
    await page.locator('#rotate-submit').click();
    rotatedKey = await shownOnce(page, 'keys', 'New key for “Website backend”');
    expect(rotatedKey).toMatch(/^crm_live_/);
    expect(rotatedKey).not.toBe(firstKey);
    // The old key is labelled as such, with when it stops working; the new one by its own last 4.
    const oldRow = page.locator('#keys tbody tr', { has: page.locator('code', { hasText: `…${firstKey.slice(-4)}` }) });
    await oldRow.locator('.badge', { hasText: /^old$/ }).waitFor();
    expect(await oldRow.innerText()).toMatch(/works until/);
    await page.locator('#keys tbody tr', { has: page.locator('code', { hasText: `…${rotatedKey.slice(-4)}` }) }).locator('.badge', { hasText: /^active$/ }).waitFor();
    await screenshot(page, 'key-rotated', true, '#keys');

    expect(await leadEndpointStatus(rotatedKey)).toBe(200);
    expect(await leadEndpointStatus(firstKey)).toBe(200);
  });

  it('revoking asks for confirmation naming the key; afterwards the key is refused (401), within the time the page states, and the refusal is in the request log', async () => {
    const activeRow = page.locator('#keys tbody tr', { has: page.locator('.badge', { hasText: 'active' }) })
      .filter({ has: page.getByRole('rowheader', { name: /^Website backend/ }) });
    await activeRow.getByRole('button', { name: /^Revoke “Website backend”/ }).click();
    const dialog = page.getByRole('dialog', { name: /Revoke/ });
    await dialog.waitFor();
    // The confirmation names the key by name, id and last 4, and says how long a revocation takes to reach every server.
    const keyId = await activeRow.getAttribute('data-key-id');
    expect(await dialog.innerText()).toContain(`“Website backend” (${keyId}, …${rotatedKey.slice(-4)})`);
    const { revocationSeconds } = JSON.parse((await fetchFromPage(page, '/api/settings')).text) as { revocationSeconds: number };
    expect(revocationSeconds).toBeLessThanOrEqual(5);
    expect(await dialog.innerText()).toContain(`refused within ${revocationSeconds} ${revocationSeconds === 1 ? 'second' : 'seconds'} (`);
    await screenshot(page, 'key-revoke-confirm', false);
    // The key is in the server's cache when it is revoked (a warm container), and keeps working until then.
    expect(await leadEndpointStatus(rotatedKey)).toBe(200);
    const answered = page.waitForResponse((r) => r.request().method() === 'DELETE' && r.url().includes('/api/settings/keys/'));
    await button(dialog, 'Revoke key').click();
    expect((await answered).status()).toBe(200);
    const revokedAt = Date.now();

    // Polled until refused. A request is accepted only while a server still holds the key it read
    // before the revocation, so none sent later than `revocationSeconds` after the revocation was
    // answered may be accepted (the deadline is the configured time, not a sleep).
    let lastAcceptedSentAt = revokedAt;
    await eventually(async () => {
      const sent = Date.now();
      if ((await leadEndpointStatus(rotatedKey)) === 401) return true;
      lastAcceptedSentAt = sent;
      return false;
    }, { what: 'the revoked key refused', intervalMs: 50 });
    expect(lastAcceptedSentAt - revokedAt).toBeLessThanOrEqual(revocationSeconds * 1000);
    await page.locator('#keys-status', { hasText: 'revoked' }).waitFor();
    await page.locator('#keys tbody .badge', { hasText: 'revoked' }).waitFor();
    expect(await leadEndpointStatus(rotatedKey)).toBe(401);
    expect(await leadEndpointStatus(firstKey)).toBe(200); // still in its grace period

    // The refused call is logged under the organization, with the key's name (and never billed).
    await button(page.locator('#requests'), 'Refresh').click();
    const refused = page.locator('#requests tbody tr', { hasText: 'refused: the key is revoked' });
    await refused.first().waitFor();
    expect(await refused.first().innerText()).toMatch(/401[\s\S]*Website backend/);
  });

  it('Add endpoint: events grouped with both name forms, the secret shown once; Send test event shows the outcome, the receiver verifies it', async () => {
    const url = `${receiver.url}/hooks/ok`;
    await button(page, 'Add endpoint').click();
    const dialog = page.getByRole('dialog', { name: 'Add endpoint' });
    await dialog.getByLabel('Endpoint URL').fill(url);
    // Each event once, with its alias: `client.created` / `client_created`.
    const option = dialog.locator('.event-option', { has: page.locator('input[value="client.created"]') });
    await option.waitFor();
    expect(await option.innerText()).toContain('client_created');
    expect(await dialog.locator('input[value="client.created"]').count()).toBe(1);
    expect(await dialog.locator('.event-group-title').allTextContents()).toEqual(expect.arrayContaining(['Clients']));
    await option.locator('input').check();
    await screenshot(page, 'endpoint-add', false);
    await button(dialog, 'Save endpoint').click();

    const secret = await shownOnce(page, 'webhooks', url);
    expect(secret).toMatch(/^whsec_/);
    // The receiver answers the first test event slowly enough for the progress indication to be seen.
    receiver.script('/hooks/ok', secret, { status: 204, delayMs: 600 }, { status: 204 });

    const card = endpointCard(page, url);
    await card.waitFor();
    await button(card, 'Send test event').click();
    await card.locator('button[aria-busy="true"]', { hasText: 'Sending…' }).waitFor();
    await card.locator('.test-outcome .loading').waitFor();
    const outcome = card.locator('.outcome');
    await outcome.waitFor();
    expect(await outcome.innerText()).toMatch(/Test event delivered\s*204\s*in [\d,]+ ms/);
    await screenshot(page, 'test-event-delivered');

    const [received] = receiver.on('/hooks/ok');
    expect(received.verifyError).toBeUndefined();
    expect(received.event).toMatchObject({ type: 'webhook.test', organization_id: orgA });

    // A test event of a type the endpoint subscribes to: its catalog example, marked as a test.
    await card.getByLabel(/Test event type/).selectOption('client.created');
    await button(card, 'Send test event').click();
    await card.locator('.outcome', { hasText: 'client.created' }).waitFor();
    const typed = receiver.on('/hooks/ok').at(-1)!;
    expect(typed.verifyError).toBeUndefined();
    expect(JSON.parse(typed.body)).toMatchObject({ type: 'client.created', organization_id: orgA, test: true, data: { object: { organization_id: orgA } } });
  });

  it('Add endpoint with ed25519 signing: its public key is shown (no secret) and verifies the test event; Rotate key shows both keys with the grace\'s end', async () => {
    const url = `${receiver.url}/hooks/ed25519`;
    receiver.script('/hooks/ed25519', '', { status: 204 });
    await button(page, 'Add endpoint').click();
    const dialog = page.getByRole('dialog', { name: 'Add endpoint' });
    await dialog.getByLabel('Endpoint URL').fill(url);
    await dialog.locator('input[value="client.created"]').check();
    await dialog.getByLabel(/ed25519/).check();
    await button(dialog, 'Save endpoint').click();
    const publicKey = await shownOnce(page, 'webhooks', `Public key for ${url}`);
    expect(publicKey).toMatch(/^whpk_[A-Za-z0-9+/]{43}=$/);

    const card = endpointCard(page, url);
    const signing = card.getByTestId('endpoint-signing');
    await signing.waitFor();
    expect(await signing.innerText()).toContain('ed25519 (v1a)');
    expect(await signing.locator('.public-key').textContent()).toBe(publicKey);
    await button(card, 'Send test event').click();
    await card.locator('.outcome', { hasText: 'Test event delivered' }).waitFor();
    const received = receiver.on('/hooks/ed25519').at(-1)!;
    const key = createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x: Buffer.from(publicKey.slice(5), 'base64').toString('base64url') }, format: 'jwk' });
    const [version, signature] = String(received.headers['webhook-signature']).split(',');
    expect(version).toBe('v1a');
    expect(verify(null, Buffer.from(`${received.headers['webhook-id']}.${received.headers['webhook-timestamp']}.${received.body}`), key, Buffer.from(signature!, 'base64'))).toBe(true);

    await button(card, 'Rotate key').click();
    const rotate = page.getByRole('dialog', { name: 'Rotate signing key' });
    await button(rotate, 'Rotate').click();
    const retiring = endpointCard(page, url).getByTestId('endpoint-signing').locator('p', { hasText: 'Also signing until' });
    await retiring.waitFor();
    expect(await retiring.locator('.public-key').textContent()).toBe(publicKey);
    expect(await endpointCard(page, url).getByTestId('endpoint-signing').locator('.public-key').first().textContent()).not.toBe(publicKey);
    expect(await seriousViolations(page)).toEqual([]);
  });

  it('a failing endpoint: its attempts are shown; after the receiver recovers, Re-deliver and Re-deliver all failed send them again', async () => {
    const url = `${receiver.url}/hooks/failing`;
    const secret = await addEndpointInPage(page, url);
    receiver.script('/hooks/failing', secret, { status: 500, body: 'database unavailable' });
    const card = endpointCard(page, url);
    // An earlier failed delivery to it (see failedDelivery), for "Re-deliver all failed" below.
    const earlier = await failedDelivery((await card.getAttribute('data-endpoint-id'))!, 500, 'database unavailable');

    // A test event, refused.
    const sent = page.waitForResponse((r) => r.request().method() === 'POST' && /\/api\/settings\/webhooks\/[^/]+\/test$/.test(new URL(r.url()).pathname));
    await button(card, 'Send test event').click();
    const deliveryId = (JSON.parse(await (await sent).text()) as { delivery: { id: string } }).delivery.id;
    await card.locator('.outcome', { hasText: 'not delivered' }).waitFor();
    expect(await card.locator('.outcome').innerText()).toContain('500');

    // Its retries (1 s apart on the test stack) run out: it ends up failed, listed with the earlier one.
    await page.locator('#filter-endpoint').selectOption({ label: url });
    await page.locator('#filter-status').selectOption('failed');
    await eventually(async () => (await listedDeliveries(page, 'failed')) === 2,
      { what: 'two failed deliveries listed', intervalMs: 500 });
    expect(await Promise.all((await page.locator('#deliveries tbody tr').all()).map((row) => row.getAttribute('data-delivery-id')))).toEqual([deliveryId, earlier]);
    await screenshot(page, 'deliveries-failed', true, '#deliveries');

    // The test event's detail: every attempt with its status code and the response excerpt.
    await page.locator(`#deliveries tbody tr[data-delivery-id="${deliveryId}"]`).getByRole('button', { name: /^Details/ }).click();
    const detail = page.getByRole('dialog', { name: /Delivery of webhook\.test/ });
    await detail.locator('.attempt').first().waitFor();
    const attempts = await detail.locator('.attempt').count();
    expect(attempts).toBe(deliveryAttempts((await testStack()).deps.config));
    expect(await detail.locator('.attempt').first().innerText()).toMatch(/#1\s*500/);
    expect(await detail.locator('.excerpt').first().innerText()).toContain('database unavailable');
    // Each attempt's request and response headers, a click away.
    await detail.locator('.attempt').first().locator('summary', { hasText: 'Headers' }).click();
    expect(await detail.locator('.attempt').first().getByRole('region', { name: /^Request headers/ }).innerText()).toMatch(/^webhook-id: evt_/m);
    await screenshot(page, 'delivery-attempts', false);

    receiver.script('/hooks/failing', secret, { status: 200, body: 'ok' });
    const before = receiver.on('/hooks/failing').length;
    await button(detail, 'Re-deliver').click();
    await detail.locator('.flash', { hasText: 'Re-delivered.' }).waitFor();
    // The manual attempt continues the numbering and is marked manual.
    const last = await detail.locator('.attempt').last().innerText();
    expect(last).toMatch(new RegExp(`#${attempts + 1}\\s*manual\\s*200`, "i"));
    await detail.locator('.attempt').last().scrollIntoViewIfNeeded();
    await screenshot(page, 'delivery-redelivered', false);
    await button(detail, 'Close').click();
    const redelivered = receiver.on('/hooks/failing').slice(before);
    expect(redelivered.length).toBeGreaterThanOrEqual(1);
    expect(redelivered.map((r) => r.verifyError ?? 'verified')).toEqual(redelivered.map(() => 'verified'));

    // The other one, with the button for all failed ones (of the filtered endpoint).
    await button(page, 'Re-deliver all failed').click();
    const confirm = page.getByRole('dialog', { name: /Re-deliver all failed/ });
    await button(confirm, 'Re-deliver').click();
    await page.locator('#deliveries-status', { hasText: '1 failed delivery queued for re-delivery' }).waitFor();
    await page.locator('#filter-status').selectOption('delivered');
    await eventually(async () => (await listedDeliveries(page, 'delivered')) === 2,
      { what: 'both deliveries delivered', intervalMs: 500 });
    await screenshot(page, 'deliveries-redelivered');
  }, 240_000);

  it('the request log lists the lead endpoint calls made with the keys', async () => {
    await button(page.locator('#requests'), 'Refresh').click();
    await page.locator('#requests-body[aria-busy="false"]').waitFor();
    // At least the four 200s of the keys above (GET /api/webhook/leads), each with its key id.
    const rows = page.locator('#requests tbody tr', { hasText: 'GET /api/webhook/leads' }).filter({ has: page.locator('.badge', { hasText: /^200$/ }) });
    expect(await rows.count()).toBeGreaterThanOrEqual(4);
    expect(await rows.first().innerText()).toMatch(/key_\w+/);
    await page.locator('#requests').screenshot({ path: path.join(shots, 'request-log.png') });
    await page.setViewportSize({ width: 375, height: 812 });
    await page.evaluate('window.scrollTo(0, 0)');
    await screenshot(page, 'mobile', false);
    await page.setViewportSize({ width: 1280, height: 900 });
  });

  it("a lead's trail: from its request-log row, the client it created, its client.created event, and each delivery with its attempt, as the receiver got it", async () => {
    const { api } = await testStack();
    const lead = await api('/api/webhook/leads', {
      method: 'POST', headers: { 'X-API-Key': firstKey, 'Content-Type': 'application/json' },
      body: JSON.stringify({ first_name: 'Ada', last_name: 'Trail', email: 'ada.trail@example.com' }),
    });
    expect(lead.status).toBe(201);
    const { id: clientId } = (await lead.json()) as { id: string };
    const requestId = lead.headers.get('x-request-id')!;
    // The endpoint added above (client.created) gets the lead's event, signed.
    const received = await eventually(async () => receiver.on('/hooks/ok').find((r) => r.event?.type === 'client.created' && r.event.data.object.id === clientId),
      { what: "the lead's webhook received" });
    expect(received.verifyError).toBeUndefined();
    // Its attempt is recorded just after the receiver answers.
    await eventually(async () => /"statusCode":204/.test((await fetchFromPage(page, `/api/settings/clients/${clientId}/trail`)).text), { what: 'the attempt recorded' });

    await button(page.locator('#requests'), 'Refresh').click();
    await page.locator('#requests-body[aria-busy="false"]').waitFor();
    const row = page.locator('#requests tbody tr', { hasText: requestId });
    await row.getByRole('button', { name: `Trail of lead ${clientId}` }).click();
    const dialog = page.getByRole('dialog', { name: 'Lead trail: Ada Trail' });
    const step = dialog.locator('[data-testid="trail-submission"]');
    await step.waitFor();
    expect(await step.count()).toBe(1);
    expect(await dialog.locator('.facts').innerText()).toContain(clientId);
    expect(await step.innerText()).toMatch(/Created the client\s*this request/i);
    expect(await step.locator('[data-testid="trail-event"] p').first().innerText()).toBe(`Event client.created ${received.event!.id}`);
    const delivery = step.locator('[data-testid="trail-delivery"]', { hasText: `${receiver.url}/hooks/ok` });
    expect(await delivery.locator('.badge').first().textContent()).toBe('delivered');
    expect(await delivery.locator('.attempt').first().innerText()).toMatch(/#1\s*204/);
    await screenshot(page, 'lead-trail', false);
    expect(await seriousViolations(page)).toEqual([]);
    await page.setViewportSize({ width: 375, height: 812 });
    expect(await seriousViolations(page)).toEqual([]);
    await screenshot(page, 'lead-trail-mobile', false);
    await page.setViewportSize({ width: 1280, height: 900 });
    await button(dialog, 'Close').click();
  });

  it('the delivery log filters by event type and finds a delivery by its id; Recover counts the failed deliveries since a time, then queues them', async () => {
    const url = `${receiver.url}/hooks/recover`;
    const secret = await addEndpointInPage(page, url);
    // A test event to it that failed (see failedDelivery): the receiver was down for maintenance.
    const failed = await failedDelivery((await endpointCard(page, url).getAttribute('data-endpoint-id'))!, 503, 'down for maintenance');

    // Filters: this endpoint, webhook.test, failed.
    await page.locator('#filter-status').selectOption('failed');
    await page.locator('#filter-endpoint').selectOption({ label: url });
    await page.locator('#filter-event').selectOption('webhook.test');
    await eventually(async () => (await listedDeliveries(page, 'failed')) === 1, { what: 'the failed delivery listed', intervalMs: 500 });
    const deliveryId = await page.locator('#deliveries tbody tr').first().getAttribute('data-delivery-id');
    expect(deliveryId).toBe(failed);
    await page.locator('#filter-event').selectOption('client.created');
    await page.locator('#deliveries-body[aria-busy="false"]').waitFor();
    await page.getByText('No deliveries match these filters').waitFor();

    // Search by the delivery's id, every other filter cleared.
    for (const id of ['#filter-status', '#filter-endpoint', '#filter-event']) await page.locator(id).selectOption('');
    await page.getByLabel('Event or delivery ID').fill(deliveryId!);
    await button(page, 'Search').click();
    await eventually(async () => (await page.locator('#deliveries tbody tr').count()) === 1 && (await page.locator('#deliveries tbody tr').getAttribute('data-delivery-id')) === deliveryId,
      { what: 'only the searched delivery listed' });
    await screenshot(page, 'deliveries-search', true, '#deliveries');

    // Recover since an hour ago, this endpoint: the count first, nothing queued yet.
    receiver.script('/hooks/recover', secret, { status: 200, body: 'back' });
    const before = receiver.on('/hooks/recover').length;
    await button(page, 'Recover…').click();
    const recover = page.getByRole('dialog', { name: 'Recover failed deliveries' });
    await recover.getByLabel('Endpoint').selectOption({ label: url });
    await recover.getByLabel('Failed since').fill(new Date(Date.now() - 3_600_000 - new Date().getTimezoneOffset() * 60_000).toISOString().slice(0, 16));
    await button(recover, 'Count failed deliveries').click();
    await recover.locator('#recover-count', { hasText: '1 failed delivery since' }).waitFor();
    await screenshot(page, 'recover-count', false);
    expect(receiver.on('/hooks/recover').length).toBe(before);
    await button(recover, 'Re-deliver 1').click();
    await page.locator('#deliveries-status', { hasText: '1 failed delivery queued for re-delivery' }).waitFor();
    await eventually(async () => receiver.on('/hooks/recover').length > before, { what: 'the recovered delivery received' });
    expect(receiver.on('/hooks/recover').at(-1)!.verifyError).toBeUndefined();
    await page.getByLabel('Event or delivery ID').fill('');
    await button(page, 'Search').click();
  }, 240_000);

  it('each endpoint shows a chart of its deliveries (24 h, 7 days) with its figures as a table, as the statistics API counts them; the overview charts the leads', async () => {
    const card = endpointCard(page, `${receiver.url}/hooks/failing`);
    const endpointId = (await card.getAttribute('data-endpoint-id'))!;
    const read = async (window: string) => JSON.parse((await fetchFromPage(page, `/api/settings/webhooks/${endpointId}/stats?window=${window}`)).text) as
      { totals: Record<string, number>; buckets: Record<string, number | string | null>[] };
    // Its failed test event counted its attempts: retried, then failed.
    const api = await eventually(async () => { const s = await read('24h'); return s.totals.failed >= 1 && s.totals.retrying >= 1 ? s : undefined; }, { what: 'the failing endpoint counted' });
    // The chart is read again when its window is chosen: chosen until it shows what the API answers
    // (deliveries of the earlier tests may still be landing).
    const figure = card.getByTestId('endpoint-chart');
    const captioned = (t: Record<string, number>) => `${t.delivered} delivered, ${t.failed} failed, ${t.retrying} retried`;
    const now = await eventually(async () => {
      const want = await read('24h');
      await button(card, '24 h').click();
      await card.locator('.endpoint-stats[aria-busy="false"]').waitFor();
      return (await figure.locator('figcaption').innerText()).includes(captioned(want.totals)) ? want : undefined;
    }, { what: 'the chart to show the statistics', intervalMs: 500 });
    expect(now.totals.failed).toBeGreaterThanOrEqual(api.totals.failed);
    await figure.locator('summary', { hasText: 'Show as a table' }).click();
    const rows = figure.locator('tbody tr');
    expect(await rows.count()).toBe(24);
    const column = async (n: number) => (await rows.locator(`td:nth-child(${n + 1})`).allInnerTexts()).reduce((sum, text) => sum + (Number(text.replace(/\D/g, '')) || 0), 0);
    expect({ delivered: await column(1), retrying: await column(2), failed: await column(3) })
      .toEqual({ delivered: now.totals.delivered, retrying: now.totals.retrying, failed: now.totals.failed });
    await card.scrollIntoViewIfNeeded();
    await screenshot(page, 'endpoint-chart', false);
    await button(card, '7 days').click();
    await card.locator('.endpoint-stats[aria-busy="false"]').waitFor();
    await card.getByTestId('endpoint-chart').locator('button[aria-pressed="true"]', { hasText: '7 days' }).waitFor();
    expect(await card.getByTestId('endpoint-chart').locator('tbody tr').count()).toBe(7);

    // The leads chart, drawn when the page opens: the organization's leads of this run (the trail's), 30 days by source.
    const leads = await eventually(async () => {
      const answer = JSON.parse((await fetchFromPage(page, '/api/settings/leads/stats')).text) as { totals: { leads: number } };
      return answer.totals.leads >= 1 ? answer : undefined;
    }, { what: 'the trail’s lead counted' });
    await page.reload();
    const chart = page.getByTestId('leads-chart');
    await chart.waitFor();
    expect(await chart.locator('svg').getAttribute('aria-hidden')).toBe('true');
    expect(await chart.locator('tbody tr').count()).toBe(30);
    expect(await chart.locator('figcaption').innerText()).toMatch(new RegExp(`\\b${leads.totals.leads} new leads?\\b`));
    await screenshot(page, 'leads-chart', true, '#overview');
  });

  it('Notifications: an address added and saved is listed waiting for its confirmation, with the notices picked', async () => {
    await page.locator('#notifications-body', { hasText: 'No one is sent notices yet' }).waitFor();
    await page.getByLabel('E-mail address').fill('ops@rosas.example');
    await button(page, 'Add address').click();
    await page.getByLabel('Daily digest for ops@rosas.example').uncheck();
    await button(page, 'Save').click();
    await page.locator('#notifications-status', { hasText: 'Saved.' }).waitFor();
    await page.locator('#notifications-body', { hasText: 'waiting for confirmation' }).waitFor();
    const { deps } = await testStack();
    expect((await listRecipients(deps, orgA)).map((r) => ({ email: r.email, status: r.status, notices: r.notices })))
      .toEqual([{ email: 'ops@rosas.example', status: 'pending', notices: ['lead.created', 'endpoint.paused', 'endpoint.disabled'] }]);
    await screenshot(page, 'notifications', false, '#notifications');
  });

  it('Notifications: a suppressed address says why and since when', async () => {
    const { deps } = await testStack();
    await suppressRecipient(deps, orgA, 'ops@rosas.example', 'bounced');
    const at = (await listRecipients(deps, orgA))[0].suppressedAt!;
    await page.reload();
    await page.locator('#notifications-body', { hasText: `suppressed: its mail bounced (${at.slice(0, 16).replace('T', ' ')} UTC)` }).waitFor();
  });

  it('axe finds no serious or critical violation, at desktop width and at 375 px', async () => {
    await page.locator('#deliveries-body[aria-busy="false"]').waitFor();
    await screenshot(page, 'page');
    expect(await seriousViolations(page)).toEqual([]);
    await page.setViewportSize({ width: 375, height: 812 });
    expect(await seriousViolations(page)).toEqual([]);
    // The endpoint dialog at 375 px: "Select all" beside, not over, its label.
    await button(page, 'Add endpoint').click();
    const dialog = page.getByRole('dialog', { name: 'Add endpoint' });
    await dialog.locator('.event-option').first().waitFor();
    const legend = await dialog.locator('legend', { hasText: 'Events to send' }).boundingBox();
    const selectAll = await button(dialog, 'Select all').boundingBox();
    const overlap = legend && selectAll && !(selectAll.x >= legend.x + legend.width || selectAll.y >= legend.y + legend.height || selectAll.x + selectAll.width <= legend.x || selectAll.y + selectAll.height <= legend.y);
    expect(overlap).toBe(false);
    expect(await seriousViolations(page)).toEqual([]);
    await screenshot(page, 'endpoint-add-mobile', false);
    await button(dialog, 'Cancel').click();
    await page.setViewportSize({ width: 1280, height: 900 });
  });

  it("organization A's link never reaches organization B: B's data is not shown, and B's ids answer 404", async () => {
    const text = await page.locator('body').innerText();
    expect(text).not.toContain(orgB.endpointUrl);
    expect(text).not.toContain('Other Tenant Roofing');
    expect(await pageToken(page)).toBeTruthy();

    expect((await fetchFromPage(page, `api/settings/webhooks/${orgB.endpointId}`, 'PATCH', { enabled: false })).status).toBe(404);
    expect((await fetchFromPage(page, `api/settings/webhooks/${orgB.endpointId}/test`, 'POST', {})).status).toBe(404);
    expect((await fetchFromPage(page, `api/settings/keys/${orgB.keyId}`, 'DELETE')).status).toBe(404);
    expect((await fetchFromPage(page, `api/settings/deliveries?endpoint=${orgB.endpointId}`)).status).toBe(404);
    // B's key and endpoint are untouched.
    expect(await leadEndpointStatus(orgB.key)).toBe(200);
    expect(receiver.on('/other-tenant')).toHaveLength(0);
  });

  it('Edit endpoint: a custom header and a rate limit; the receiver gets the header, shown masked; 1 a second, no attempt used', async () => {
    const url = `${receiver.url}/hooks/options`;
    const secret = await addEndpointInPage(page, url);
    receiver.script('/hooks/options', secret, { status: 204 });
    const card = endpointCard(page, url);
    await button(card, 'Edit').click();
    const dialog = page.getByRole('dialog', { name: 'Edit endpoint' });
    await dialog.getByLabel('Header name 1').fill('X-Receiver-Key');
    await dialog.getByLabel('Header value 1').fill('rk_page_5e4d3c2b1a09f8e7');
    await button(dialog, 'Add another header').click();
    await dialog.getByLabel('Header name 2').fill('Webhook-Id');
    await dialog.getByLabel('Header value 2').fill('forged');
    await dialog.getByLabel(/Rate limit/).fill('1');
    await button(dialog, 'Save changes').click();
    // A reserved name is refused, naming it; the dialog keeps what was typed.
    await dialog.locator('.form-error', { hasText: '"webhook-id" is reserved' }).waitFor();
    await button(dialog, 'Remove header row 2').click();
    expect(await seriousViolations(page)).toEqual([]);
    await screenshot(page, 'endpoint-options-refused', false);
    await button(dialog, 'Save changes').click();
    await dialog.waitFor({ state: 'hidden' });
    const options = card.locator('[data-testid="endpoint-options"]');
    await options.waitFor();
    expect(await options.innerText()).toBe('Custom headers: x-receiver-key · At most 1 delivery a second');

    // Reopened, the header shows masked, never its value.
    await button(card, 'Edit').click();
    await dialog.locator('.header-stored', { hasText: 'x-receiver-key' }).waitFor();
    expect(await dialog.locator('.header-stored').innerText()).toContain('••••f8e7');
    expect(await page.locator('body').innerText()).not.toContain('rk_page_');
    expect(await dialog.getByLabel(/Rate limit/).inputValue()).toBe('1');
    expect(await seriousViolations(page)).toEqual([]);
    await screenshot(page, 'endpoint-options', false, '#endpoint-dialog');
    await button(dialog, 'Cancel').click();

    // Three test events at once: the receiver gets the header on each, no faster than 1 a second, each delivered at its first attempt.
    const endpointId = await card.getAttribute('data-endpoint-id');
    const sent = await Promise.all([0, 1, 2].map(() => fetchFromPage(page, `api/settings/webhooks/${endpointId}/test`, 'POST', {})));
    expect(sent.map((s) => s.status)).toEqual([200, 200, 200]);
    const received = await eventually(async () => { const r = receiver.on('/hooks/options'); return r.length === 3 && r; }, { what: '3 test events received' });
    for (const r of received) {
      expect(r.verifyError).toBeUndefined();
      expect(r.headers['x-receiver-key']).toBe('rk_page_5e4d3c2b1a09f8e7');
    }
    const at = received.map((r) => r.at).sort((x, y) => x - y);
    expect(Math.min(at[1] - at[0], at[2] - at[1])).toBeGreaterThanOrEqual(1000 - 300);
    const ids = sent.map((s) => (JSON.parse(s.text) as { delivery: { id: string } }).delivery.id);
    for (const id of ids) {
      const detail = await eventually(async () => {
        const d = JSON.parse((await fetchFromPage(page, `api/settings/deliveries/${id}`)).text) as { delivery: { status: string; attemptCount: number } };
        return d.delivery.status === 'delivered' && d.delivery;
      }, { what: `delivery ${id} delivered` });
      expect(detail.attemptCount).toBe(1);
    }
  });
});

describe('the settings page without a valid link', () => {
  const expiredText = 'This link has expired or is invalid';

  it('an expired link shows the expired state and no data', async () => {
    const page = await openSettings(await expiredSettingsLink(orgA));
    await page.getByText(expiredText).waitFor();
    expect(await page.locator('#layout').isHidden()).toBe(true);
    // Said once, then what to do.
    const card = await page.locator('.gate-card').innerText();
    expect(card.split('expired or is invalid').length).toBe(2);
    expect(card).toContain('paste it into this tab');
    expect(page.url()).not.toContain('token');
    expect(await pageToken(page)).toBeNull();
    await screenshot(page, 'expired-link', false);
    await page.close();
  });

  it('a tampered link, and no token at all, show the same state', async () => {
    const link = await settingsLink(orgA);
    const tampered = link.replace(/(#token=[^.]+\.)([^.]+)/, (_, head: string, claims: string) =>
      head + Buffer.from(JSON.stringify({ ...JSON.parse(Buffer.from(claims, 'base64url').toString()), org_id: orgB.id })).toString('base64url'));
    expect(tampered).not.toBe(link);
    const page = await openSettings(tampered);
    await page.getByText(expiredText).waitFor();
    expect(await page.locator('body').innerText()).not.toContain('Other Tenant Roofing');
    await page.close();

    const bare = await openSettings(link.replace(/#.*$/, ''));
    await bare.getByText(expiredText).waitFor();
    await bare.close();
  });

  it('a new link pasted into the tab that shows "expired" loads the settings (only the fragment changes)', async () => {
    const page = await openSettings(await expiredSettingsLink(orgA));
    await page.getByText(expiredText).waitFor();
    const fresh = await settingsLink(orgA);
    await page.goto(fresh); // same document: a hashchange, no reload
    await page.locator('#org-name', { hasText: 'Rosa’s Plumbing & Heating' }).waitFor();
    expect(await page.locator('#gate').isHidden()).toBe(true);
    expect(page.url()).not.toContain('token');
    await page.close();
  });

  it("another organization's link pasted into an open tab reloads the page: nothing of the first organization stays", async () => {
    const page = await openSettings(await settingsLink(orgA));
    await page.locator('#org-name', { hasText: 'Rosa’s Plumbing & Heating' }).waitFor();
    await button(page, 'Generate API key').click();
    await page.getByLabel('Name').fill('Typed for A');
    await page.goto(await settingsLink(orgB.id)); // only the fragment changes
    await page.locator('#deliveries-body[aria-busy="false"]').waitFor();
    await eventually(async () => (await page.locator('#org-name').textContent()) !== 'Rosa’s Plumbing & Heating', { what: "B's settings shown" });
    await page.locator('#webhooks', { hasText: orgB.endpointUrl }).waitFor();
    expect(await page.getByRole('dialog', { name: 'Generate API key' }).isVisible()).toBe(false);
    expect(await page.locator('body').innerText()).not.toContain('Typed for A');
    await page.close();
  });

  it('a filtered list the server ended short (no rows, a cursor) says none were found among the newest and offers Load more', async () => {
    const page = await openSettings(await settingsLink(orgA));
    await page.locator('#deliveries-body[aria-busy="false"]').waitFor();
    // The server's read limit, reached without a match: an empty page with a cursor, then a match further back.
    const older = { id: 'dlv_older', eventId: 'evt_older', eventType: 'client.created', url: 'https://hooks.example/older', endpointId: 'ep_x', status: 'delivered', attemptCount: 1, lastStatusCode: 200, createdAt: new Date(0).toISOString(), nextAttemptAt: null, reason: null };
    await page.route(/\/api\/settings\/deliveries\?/, (route) => route.fulfill({
      status: 200, contentType: 'application/json',
      body: JSON.stringify(new URL(route.request().url()).searchParams.has('cursor') ? { deliveries: [older], nextCursor: null } : { deliveries: [], nextCursor: 'short' }),
    }));
    await page.locator('#filter-status').selectOption('failed');
    await page.getByText('None found in the newest deliveries').waitFor();
    expect(await page.getByText('No deliveries match these filters').count()).toBe(0);
    await button(page.locator('#deliveries'), 'Load more').click();
    await page.locator('#deliveries tbody tr[data-delivery-id="dlv_older"]').waitFor();
    await page.close();
  });

  it('warns 5 minutes before the link expires; at expiry an open dialog keeps what was typed, and a new link pasted in lets it be saved', async () => {
    // The link expires when the page's clock says so: Playwright's clock (its own context: a clock
    // is the whole context's) is moved past the expiry instead of the test waiting for it.
    const clocked = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    clocked.setDefaultTimeout(60_000);
    await clocked.clock.install();
    const page = watch(await clocked.newPage());
    const ttlSeconds = 120; // under the 5 minutes: warned at once; long enough for a slow page to load
    await page.goto(await settingsLinkExpiringIn(orgA, ttlSeconds));
    await page.locator('#session-banner', { hasText: 'expires in 5 minutes' }).waitFor();
    await screenshot(page, 'link-expiring', false);
    await button(page, 'Generate API key').click();
    await page.getByLabel('Name').fill('Typed before expiry');
    expect(await page.locator('#session-banner', { hasText: 'This settings link has expired' }).count()).toBe(0);
    await page.clock.fastForward(ttlSeconds * 1000);
    await page.locator('#session-banner', { hasText: 'This settings link has expired' }).waitFor();
    const dialog = page.getByRole('dialog', { name: 'Generate API key' });
    expect(await dialog.isVisible()).toBe(true);
    expect(await page.getByLabel('Name').inputValue()).toBe('Typed before expiry');
    // Submitting now says what to do, and still keeps the input.
    await page.locator('#key-form [type=submit]').click();
    await dialog.locator('.form-error', { hasText: 'paste a new link' }).waitFor();
    expect(await page.getByLabel('Name').inputValue()).toBe('Typed before expiry');

    await page.goto(await settingsLink(orgA));
    await page.locator('#session-banner').waitFor({ state: 'hidden' });
    await page.locator('#key-form [type=submit]').click();
    await shownOnce(page, 'keys', 'Your new key “Typed before expiry”');
    await clocked.close();
  });
});
