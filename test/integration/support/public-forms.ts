/**
 * Publishable keys from a test's side (docs/leads.md#lead-forms-in-public-pages-publishable-keys): a key listing origins, and requests sent as a
 * page's would be, from a chosen loopback address (the local gateway takes the client address
 * from the socket, as API Gateway's sourceIp; 127.0.0.0/8 is all loopback, so 127.0.0.2 is a
 * second visitor).
 */
import { request as httpRequest } from 'node:http';
import { createOrganization, type NewOrganization } from '../../../functions/core/tenancy/organizations.js';
import { createApiKey, type NewApiKeyOptions } from '../../../functions/core/tenancy/api-keys.js';
import { testStack } from './stack.js';

export const SHOP = 'https://shop.example';

export interface Sent { status: number; headers: Record<string, string | string[] | undefined>; text: string; json<T = Record<string, unknown>>(): T }

/** One request to the local stack from a chosen loopback address (the client IP the gateway sees). */
export async function send(
  method: string,
  headers: Record<string, string>,
  body?: string,
  from = '127.0.0.1',
  path = '/api/webhook/leads',
): Promise<Sent> {
  const { info } = await testStack();
  const url = new URL(path, info.apiUrl);
  return new Promise((resolve, reject) => {
    const req = httpRequest(url, { method, headers: { ...headers, ...(body !== undefined ? { 'Content-Length': String(Buffer.byteLength(body)) } : {}) }, localAddress: from, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        resolve({ status: res.statusCode ?? 0, headers: res.headers, text, json: () => JSON.parse(text) });
      });
    });
    req.on('error', reject);
    req.end(body);
  });
}

/** A JSON lead posted as a page on `origin` would (no Origin header when origin is undefined). */
export const postFromPage = (key: string, lead: unknown, options: { origin?: string; from?: string; headers?: Record<string, string> } = {}) =>
  send('POST', { 'Content-Type': 'application/json', 'X-API-Key': key, ...(options.origin ? { Origin: options.origin } : {}), ...options.headers }, JSON.stringify(lead), options.from);

export interface PublicTenant { organizationId: string; key: string; keyId: string }

/** An organization with one publishable key listing `origins`. */
export async function givenPublishableKey(options: Partial<NewApiKeyOptions> = {}, org: Partial<NewOrganization> = {}): Promise<PublicTenant> {
  const { deps } = await testStack();
  const created = await createOrganization(deps, { name: 'Shop Plumbing', ...org });
  const { key, record } = await createApiKey(deps, created.id, 'website', { kind: 'publishable', origins: [SHOP], ...options });
  return { organizationId: created.id, key, keyId: record.keyId };
}

