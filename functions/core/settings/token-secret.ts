/**
 * The session-token signing secret, read from AWS Secrets Manager (on the local stack, from its
 * stand-in, which serves .local/settings-token.secret) and cached per container for a bounded time,
 * so a rotated secret is picked up within TOKEN_SECRET_TTL_MS without a redeploy.
 */
import { GetSecretValueCommand, SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { traced } from '../platform/tracing.js';
import { secretEnvVars, type SecretName } from '../platform/bindings.js';

/** How long a read secret is used before it is read again. */
export const TOKEN_SECRET_TTL_MS = 5 * 60_000;

export type SecretSource = () => Promise<string>;

/** GetSecretValue of `secretId` (name or ARN), cached for `ttlMs`; a failed read is not cached. */
export function secretsManagerSource(secretId: string, client: SecretsManagerClient = new SecretsManagerClient({}), ttlMs = TOKEN_SECRET_TTL_MS, now = Date.now): SecretSource {
  let cached: { value: string; until: number } | undefined;
  let capturing: Promise<SecretsManagerClient> | undefined;
  return async () => {
    if (cached && cached.until > now()) return cached.value;
    capturing ??= traced(client);
    const out = await (await capturing).send(new GetSecretValueCommand({ SecretId: secretId }));
    if (!out.SecretString) throw new Error(`Secret ${secretId} has no string value`);
    cached = { value: out.SecretString, until: now() + ttlMs };
    return cached.value;
  };
}

/**
 * The secret the topology binds to this function (its name in the secret's env var), read through
 * secretsManagerSource on first use: a function not bound to it fails with a message that says so.
 */
export function boundSecret(secret: SecretName): SecretSource {
  let source: SecretSource | undefined;
  return () => {
    const name = process.env[secretEnvVars[secret]];
    if (!name) throw new Error(`${secretEnvVars[secret]} is not set: this function is not bound to the ${secret} secret`);
    source ??= secretsManagerSource(name);
    return source();
  };
}
