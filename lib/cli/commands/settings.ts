import type { Command } from 'commander';
import { requireOrganization, revokeSettingsLinks } from '../../../functions/core/tenancy/organizations.js';
import { recordChange } from '../../../functions/core/settings/audit-log.js';
import { MAX_SESSION_TTL_SECONDS, mintSessionToken, parseTtl } from '../../../functions/core/settings/session-token.js';
import { CliError, printResult } from '../output.js';
import { act } from '../run.js';

/**
 * `crm settings-link`: what the CRM app does for a signed-in admin (docs/settings.md), for operators
 * and demos: a session token signed with the stack's secret, in the URL fragment of the settings
 * page (a fragment never reaches server logs).
 */
export function register(program: Command): void {
  const link = program
    .command('settings-link')
    .description('a link to the organization settings page (`settings-link --org <id>`), or sign every link out (`settings-link revoke --org <id>`)');
  link
    .command('open', { isDefault: true })
    .description('print a link to the organization settings page (a session token valid up to 1 h)')
    .requiredOption('--org <id>', 'organization id')
    .option('--user <id>', 'the acting user recorded in the audit log', 'operator')
    .option('--ttl <duration>', 'how long the link works: 15m, 1h, 900s (at most 1h)', '15m')
    .action(act<{ org: string; user: string; ttl: string }>(async ({ target, options, json }) => {
      const ttlSeconds = parseTtl(options.ttl);
      if (ttlSeconds > MAX_SESSION_TTL_SECONDS) throw new CliError(`--ttl must be at most 1h, got "${options.ttl}"`, 2);
      if (!target.apiUrl) throw new CliError(`${target.describe} has no API URL.`);
      await requireOrganization(target.deps, options.org);
      const now = Date.now();
      const token = await mintSessionToken(await target.readSecret('settingsToken'), { organizationId: options.org, userId: options.user, ttlSeconds, now });
      const url = `${target.apiUrl}/settings#token=${token}`;
      const expiresAt = new Date(now + ttlSeconds * 1000).toISOString();
      printResult({ json }, { url, organizationId: options.org, user: options.user, expiresAt }, () => {
        console.log(url);
        console.error(`Valid until ${expiresAt} for ${options.org} as ${options.user}. Anyone with this link can manage the organization's keys and webhooks until then.`);
      });
    }));
  link
    .command('revoke')
    .description('sign out every settings link of the organization issued until now (each one\'s next request is a 401); recorded in the audit log')
    .requiredOption('--org <id>', 'organization id')
    .option('--user <id>', 'who signs them out, for the audit log', 'operator')
    .action(act<{ org: string; user: string }>(async ({ target, options, json }) => {
      const at = await revokeSettingsLinks(target.deps, options.org);
      const revokedAt = new Date(at).toISOString();
      await recordChange(target.deps, { organizationId: options.org, userId: options.user, action: 'settings.links_revoked', targetId: options.org, detail: { revokedAt, via: 'cli' }, requestId: `cli-${at}` });
      printResult({ json }, { organizationId: options.org, revokedAt }, () => console.log(`Signed out every settings link of ${options.org} issued until ${revokedAt}. Open a new one with: crm settings-link --org ${options.org}`));
    }));
}
