import type { Command } from 'commander';
import { captchaProviders, createOrganization, duplicatePolicies, listOrganizations, setDuplicatePolicy, setOrganizationCaptcha } from '../../../functions/core/tenancy/organizations.js';
import type { CaptchaProvider, DuplicatePolicy } from '../../../functions/core/platform/model.js';
import { CliError, printResult, printTable, safeText } from '../output.js';
import { act, microsToUsd, positiveInt, usdToMicros } from '../run.js';

export function register(program: Command): void {
  const org = program.command('org').description('organizations (tenants)');
  org
    .command('create')
    .description('create an organization')
    .requiredOption('--name <name>', 'display name')
    .option('--plan <plan>', 'plan (see settings planRateLimits)', 'free')
    .option('--rate-limit <n>', 'requests per minute per key, overriding the plan', positiveInt('--rate-limit'))
    .option('--billing <mode>', 'none | prepaid', 'none')
    .option('--wallet <usd>', 'prepaid balance in USD (with --billing prepaid)')
    .action(act<{ name: string; plan: string; rateLimit?: number; billing: string; wallet?: string }>(async ({ target, options, json }) => {
      if (!['none', 'prepaid'].includes(options.billing)) throw new CliError(`--billing must be none or prepaid, got "${options.billing}"`, 2);
      if (options.wallet !== undefined && options.billing !== 'prepaid') throw new CliError('--wallet needs --billing prepaid', 2);
      const created = await createOrganization(target.deps, {
        name: options.name,
        plan: options.plan,
        rateLimitPerMinute: options.rateLimit,
        billing: options.billing as 'none' | 'prepaid',
        walletMicros: options.wallet === undefined ? 0 : usdToMicros(options.wallet),
      });
      printResult({ json }, created, () => {
        console.log(`Created organization ${created.id} (${safeText(created.name)}) on ${target.describe}`);
        console.log(`  plan ${created.plan}, billing ${created.billing}${created.billing === 'prepaid' ? `, wallet ${microsToUsd(created.walletMicros)}` : ''}`);
        console.log(`Next: npx crm keys create --org ${created.id} --name website`);
      });
    }));
  org
    .command('set-captcha')
    .description('require a CAPTCHA on leads sent with publishable keys (provider none removes it); the secret is never printed')
    .requiredOption('--org <id>', 'organization id')
    .requiredOption('--provider <name>', `${captchaProviders.join(' | ')} | none`)
    .option('--secret <secret>', 'the provider\'s secret key; "-" reads it from stdin (keeps it out of shell history)')
    .action(act<{ org: string; provider: string; secret?: string }>(async ({ target, options, json }) => {
      const provider = options.provider as CaptchaProvider | 'none';
      if (provider !== 'none' && !captchaProviders.includes(provider)) throw new CliError(`--provider must be one of ${captchaProviders.join(', ')} or none, got "${options.provider}"`, 2);
      if (provider !== 'none' && options.secret === undefined) throw new CliError(`--secret is required with --provider ${provider} ("-" reads it from stdin)`, 2);
      const secret = options.secret === '-' ? await readStdin() : options.secret;
      const updated = await setOrganizationCaptcha(target.deps, options.org, { provider, secret });
      printResult({ json }, { id: updated.id, captchaProvider: updated.captchaProvider ?? 'none' }, () =>
        console.log(updated.captchaProvider
          ? `Leads sent with publishable keys of ${updated.id} must now pass ${updated.captchaProvider} (secret stored, not shown). Warm containers apply it within ${target.deps.config.keyCacheTtlSeconds} s.`
          : `No CAPTCHA is required for ${updated.id} any more.`),
      );
    }));
  org
    .command('set-duplicates')
    .description('what a lead matching an existing client (same e-mail or phone) does: flag (default) or merge (by e-mail, from secret keys only)')
    .requiredOption('--org <id>', 'organization id')
    .requiredOption('--policy <policy>', `${duplicatePolicies.join(' | ')}`)
    .action(act<{ org: string; policy: string }>(async ({ target, options, json }) => {
      if (!duplicatePolicies.includes(options.policy as DuplicatePolicy)) throw new CliError(`--policy must be one of ${duplicatePolicies.join(', ')}, got "${options.policy}"`, 2);
      const updated = await setDuplicatePolicy(target.deps, options.org, options.policy);
      printResult({ json }, { id: updated.id, duplicatePolicy: updated.duplicatePolicy }, () =>
        console.log(updated.duplicatePolicy === 'merge'
          ? `Leads of ${updated.id} matching an existing client are now merged into it. Warm containers apply it within ${target.deps.config.keyCacheTtlSeconds} s.`
          : `Leads of ${updated.id} matching an existing client now create a new client flagged possible_duplicate_of. Warm containers apply it within ${target.deps.config.keyCacheTtlSeconds} s.`),
      );
    }));
  org
    .command('list')
    .description('list organizations')
    .action(act(async ({ target, json }) => {
      const orgs = await listOrganizations(target.deps);
      printResult({ json }, orgs, () =>
        printTable(orgs.map((o) => ({ ...o, rateLimit: o.rateLimitPerMinute, wallet: o.billing === 'prepaid' ? microsToUsd(o.walletMicros) : '' })), ['id', 'name', 'plan', 'rateLimit', 'billing', 'wallet', 'createdAt']),
      );
    }));
}

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8').trim();
}
