/**
 * The organization settings page (docs/settings.md) in real headless Chromium against the local stack,
 * opened from a settings link as an admin would (`crm settings-link`): its keys and its webhooks.
 * Keys made on the page are used on the lead endpoint; webhooks go to a loopback receiver that
 * verifies each request with `standardwebhooks`. The tests run in the order an admin acts, sharing
 * one organization and one page. Its other options, the link's states and the boundary between
 * organizations: settings-page-options.test.ts (a file of its own, so two workers share the page's tests).
 */
import { describe, it, expect, beforeAll } from '@jest/globals';
import path from 'node:path';
import type { Page } from 'playwright-core';
import { eventually, testStack } from '../support/stack.js';
import { Receiver } from '../support/receiver.js';
import { createOrganization } from '../../../functions/core/tenancy/organizations.js';
import { deliveryAttempts } from '../../../functions/core/delivery/schedule.js';
import { cliSettingsLink } from '../support/settings-links.js';
import {
  addEndpointInPage, button, checkPagesThenClose, context, endpointCard, failedDelivery, fetchFromPage, keyRow, leadEndpointStatus, listedDeliveries,
  screenshot, seriousViolations, shots, shownOnce, startBrowser, watch,
} from '../support/settings-page.js';

// Browser globals used inside page.evaluate callbacks (the project's tsconfig has no DOM library).
declare const navigator: { clipboard: { readText(): Promise<string> } };

const receiver = new Receiver();
/** The admin's organization. */
let orgA: string;

beforeAll(async () => {
  const { deps } = await testStack();
  await receiver.start();
  orgA = (await createOrganization(deps, { name: 'Rosa’s Plumbing & Heating', plan: 'pro' })).id;
  await startBrowser();
}, 150_000);

checkPagesThenClose(receiver);

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

  it('a failing endpoint: its attempts are shown; after the receiver recovers, Re-deliver and Re-deliver all failed send them again', async () => {
    const url = `${receiver.url}/hooks/failing`;
    const secret = await addEndpointInPage(page, url);
    receiver.script('/hooks/failing', secret, { status: 500, body: 'database unavailable' });
    const card = endpointCard(page, url);
    // An earlier failed delivery to it (see failedDelivery), for "Re-deliver all failed" below.
    const earlier = await failedDelivery(orgA, (await card.getAttribute('data-endpoint-id'))!, 500, 'database unavailable');

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
});
