import type { Command } from 'commander';
import type { Deps } from '../../../functions/core/platform/deps.js';
import { MAX_LIST_CALLS, listRequestLog } from '../../../functions/core/settings/request-log-read.js';
import { requireOrganization } from '../../../functions/core/tenancy/organizations.js';
import { printResult, printTable } from '../output.js';
import { act, positiveInt } from '../run.js';

/** A command that prints an organization's newest rows of one kind. */
function newestCommand<Row extends object>(
  program: Command, name: string, description: string,
  list: (deps: Deps, organizationId: string, options: { limit: number }) => Promise<Row[]>, columns: (keyof Row & string)[],
): void {
  program
    .command(name)
    .description(description)
    .requiredOption('--org <id>', 'organization id')
    .option('--limit <n>', 'how many', positiveInt('--limit'), 50)
    .action(act<{ org: string; limit: number }>(async ({ target, options, json }) => {
      await requireOrganization(target.deps, options.org);
      const rows = await list(target.deps, options.org, { limit: options.limit });
      printResult({ json }, rows, () => printTable(rows, columns));
    }));
}

export function register(program: Command): void {
  newestCommand(program, 'logs', `an organization's API request log (newest first, kept 30 days; at most ${MAX_LIST_CALLS} reads)`, async (deps, organizationId, options) => {
    const { rows, more, calls } = await listRequestLog(deps, organizationId, options);
    // A stretch of the CRM's clients (an import) is read and filtered out a bounded part a call: say when it stopped before `limit`.
    if (more) process.stderr.write(`stopped after ${calls} reads with ${rows.length} of ${options.limit} rows: older rows may remain (docs/settings.md "Request log")\n`);
    return rows;
  },
    ['at', 'requestId', 'keyId', 'method', 'route', 'status', 'outcome', 'clientId', 'latencyMs']);
}
