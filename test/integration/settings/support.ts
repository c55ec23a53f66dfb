/**
 * The settings API as a test uses it: session tokens signed with the test stack's own secret (read
 * from Secrets Manager, i.e. the stack's stand-in, as `crm settings-link` does), and requests with one.
 */
import { GetSecretValueCommand, SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { SignJWT } from 'jose';
import { emulatorCredentials } from '../../../functions/core/platform/deps.js';
import { mintSessionToken } from '../../../functions/core/settings/session-token.js';
import { testStack } from '../support/stack.js';

let secret: string | undefined;
/** The stack's session-token secret. */
export async function tokenSecret(): Promise<string> {
  if (secret) return secret;
  const { info } = await testStack();
  const client = new SecretsManagerClient({ region: info.region, endpoint: info.secretsEndpoint, credentials: emulatorCredentials });
  const out = await client.send(new GetSecretValueCommand({ SecretId: info.secrets!.settingsToken! }));
  client.destroy();
  secret = out.SecretString!;
  return secret;
}

/** A valid session token for `user` of `organizationId`. */
export async function sessionToken(organizationId: string, user = 'admin-1', ttlSeconds = 900): Promise<string> {
  return mintSessionToken(await tokenSecret(), { organizationId, userId: user, ttlSeconds });
}

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
