import type { Command } from 'commander';
import { createApiKey, listApiKeys, revokeApiKey, rotateApiKey } from '../../../functions/core/tenancy/api-keys.js';
import { revocationSeconds } from '../../../functions/core/tenancy/authenticate.js';
import { CliError, printResult, printTable, safeText } from '../output.js';
import { act, positiveInt } from '../run.js';

/** A repeatable option's values. */
const collect = (value: string, previous: string[]) => [...previous, value];

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
    .option('--publishable', 'a key for public web pages (crm_pub_...): POST leads only, from the --origin(s) listed')
    .option('--origin <origin>', 'an origin the page is served from, e.g. https://shop.example (repeatable; publishable keys)', collect, [] as string[])
    .option('--thank-you-url <url>', 'where a no-script form post is redirected after the lead is created (publishable keys)')
    .option('--daily-cap <n>', 'at most this many leads a UTC day through this key (publishable keys)', positiveInt('--daily-cap'))
    .option('--per-ip-limit <n>', 'leads a minute per client address (publishable keys; default 5)', positiveInt('--per-ip-limit'))
    .option('--honeypot-field <name>', 'the hidden field bots fill in (publishable keys; default website)')
    .action(act<{ org: string; name: string; publishable?: boolean; origin: string[]; thankYouUrl?: string; dailyCap?: number; perIpLimit?: number; honeypotField?: string }>(async ({ target, options, json }) => {
      const publishableFlags = options.origin.length > 0 || [options.thankYouUrl, options.dailyCap, options.perIpLimit, options.honeypotField].some((v) => v !== undefined);
      if (!options.publishable && publishableFlags) throw new CliError('--origin, --thank-you-url, --daily-cap, --per-ip-limit and --honeypot-field need --publishable', 2);
      if (options.publishable && options.origin.length === 0) throw new CliError('--publishable needs at least one --origin, e.g. --origin https://shop.example', 2);
      const { key, record } = await createApiKey(target.deps, options.org, options.name, options.publishable
        ? { kind: 'publishable', origins: options.origin, thankYouUrl: options.thankYouUrl, dailyCap: options.dailyCap, perIpLimit: options.perIpLimit, honeypotField: options.honeypotField }
        : {});
      const { hash: _hash, ...shown } = record;
      printResult({ json }, { ...shown, key }, () => {
        console.log(`Created ${record.kind === 'publishable' ? 'publishable ' : ''}key ${record.keyId} (${safeText(record.name)}) for ${record.organizationId}:`);
        shownOnce(key);
        if (record.kind === 'publishable') {
          console.log(`It may only POST leads, from ${record.origins!.map(safeText).join(', ')}; at most ${record.perIpLimit ?? 5} a minute per visitor address.`);
          // Origins stop other sites' pages, not scripts (they can send any Origin): say what bounds a day's cost.
          console.log(record.dailyCap !== undefined
            ? `At most ${record.dailyCap} leads a UTC day through it.`
            : 'Its daily cap is the stage\'s default (publishableDailyCap, 1000 unless the settings say otherwise); a key created with --daily-cap <n> has its own.');
        }
      });
    }));
  keys
    .command('list')
    .description('list keys (never the key itself)')
    .requiredOption('--org <id>', 'organization id')
    .action(act<{ org: string }>(async ({ target, options, json }) => {
      const list = await listApiKeys(target.deps, options.org);
      printResult({ json }, list, () => printTable(
        list.map((k) => ({ ...k, kind: k.kind ?? 'secret', origins: k.origins?.join(' ') ?? '' })),
        ['keyId', 'name', 'kind', 'origins', 'status', 'createdAt', 'lastUsedAt', 'expiresAt'],
      ));
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
        console.log(`Revoked ${revoked.keyId}; warm caches drop it within ${revocationSeconds(target.deps.config)} s.`),
      );
    }));
}
