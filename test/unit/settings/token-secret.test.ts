/** The token secret is read once per TTL (a rotation is picked up after it); a failed read is not cached. */
import { describe, it, expect } from '@jest/globals';
import type { SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { secretsManagerSource } from '../../../functions/core/settings/token-secret.js';

function fakeClient(values: (string | Error)[]) {
  const calls: unknown[] = [];
  const client = {
    send: async (command: { input: unknown }) => {
      calls.push(command.input);
      const next = values.shift();
      if (next instanceof Error) throw next;
      return { SecretString: next };
    },
  } as unknown as SecretsManagerClient;
  return { client, calls };
}

describe('secretsManagerSource', () => {
  it('caches the value for the TTL, then reads the rotated one', async () => {
    let now = 0;
    const { client, calls } = fakeClient(['first', 'second']);
    const read = secretsManagerSource('arn:secret', client, 300_000, () => now);
    expect(await read()).toBe('first');
    now = 299_999;
    expect(await read()).toBe('first');
    expect(calls).toEqual([{ SecretId: 'arn:secret' }]);
    now = 300_000;
    expect(await read()).toBe('second');
    expect(calls).toHaveLength(2);
  });

  it('does not cache a failure', async () => {
    const { client } = fakeClient([new Error('ThrottlingException'), 'value']);
    const read = secretsManagerSource('s', client, 1000, () => 0);
    await expect(read()).rejects.toThrow('ThrottlingException');
    expect(await read()).toBe('value');
  });
});
