/**
 * The organization settings page (docs/settings.md) in real headless Chromium against the local stack,
 * beyond the admin's first keys and webhooks (settings-page.test.ts): ed25519 signing, the delivery
 * log's filters and Recover, notice recipients, an endpoint's headers and rate limit, the boundary
 * between organizations, and links that are expired, tampered, replaced or about to expire.
 * Webhooks go to a loopback receiver that verifies each request with `standardwebhooks`.
 */
import { describe, it, expect, beforeAll } from '@jest/globals';
import { createPublicKey, verify } from 'node:crypto';
import type { Page } from 'playwright-core';
import { eventually, testStack } from '../support/stack.js';
import { Receiver } from '../support/receiver.js';
import { createOrganization } from '../../../functions/core/tenancy/organizations.js';
import { createApiKey } from '../../../functions/core/tenancy/api-keys.js';
import { addEndpoint } from '../../../functions/core/delivery/endpoints.js';
import { listRecipients, suppressRecipient } from '../../../functions/core/notify/recipients.js';
import { expiredSettingsLink, settingsLink, settingsLinkExpiringIn } from '../support/settings-links.js';
import {
  addEndpointInPage, browser, button, checkPagesThenClose, endpointCard, failedDelivery, fetchFromPage, leadEndpointStatus, listedDeliveries, openSettings,
  pageToken, screenshot, seriousViolations, shownOnce, startBrowser, watch,
} from '../support/settings-page.js';

const receiver = new Receiver();
/** The admin's organization (A) and another one (B) whose data A's link must never reach. */
let orgA: string;
let orgB: { id: string; key: string; keyId: string; endpointId: string; endpointUrl: string };

beforeAll(async () => {
  const { deps } = await testStack();
  await receiver.start();
  orgA = (await createOrganization(deps, { name: 'Rosa’s Plumbing & Heating', plan: 'pro' })).id;
  const b = await createOrganization(deps, { name: 'Other Tenant Roofing' });
  const bKey = await createApiKey(deps, b.id, 'other tenant key');
  const bEndpoint = await addEndpoint(deps, b.id, { url: `${receiver.url}/other-tenant`, events: 'client.created' });
  orgB = { id: b.id, key: bKey.key, keyId: bKey.record.keyId, endpointId: bEndpoint.endpoint.id, endpointUrl: bEndpoint.endpoint.url };
  await startBrowser();
}, 150_000);

checkPagesThenClose(receiver);

describe('the settings page, opened from a settings link', () => {
  let page: Page;

  beforeAll(async () => {
    page = await openSettings(await settingsLink(orgA));
    await page.locator('#org-name', { hasText: 'Rosa’s Plumbing & Heating' }).waitFor();
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

  it('the delivery log filters by event type and finds a delivery by its id; Recover counts the failed deliveries since a time, then queues them', async () => {
    const url = `${receiver.url}/hooks/recover`;
    const secret = await addEndpointInPage(page, url);
    // A test event to it that failed (see failedDelivery): the receiver was down for maintenance.
    const failed = await failedDelivery(orgA, (await endpointCard(page, url).getAttribute('data-endpoint-id'))!, 503, 'down for maintenance');

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
