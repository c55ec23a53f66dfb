#!/usr/bin/env node
import { buildProgram } from '../lib/cli/program.js';
import { CliError } from '../lib/cli/output.js';

buildProgram()
  .parseAsync(process.argv)
  .then(() => process.exit(process.exitCode ?? 0))
  .catch((error: unknown) => {
    if (error instanceof CliError) {
      console.error(`error: ${error.message}`);
      process.exit(error.exitCode);
    }
    console.error(`error: ${error instanceof Error ? error.message : String(error)}`);
    process.exit(1);
  });
