/**
 * The settings API as a test uses it: requests with a session token (tokens and links:
 * test/integration/support/settings-links.ts), and tokens with claims of a test's choosing.
 */
import { SignJWT } from 'jose';
import { sessionToken, tokenSecret } from '../support/settings-links.js';
import { testStack } from '../support/stack.js';

/** A token signed with the right secret but with claims of our choosing (for the refusals). */
export async function craftedToken(claims: { org_id?: string; sub?: string; aud?: string; iss?: string; iat?: number; exp?: number }, key?: string): Promise<string> {
  const now = Math.floor(Date.now() / 1000);
  const { iat = now, exp = now + 600, ...rest } = claims;
  return new SignJWT({ aud: 'crm-settings', iss: 'crm', sub: 'admin-1', ...rest })
    .setProtectedHeader({ alg: 'HS256' })
    .setIssuedAt(iat)
    .setExpirationTime(exp)
    .sign(new TextEncoder().encode(key ?? (await tokenSecret())));
}

export interface Call { status: number; headers: Headers; text: string; json: <T = Record<string, unknown>>() => T }

/** A request to the settings API with a bearer token (or none), JSON in and out. */
export async function settingsCall(token: string | undefined, method: string, pathname: string, body?: unknown, headers: Record<string, string> = {}): Promise<Call> {
  const { api } = await testStack();
  const response = await api(pathname, {
    method,
    headers: { ...(token ? { Authorization: `Bearer ${token}` } : {}), ...(body !== undefined ? { 'Content-Type': 'application/json' } : {}), ...headers },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  return { status: response.status, headers: response.headers, text, json: <T>() => JSON.parse(text) as T };
}

/** A client bound to one organization's session. */
export async function settingsClient(organizationId: string, user = 'admin-1') {
  const token = await sessionToken(organizationId, user);
  return {
    token,
    get: (p: string) => settingsCall(token, 'GET', p),
    post: (p: string, body: unknown = {}) => settingsCall(token, 'POST', p, body),
    patch: (p: string, body: unknown) => settingsCall(token, 'PATCH', p, body),
    delete: (p: string) => settingsCall(token, 'DELETE', p),
  };
}
