import type { Command } from 'commander';
import { listRequests } from '../../../functions/core/tenancy/request-log.js';
import { listNotifications } from '../../../functions/core/crm/notifications.js';
import { requireOrganization } from '../../../functions/core/tenancy/organizations.js';
import { printResult, printTable } from '../output.js';
import { act, positiveInt } from '../run.js';

export function register(program: Command): void {
  program
    .command('logs')
    .description("an organization's API request log (newest first, kept 30 days)")
    .requiredOption('--org <id>', 'organization id')
    .option('--limit <n>', 'how many', positiveInt('--limit'), 50)
    .action(act<{ org: string; limit: number }>(async ({ target, options, json }) => {
      await requireOrganization(target.deps, options.org);
      const rows = await listRequests(target.deps, options.org, { limit: options.limit });
      printResult({ json }, rows, () => printTable(rows, ['at', 'requestId', 'keyId', 'method', 'route', 'status', 'latencyMs']));
    }));
  program
    .command('notifications')
    .description("an organization's team notifications (new leads)")
    .requiredOption('--org <id>', 'organization id')
    .option('--limit <n>', 'how many', positiveInt('--limit'), 50)
    .action(act<{ org: string; limit: number }>(async ({ target, options, json }) => {
      await requireOrganization(target.deps, options.org);
      const rows = await listNotifications(target.deps, options.org, { limit: options.limit });
      printResult({ json }, rows, () => printTable(rows, ['createdAt', 'type', 'title', 'clientId']));
    }));
}
