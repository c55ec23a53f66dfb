/**
 * The runbooks' commands are the CLI's: every `npx crm …` line of docs/operations.md and
 * docs/deploy.md names a command that exists, with options it has (values given where it takes
 * one). A renamed flag or command fails here, not at 3 a.m.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, it, expect } from '@jest/globals';
import type { Command, Option } from 'commander';
import { buildProgram } from '../../../lib/cli/program.js';

const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), '../../..');

/** `npx crm …` commands of a doc: in code blocks and in backticks, continuation lines joined. */
function commandsIn(doc: string): string[] {
  const text = readFileSync(path.join(root, 'docs', doc), 'utf8').replace(/\\\n\s*/g, ' ');
  const inBlocks = [...text.matchAll(/^npx crm (.+)$/gm)].map((m) => m[1]);
  const inline = [...text.matchAll(/`(?:npx )?crm ((?:--stage <s> )?[a-z][^`]*)`/g)].map((m) => m[1]);
  return [...inBlocks, ...inline].map((c) => c.replace(/\s+#.*$/, '').trim());
}

/** Splits a doc's command line: `<placeholder>`, `[optional …]` and `…` are values, not words. */
function check(program: Command, line: string): string[] {
  const words = line.replace(/\[[^\]]*\]/g, '').replace(/"[^"]*"/g, 'VALUE').split(/\s+/).filter((w) => w && w !== '…' && w !== '-');
  const problems: string[] = [];
  let command = program;
  const optionsOf = (c: Command): readonly Option[] => [...c.options, ...program.options];
  // A group with a default sub-command (`settings-link --org` is `settings-link open --org`).
  const defaultOf = (c: Command) => c.commands.find((s) => s.name() === (c as unknown as { _defaultCommandName?: string })._defaultCommandName);
  for (let i = 0; i < words.length; i++) {
    const word = words[i];
    const fallback = defaultOf(command);
    if (fallback && !command.commands.some((c) => c.name() === word || c.aliases().includes(word))) command = fallback;
    if (word.startsWith('--')) {
      const option = optionsOf(command).find((o) => o.long === word);
      if (!option) problems.push(`${line}: ${command.name()} has no ${word}`);
      else if (option.required || option.optional) i++; // its value
    } else {
      const sub = command.commands.find((c) => c.name() === word || c.aliases().includes(word));
      if (sub) command = sub;
      else if (command.commands.length > 0) return [...problems, `${line}: ${command.name()} has no command "${word}"`];
    }
  }
  if (command.commands.length > 0 && !defaultOf(command)) problems.push(`${line}: "${command.name()}" needs a sub-command`);
  return problems;
}

describe('the runbooks', () => {
  it.each(['operations.md', 'deploy.md'])('%s uses only commands and options the CLI has', (doc) => {
    const program = buildProgram();
    const lines = commandsIn(doc);
    expect(lines.length).toBeGreaterThan(doc === 'operations.md' ? 10 : 0);
    expect(lines.flatMap((line) => check(program, line))).toEqual([]);
  });

  it('catches a command or option the CLI does not have (the check can fail)', () => {
    const program = buildProgram();
    expect(check(program, 'deliveries redeliver --org <org> --skip-dead')).toEqual(['deliveries redeliver --org <org> --skip-dead: redeliver has no --skip-dead']);
    expect(check(program, 'deliveries resend --org <org>')).toEqual(['deliveries resend --org <org>: deliveries has no command "resend"']);
    expect(check(program, '--stage prod tables import --dir d --only endpoints')).toEqual([]);
  });

  it('keeps the verbs operators typed before the glossary as aliases of the new ones', () => {
    const deliveries = buildProgram().commands.find((c) => c.name() === 'deliveries')!;
    const byWord = (word: string) => deliveries.commands.find((c) => c.name() === word || c.aliases().includes(word));
    expect(byWord('redrive')).toBeDefined();
    expect(byWord('redrive')).toBe(byWord('redeliver'));
    expect(byWord('redeliver')!.name()).toBe('redeliver');
    expect(check(buildProgram(), 'deliveries redrive --org <org> --skip-failing')).toEqual([]);
  });
});
