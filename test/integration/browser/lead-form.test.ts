/**
 * The paste-in lead forms (examples/lead-form.html, with a few lines of script, and
 * examples/lead-form-noscript.html, a plain form) in real headless Chromium, served from another
 * origin than the API, against the local stack, with a publishable key listing that origin
 * (docs/leads.md#lead-forms-in-public-pages-publishable-keys). Screenshots land in test-artifacts/ (git-ignored).
 */
import { describe, it, expect, beforeAll, afterAll } from '@jest/globals';
import { createServer, type Server } from 'node:http';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { GetCommand, QueryCommand } from '@aws-sdk/lib-dynamodb';
import { testStack } from '../support/stack.js';
import { createOrganization } from '../../../functions/core/tenancy/organizations.js';
import { createApiKey } from '../../../functions/core/tenancy/api-keys.js';
import { keys } from '../../../functions/core/platform/model.js';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const artifacts = path.resolve('test-artifacts');

let browser: Browser;
let formServer: Server;
let otherServer: Server;
let formUrl: string;
let formOrigin: string;
let noScriptUrl: string;
let otherOriginUrl: string;
let organizationId: string;

/** Serves `pages` by path on a loopback port of its own (its own origin); anything else is a 404. */
async function servePages(pages: () => Record<string, string>): Promise<{ server: Server; origin: string }> {
  const server = createServer((req, res) => {
    const page = pages()[new URL(req.url ?? '/', 'http://x').pathname];
    if (page === undefined) return void res.writeHead(404).end();
    // ?referrer=no-referrer: the site sends that policy for every page (helmet's default, a common hardening).
    const policy = new URL(req.url ?? '/', 'http://x').searchParams.get('referrer');
    res.writeHead(200, { 'Content-Type': 'text/html; charset=utf-8', ...(policy ? { 'Referrer-Policy': policy } : {}) }).end(page);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
}

beforeAll(async () => {
  if (!existsSync(CHROMIUM)) {
    throw new Error(`Chromium not found at ${CHROMIUM}: install it (apt-get install chromium) or set CHROMIUM_PATH.`);
  }
  const stack = await testStack();
  const org = await createOrganization(stack.deps, { name: 'Form Test Landscaping' });
  organizationId = org.id;

  // The business's site (listed on the key) and a site that is not: two loopback origins.
  let pages: Record<string, string> = {};
  ({ server: formServer, origin: formOrigin } = await servePages(() => pages));
  ({ server: otherServer, origin: otherOriginUrl } = await servePages(() => pages));
  // Every submission here comes from 127.0.0.1: room above the default 5 a minute per address.
  const { key } = await createApiKey(stack.deps, org.id, 'website form', {
    kind: 'publishable', origins: [formOrigin], thankYouUrl: `${formOrigin}/thanks`, perIpLimit: 50,
  });
  // Serve the forms exactly as a business would paste them, with their constants filled in.
  const apiUrl = `${stack.info.apiUrl}/api/webhook/leads`;
  pages = {
    '/contact.html': readFileSync('examples/lead-form.html', 'utf8')
      .replace(/const API_URL = '[^']*'/, `const API_URL = '${apiUrl}'`)
      .replace(/const API_KEY = '[^']*'/, `const API_KEY = '${key}'`),
    '/noscript.html': readFileSync('examples/lead-form-noscript.html', 'utf8')
      .replace('action="https://YOUR-API.example.com/api/webhook/leads"', `action="${apiUrl}"`)
      .replace('value="crm_pub_REPLACE_ME"', `value="${key}"`),
    '/thanks': '<!doctype html><title>Thanks</title><h1>Thanks from the shop</h1>',
  };
  expect(pages['/contact.html']).toContain(key);
  expect(pages['/noscript.html']).toContain(key);
  formUrl = `${formOrigin}/contact.html`;
  noScriptUrl = `${formOrigin}/noscript.html`;
  expect(formOrigin).not.toBe(new URL(stack.info.apiUrl).origin);

  mkdirSync(artifacts, { recursive: true });
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
}, 150_000);

afterAll(async () => {
  await browser?.close();
  await new Promise((resolve) => formServer?.close(resolve));
  await new Promise((resolve) => otherServer?.close(resolve));
});

async function openForm(url = formUrl): Promise<Page> {
  const page = await browser.newPage();
  page.setDefaultTimeout(60_000); // a loaded machine renders slowly; each wait is for a condition
  await page.goto(url);
  return page;
}

async function clientsOfOrganization() {
  const { deps } = await testStack();
  const { Items } = await deps.doc.send(new QueryCommand({ TableName: deps.tables.clients, KeyConditionExpression: 'pk = :pk', ExpressionAttributeValues: { ':pk': `ORG#${organizationId}` }, ConsistentRead: true }));
  return Items ?? [];
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
    // CORS names the page's origin (a publishable key), not *.
    expect(response.headers()['access-control-allow-origin']).toBe(formOrigin);
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

  it('given a bot that fills the hidden honeypot, the page thanks it and no lead is stored', async () => {
    const before = (await clientsOfOrganization()).length;
    const page = await openForm();
    await page.fill('#name', 'Spam Bot');
    await page.fill('#website', 'https://spam.example'); // people never see it; bots fill every field
    const response = await submit(page);
    expect(response.status()).toBe(201);
    await page.waitForSelector('#status.ok');
    expect((await clientsOfOrganization()).length).toBe(before);
    await page.close();
  });

  it('served from an origin not listed on the key, the form shows the refusal and nothing is stored', async () => {
    const before = (await clientsOfOrganization()).length;
    const page = await openForm(`${otherOriginUrl}/contact.html`);
    await page.fill('#name', 'Copied Form');
    const response = await submit(page);
    expect(response.status()).toBe(403);
    await page.waitForSelector('#status.error');
    expect(await page.textContent('#status')).toContain('is not allowed for this key');
    await page.screenshot({ path: path.join(artifacts, 'lead-form-foreign-origin.png'), fullPage: true });
    expect((await clientsOfOrganization()).length).toBe(before);
    await page.close();
  });
});

describe('the no-script form (a plain <form method=post>), from another origin', () => {
  it('submitting creates the lead and lands on the key’s thank-you page (303)', async () => {
    const page = await openForm(noScriptUrl);
    await page.fill('#name', 'Katherine Johnson');
    await page.fill('#email', 'katherine@example.com');
    await page.fill('#service', 'Hedge trimming');
    await page.check('#sms_consent');
    await page.fill('#phone', '+1 415 555 0142');
    const [redirect] = await Promise.all([
      page.waitForResponse((r) => r.url().endsWith('/api/webhook/leads') && r.request().method() === 'POST'),
      page.click('button[type=submit]'),
    ]);
    expect(redirect.status()).toBe(303);
    await page.waitForURL(`${formOrigin}/thanks`);
    expect(await page.textContent('h1')).toBe('Thanks from the shop');
    await page.screenshot({ path: path.join(artifacts, 'lead-form-noscript-thanks.png'), fullPage: true });

    const stored = (await clientsOfOrganization()).find((c) => c.email === 'katherine@example.com');
    expect(stored).toMatchObject({ first_name: 'Katherine', last_name: 'Johnson', service: 'Hedge trimming', sms_consent: true, phone: '+14155550142' });
    expect(stored?.sms_consent_proof).toMatchObject({ source: expect.stringContaining('Reply STOP'), user_agent: expect.stringContaining('Chrome') });
    expect(stored?.custom_fields).toBeUndefined(); // not the key, not the honeypot
    await page.close();
  });

  it('on a site that sends Referrer-Policy: no-referrer, the form still sends its Origin (else `Origin: null`, refused) and the lead is created', async () => {
    const page = await openForm(`${noScriptUrl}?referrer=no-referrer`);
    await page.fill('#name', 'Hardened Site');
    await page.fill('#email', 'hardened@example.com');
    const [response] = await Promise.all([
      page.waitForResponse((r) => r.url().endsWith('/api/webhook/leads') && r.request().method() === 'POST'),
      page.click('button[type=submit]'),
    ]);
    expect(await response.request().headerValue('origin')).toBe(formOrigin);
    expect(response.status()).toBe(303);
    await page.waitForURL(`${formOrigin}/thanks`);
    expect((await clientsOfOrganization()).some((c) => c.email === 'hardened@example.com')).toBe(true);
    await page.close();
  });

  it('served from an origin not listed on the key, the visitor sees a small error page and nothing is stored', async () => {
    const before = (await clientsOfOrganization()).length;
    const page = await openForm(`${otherOriginUrl}/noscript.html`);
    await page.fill('#name', 'Copied Form');
    await Promise.all([page.waitForNavigation(), page.click('button[type=submit]')]);
    expect(await page.textContent('h1')).toBe('Forbidden');
    expect(await page.textContent('body')).toContain('is not allowed for this key');
    await page.screenshot({ path: path.join(artifacts, 'lead-form-noscript-refused.png'), fullPage: true });
    expect((await clientsOfOrganization()).length).toBe(before);
    await page.close();
  });
});
