/**
 * The paste-in lead form (examples/lead-form.html) in real headless Chromium, served from another
 * origin than the API, against the local stack. Screenshots land in test-artifacts/ (git-ignored).
 */
import { describe, it, expect, beforeAll, afterAll } from '@jest/globals';
import { createServer, type Server } from 'node:http';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { testStack } from '../support/stack.js';
import { createOrganization } from '../../../functions/core/tenancy/organizations.js';
import { createApiKey } from '../../../functions/core/tenancy/api-keys.js';
import { keys } from '../../../functions/core/platform/model.js';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const artifacts = path.resolve('test-artifacts');

let browser: Browser;
let formServer: Server;
let formUrl: string;
let organizationId: string;

beforeAll(async () => {
  if (!existsSync(CHROMIUM)) {
    throw new Error(`Chromium not found at ${CHROMIUM}: install it (apt-get install chromium) or set CHROMIUM_PATH.`);
  }
  const stack = await testStack();
  const org = await createOrganization(stack.deps, { name: 'Form Test Landscaping' });
  organizationId = org.id;
  const { key } = await createApiKey(stack.deps, org.id, 'website form');

  // Serve the form exactly as a business would paste it, with its two constants filled in.
  const html = readFileSync('examples/lead-form.html', 'utf8')
    .replace(/const API_URL = '[^']*'/, `const API_URL = '${stack.info.apiUrl}/api/webhook/leads'`)
    .replace(/const API_KEY = '[^']*'/, `const API_KEY = '${key}'`);
  formServer = createServer((_req, res) => res.writeHead(200, { 'Content-Type': 'text/html' }).end(html));
  await new Promise<void>((resolve) => formServer.listen(0, '127.0.0.1', resolve));
  formUrl = `http://127.0.0.1:${(formServer.address() as AddressInfo).port}/contact.html`;
  expect(new URL(formUrl).origin).not.toBe(new URL(stack.info.apiUrl).origin);

  mkdirSync(artifacts, { recursive: true });
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await new Promise((resolve) => formServer?.close(resolve));
});

async function openForm(): Promise<Page> {
  const page = await browser.newPage();
  await page.goto(formUrl);
  return page;
}

async function readClient(clientId: string) {
  const { deps } = await testStack();
  const { Item } = await deps.doc.send(new GetCommand({ TableName: deps.tables.clients, Key: keys.client(organizationId, clientId) }));
  return Item;
}

/** Submits and returns the API's response to the form's request. */
async function submit(page: Page) {
  const [response] = await Promise.all([
    page.waitForResponse((r) => r.url().endsWith('/api/webhook/leads') && r.request().method() === 'POST'),
    page.click('button[type=submit]'),
  ]);
  return response;
}

describe('the paste-in lead form, from another origin', () => {
  it('given a filled form, submitting creates the lead and thanks the visitor', async () => {
    const page = await openForm();
    await page.fill('#name', 'Rosa Parks');
    await page.fill('#email', 'Rosa@Example.com');
    await page.fill('#phone', '+1 415 555 0123');
    await page.fill('#service', 'Lawn care');
    await page.fill('#notes', 'Front and back yard');
    const response = await submit(page);
    expect(response.status()).toBe(201);
    await page.waitForSelector('#status.ok');
    expect(await page.textContent('#status')).toContain('Thank you');
    await page.screenshot({ path: path.join(artifacts, 'lead-form-success.png'), fullPage: true });

    const client = await readClient(((await response.json()) as { id: string }).id);
    expect(client).toMatchObject({ status: 'lead', first_name: 'Rosa', last_name: 'Parks', email: 'rosa@example.com', phone: '+14155550123', sms_consent: false });
    await page.close();
  });

  it('given no name, the field error from the problem body is shown next to the name field', async () => {
    const page = await openForm();
    await page.fill('#email', 'someone@example.com');
    const response = await submit(page);
    expect(response.status()).toBe(422);
    await page.waitForSelector('[data-error-for="name"]:not(:empty)');
    expect(await page.getAttribute('#name', 'aria-invalid')).toBe('true');
    expect(await page.textContent('#status')).not.toBe('');
    await page.screenshot({ path: path.join(artifacts, 'lead-form-validation-error.png'), fullPage: true });
    await page.close();
  });

  it('given the SMS consent box ticked, the stored client carries the consent proof', async () => {
    const page = await openForm();
    await page.fill('#name', 'Sam Consent');
    await page.fill('#phone', '+1 415 555 0199');
    await page.check('#sms_consent');
    const response = await submit(page);
    expect(response.status()).toBe(201);
    const client = await readClient(((await response.json()) as { id: string }).id);
    expect(client?.sms_consent).toBe(true);
    expect(client?.sms_consent_proof).toMatchObject({ source: expect.stringContaining(formUrl), ip: expect.any(String), user_agent: expect.stringContaining('Chrome') });
    expect(client?.sms_consent_proof.source).toContain('Reply STOP');
    await page.close();
  });

  it('the consent box starts unticked', async () => {
    const page = await openForm();
    expect(await page.isChecked('#sms_consent')).toBe(false);
    await page.close();
  });
});
