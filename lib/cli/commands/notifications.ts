import type { Command } from 'commander';
import { listNotifications } from '../../../functions/core/crm/notifications.js';
import { requireOrganization } from '../../../functions/core/tenancy/organizations.js';
import { recordChange } from '../../../functions/core/settings/audit-log.js';
import { NOTICE_KINDS } from '../../../functions/core/notify/notice.js';
import { addRecipient, listRecipients, removeRecipient, setRecipients, type RecipientsChange } from '../../../functions/core/notify/recipients.js';
import type { Deps } from '../../../functions/core/platform/deps.js';
import { CliError, printResult, printTable } from '../output.js';
import { act, positiveInt } from '../run.js';

/**
 * `crm notifications`: an organization's team notifications (the inbox, the default), and
 * `crm notifications recipients …`: who is sent notices by e-mail (docs/notifications.md), as the
 * settings page and API set them; a new address gets its confirmation e-mail only.
 */
export function register(program: Command): void {
  const notifications = program.command('notifications').description("an organization's team notifications (`notifications --org <id>`), and who is sent notices by e-mail (`notifications recipients …`)");
  notifications
    .command('list', { isDefault: true })
    .description("an organization's team notifications (new leads), newest first")
    .requiredOption('--org <id>', 'organization id')
    .option('--limit <n>', 'how many', positiveInt('--limit'), 50)
    .action(act<{ org: string; limit: number }>(async ({ target, options, json }) => {
      await requireOrganization(target.deps, options.org);
      const rows = await listNotifications(target.deps, options.org, { limit: options.limit });
      printResult({ json }, rows, () => printTable(rows, ['createdAt', 'type', 'title', 'clientId']));
    }));

  const recipients = notifications.command('recipients').description(`who is sent notices by e-mail (at most 10 addresses; notices: ${NOTICE_KINDS.join(', ')})`);
  const show = (json: boolean, change: Pick<RecipientsChange, 'recipients'> & Partial<RecipientsChange>) => {
    const rows = change.recipients.map((r) => ({ email: r.email, status: r.status, notices: r.notices.join(',') }));
    printResult({ json }, { ...change, recipients: change.recipients.map((r) => ({ email: r.email, notices: r.notices, status: r.status })) }, () => {
      printTable(rows, ['email', 'status', 'notices']);
      if (change.added?.length) console.error(`A confirmation e-mail was queued for ${change.added.join(', ')}: nothing else is sent there until it is confirmed.`);
    });
  };
  const audited = async (deps: Deps, org: string, user: string, change: RecipientsChange) => {
    if (change.added.length || change.removed.length || change.changed.length) {
      await recordChange(deps, { organizationId: org, userId: user, action: 'notifications.recipients_set', targetId: org, detail: { added: change.added, removed: change.removed, changed: change.changed, via: 'cli' }, requestId: `cli-${Date.now()}` });
    }
  };
  const notices = (value: string) => value.split(',').map((n) => n.trim()).filter(Boolean);

  recipients
    .command('list')
    .description('the recipients, each with its notices and status (pending, confirmed, suppressed)')
    .requiredOption('--org <id>', 'organization id')
    .action(act<{ org: string }>(async ({ target, options, json }) => {
      await requireOrganization(target.deps, options.org);
      show(json, { recipients: await listRecipients(target.deps, options.org) });
    }));
  recipients
    .command('set')
    .description('make these the recipients (others are removed): `set --org <id> --recipient ops@shop.example=lead.created,endpoint.paused --recipient boss@shop.example=daily_digest`')
    .requiredOption('--org <id>', 'organization id')
    .option('--recipient <email=notices>', 'an address and its comma-separated notices; repeat for each (none: remove every recipient)', (value: string, list: string[]) => [...list, value], [] as string[])
    .option('--user <id>', 'the acting user recorded in the audit log', 'operator')
    .action(act<{ org: string; user: string; recipient: string[] }>(async ({ target, options, json }) => {
      await requireOrganization(target.deps, options.org);
      const list = options.recipient.map((entry) => {
        const at = entry.indexOf('=');
        if (at < 0) throw new CliError(`"${entry}" is not email=notice,notice`, 2);
        return { email: entry.slice(0, at), notices: notices(entry.slice(at + 1)) };
      });
      const change = await setRecipients(target.deps, options.org, list);
      await audited(target.deps, options.org, options.user, change);
      show(json, change);
    }));
  recipients
    .command('add')
    .description('add an address (a confirmation e-mail is sent to it), or change its notices')
    .requiredOption('--org <id>', 'organization id')
    .requiredOption('--email <address>', 'the address')
    .option('--notices <list>', `comma-separated: ${NOTICE_KINDS.join(', ')}`, NOTICE_KINDS.join(','))
    .option('--user <id>', 'the acting user recorded in the audit log', 'operator')
    .action(act<{ org: string; email: string; notices: string; user: string }>(async ({ target, options, json }) => {
      await requireOrganization(target.deps, options.org);
      const change = await addRecipient(target.deps, options.org, { email: options.email, notices: notices(options.notices) });
      await audited(target.deps, options.org, options.user, change);
      show(json, change);
    }));
  recipients
    .command('remove')
    .description('remove an address')
    .requiredOption('--org <id>', 'organization id')
    .requiredOption('--email <address>', 'the address')
    .option('--user <id>', 'the acting user recorded in the audit log', 'operator')
    .action(act<{ org: string; email: string; user: string }>(async ({ target, options, json }) => {
      await requireOrganization(target.deps, options.org);
      const change = await removeRecipient(target.deps, options.org, options.email);
      await audited(target.deps, options.org, options.user, change);
      show(json, change);
    }));
}
