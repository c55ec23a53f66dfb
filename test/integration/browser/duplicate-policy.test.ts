/**
 * The settings page's duplicate-policy control (docs/leads.md "Duplicates") in headless Chromium:
 * the admin picks `merge`, and the next lead with a known e-mail is merged into its client.
 */
import { describe, it, expect, beforeAll, afterAll } from '@jest/globals';
import { chromium, type Browser } from 'playwright-core';
import { newTenant, postLead } from '../support/stack.js';
import { settingsLink } from '../support/settings-links.js';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
let browser: Browser;
beforeAll(async () => {
  browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
});
afterAll(async () => {
  await browser?.close();
});

describe('the duplicate-policy control of the settings page', () => {
  it('shows flag, saves merge, and the lead endpoint then merges', async () => {
    const t = await newTenant();
    const link = await settingsLink(t.organizationId);
    const page = await browser.newPage();
    const problems: string[] = [];
    page.on('pageerror', (error) => problems.push(error.message));
    await page.goto(link);
    const select = page.getByLabel('Duplicate leads');
    await expect(select.inputValue()).resolves.toBe('flag');
    await select.selectOption('merge');
    await page.getByRole('status').filter({ hasText: 'Saved' }).waitFor();
    await page.screenshot({ path: 'test-artifacts/duplicate-policy.png' });
    await page.reload();
    await expect(page.getByLabel('Duplicate leads').inputValue()).resolves.toBe('merge');
    expect(problems).toEqual([]);
    await page.close();

    await new Promise((r) => setTimeout(r, 1_100)); // the lead function's organization cache (1 s on the test stack)
    const first = await (await postLead(t.key, { name: 'Page Merge', email: 'page@example.com' })).json() as { id: string };
    const later = await postLead(t.key, { name: 'Page Merge', email: 'page@example.com', notes: 'again' });
    expect(await later.json()).toMatchObject({ id: first.id, merged: true });
  });
});
