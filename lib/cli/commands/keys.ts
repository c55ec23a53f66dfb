import type { Command } from 'commander';
import { createApiKey, listApiKeys, revokeApiKey, rotateApiKey } from '../../../functions/core/tenancy/api-keys.js';
import { CliError, printResult, printTable, safeText } from '../output.js';
import { act } from '../run.js';

const shownOnce = (key: string) => {
  console.log(`\n  ${key}\n`);
  console.log('Copy it now: it is stored only as a hash and will not be shown again.');
};

export function register(program: Command): void {
  const keys = program.command('keys').description('API keys of an organization');
  keys
    .command('create')
    .description('create a key (printed once)')
    .requiredOption('--org <id>', 'organization id')
    .option('--name <name>', 'a name to tell keys apart', 'default')
    .action(act<{ org: string; name: string }>(async ({ target, options, json }) => {
      const { key, record } = await createApiKey(target.deps, options.org, options.name);
      const { hash: _hash, ...shown } = record;
      printResult({ json }, { ...shown, key }, () => {
        console.log(`Created key ${record.keyId} (${safeText(record.name)}) for ${record.organizationId}:`);
        shownOnce(key);
      });
    }));
  keys
    .command('list')
    .description('list keys (never the key itself)')
    .requiredOption('--org <id>', 'organization id')
    .action(act<{ org: string }>(async ({ target, options, json }) => {
      const list = await listApiKeys(target.deps, options.org);
      printResult({ json }, list, () => printTable(list, ['keyId', 'name', 'status', 'createdAt', 'lastUsedAt', 'expiresAt']));
    }));
  keys
    .command('rotate')
    .description('issue a new key; the old one keeps working for the grace period')
    .requiredOption('--org <id>', 'organization id')
    .requiredOption('--key <keyId>', 'the key to replace')
    .option('--grace <hours>', 'hours the old key stays valid (0 revokes it now)')
    .action(act<{ org: string; key: string; grace?: string }>(async ({ target, options, json }) => {
      let graceHours: number | undefined;
      if (options.grace !== undefined) {
        graceHours = Number(options.grace);
        if (!Number.isFinite(graceHours) || graceHours < 0) throw new CliError(`--grace must be zero or more hours, got "${options.grace}"`, 2);
      }
      const { key, record, previous } = await rotateApiKey(target.deps, options.org, options.key, { graceHours });
      const { hash: _hash, ...shown } = record;
      printResult({ json }, { ...shown, key, previous }, () => {
        console.log(`New key ${record.keyId} (${safeText(record.name)}):`);
        shownOnce(key);
        console.log(previous.revokedAt ? `Old key ${previous.keyId} is revoked.` : `Old key ${previous.keyId} stays valid until ${previous.expiresAt}.`);
      });
    }));
  keys
    .command('revoke')
    .description('revoke a key now (effective within the key cache TTL)')
    .requiredOption('--org <id>', 'organization id')
    .requiredOption('--key <keyId>', 'the key to revoke')
    .action(act<{ org: string; key: string }>(async ({ target, options, json }) => {
      const revoked = await revokeApiKey(target.deps, options.org, options.key);
      printResult({ json }, revoked, () =>
        console.log(`Revoked ${revoked.keyId}; warm caches drop it within ${target.deps.settings.keyCacheTtlSeconds} s.`),
      );
    }));
}
