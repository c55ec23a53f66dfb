/**
 * Settings links the CLI will not mint (it refuses a past expiry): an expired one, signed with the
 * test stack's real secret, read from its Secrets Manager stand-in as the settings function reads it.
 */
import { GetSecretValueCommand, SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { mintSessionToken } from '../../../functions/core/settings/session-token.js';
import { testStack } from '../support/stack.js';

async function tokenSecret(): Promise<string> {
  const { info } = await testStack();
  if (!info.secretsEndpoint || !info.secrets?.settingsToken) throw new Error('The test stack has no settingsToken secret');
  const client = new SecretsManagerClient({ region: info.region, endpoint: info.secretsEndpoint, credentials: { accessKeyId: 'local', secretAccessKey: 'local' } });
  try {
    const { SecretString } = await client.send(new GetSecretValueCommand({ SecretId: info.secrets.settingsToken }));
    return SecretString!;
  } finally {
    client.destroy();
  }
}

/** A link whose token expired an hour ago (well past the verifier's clock tolerance). */
export async function expiredSettingsLink(organizationId: string): Promise<string> {
  const { info } = await testStack();
  const token = await mintSessionToken(await tokenSecret(), { organizationId, userId: 'owner-1', ttlSeconds: 900, now: Date.now() - 2 * 3600_000 });
  return `${info.apiUrl}/settings#token=${token}`;
}

/** A link whose token expires `seconds` from now (the CLI's shortest is minutes). */
export async function settingsLinkExpiringIn(organizationId: string, seconds: number): Promise<string> {
  const { info } = await testStack();
  const now = Date.now();
  const token = await mintSessionToken(await tokenSecret(), { organizationId, userId: 'owner-1', ttlSeconds: seconds, now });
  return `${info.apiUrl}/settings#token=${token}`;
}
