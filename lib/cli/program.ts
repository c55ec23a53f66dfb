/**
 * The `crm` admin CLI (docs/architecture.md#the-crm-cli): one commander program; each noun registers its verbs from its
 * own module under lib/cli/commands/. Commands parse flags, resolve the target, call one domain
 * function and print the result.
 */
import { Command } from 'commander';
import { commandModules } from './commands/index.js';

export function buildProgram(): Command {
  const program = new Command('crm')
    .description('Admin CLI of the CRM integration API (local stack or AWS)')
    .option('--local', 'act on the local stack (.local/stack.json)')
    .option('--stage <stage>', 'act on the AWS stack of this stage')
    .option('--json', 'print JSON for scripts')
    .showHelpAfterError()
    .configureOutput({ outputError: (str, write) => write(str) });
  for (const register of commandModules) register(program);
  return program;
}
