/**
 * What every command shares: the action wrapper (resolves the target once, turns domain errors into
 * CLI errors: a clear message and a non-zero exit, never a stack trace) and flag parsers. It
 * imports no command and not the program, so commands can import it without a cycle.
 */
import type { Command } from 'commander';
import { DomainError } from '../../functions/core/platform/errors.js';
import { CliError } from './output.js';
import { resolveTarget, type Target } from './target.js';

/** Global options (program.ts declares them), read from any subcommand. */
function globalOptions(cmd: Command): { local?: boolean; stage?: string; json?: boolean } {
  return cmd.optsWithGlobals();
}

/** `args`: the command's positional arguments (`show <id>`). */
export type Action<O> = (context: { target: Target; options: O; json: boolean; args: string[] }) => Promise<void>;

export function act<O>(action: Action<O>) {
  return async (...args: unknown[]) => {
    const cmd = args[args.length - 1] as Command;
    const global = globalOptions(cmd);
    try {
      const target = await resolveTarget(global);
      await action({ target, options: cmd.opts() as O, json: !!global.json, args: cmd.args });
    } catch (error) {
      if (error instanceof DomainError) {
        const fields = error.extra.errors?.map((e) => `\n  ${e.field}: ${e.message}`).join('') ?? '';
        throw new CliError(`${error.message}${fields}`);
      }
      throw error;
    }
  };
}

/** Parses a positive integer flag or fails with the flag's name. */
export function positiveInt(flag: string) {
  return (value: string): number => {
    const n = Number(value);
    if (!Number.isInteger(n) || n < 1) throw new CliError(`${flag} must be a positive integer, got "${value}"`, 2);
    return n;
  };
}

/** Parses a decimal USD amount into integer micro-dollars. */
export function usdToMicros(value: string): number {
  if (!/^\d+(\.\d{1,6})?$/.test(value.trim())) throw new CliError(`--wallet must be an amount in USD such as 25 or 12.50, got "${value}"`, 2);
  const [whole, frac = ''] = value.trim().split('.');
  return Number(whole) * 1_000_000 + Number(frac.padEnd(6, '0'));
}

export const microsToUsd = (micros: number) => `$${(micros / 1_000_000).toFixed(micros % 10_000 === 0 ? 2 : 6)}`;
