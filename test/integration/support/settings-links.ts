/**
 * Settings links and session tokens for tests: signed with the test stack's own secret, read from
 * its Secrets Manager stand-in as the settings function and `crm settings-link` read it; links
 * minted by the CLI as operators do; and links the CLI will not mint (it refuses a past expiry).
 */
import { expect } from '@jest/globals';
import { GetSecretValueCommand, SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { emulatorCredentials } from '../../../functions/core/platform/deps.js';
import { mintSessionToken } from '../../../functions/core/settings/session-token.js';
import { runCli, testStack } from './stack.js';

let secret: string | undefined;
/** The stack's session-token secret. */
export async function tokenSecret(): Promise<string> {
  if (secret) return secret;
  const { info } = await testStack();
  if (!info.secretsEndpoint || !info.secrets?.settingsToken) throw new Error('The test stack has no settingsToken secret');
  const client = new SecretsManagerClient({ region: info.region, endpoint: info.secretsEndpoint, credentials: emulatorCredentials });
  try {
    const { SecretString } = await client.send(new GetSecretValueCommand({ SecretId: info.secrets.settingsToken }));
    secret = SecretString!;
    return secret;
  } finally {
    client.destroy();
  }
}

/** A valid session token for `user` of `organizationId`. */
export async function sessionToken(organizationId: string, user = 'admin-1', ttlSeconds = 900, now = Date.now()): Promise<string> {
  return mintSessionToken(await tokenSecret(), { organizationId, userId: user, ttlSeconds, now });
}

/** A settings link minted the way operators and demos do: `crm settings-link --org <id>`. */
export async function cliSettingsLink(organizationId: string): Promise<string> {
  const result = await runCli(['settings-link', '--org', organizationId, '--user', 'owner-1', '--ttl', '15m']);
  expect({ code: result.code, stderr: result.stderr }).toEqual({ code: 0, stderr: '' });
  return result.json<{ url: string }>().url;
}

async function linkWith(organizationId: string, ttlSeconds: number, now: number): Promise<string> {
  const { info } = await testStack();
  return `${info.apiUrl}/settings#token=${await sessionToken(organizationId, 'owner-1', ttlSeconds, now)}`;
}

/**
 * The link `crm settings-link --org <id> --user owner-1 --ttl 15m` prints, minted in this process:
 * for tests that need a valid link, not the CLI (each CLI process costs seconds on a loaded machine).
 */
export const settingsLink = (organizationId: string) => linkWith(organizationId, 900, Date.now());

/** A link whose token expired an hour ago (well past the verifier's clock tolerance). */
export const expiredSettingsLink = (organizationId: string) => linkWith(organizationId, 900, Date.now() - 2 * 3600_000);

/** A link whose token expires `seconds` from now (the CLI's shortest is minutes). */
export const settingsLinkExpiringIn = (organizationId: string, seconds: number) => linkWith(organizationId, seconds, Date.now());
