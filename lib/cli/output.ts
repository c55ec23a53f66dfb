/** How CLI commands print: a readable table for people, JSON (--json) for scripts. */

export interface OutputOptions { json?: boolean }

export function printResult(options: OutputOptions, value: unknown, human: () => void): void {
  if (options.json) process.stdout.write(JSON.stringify(value, null, 2) + '\n');
  else human();
}

/** Prints rows as an aligned text table; empty cells show as '-'. */
export function printTable(rows: object[], columns: string[]): void {
  if (rows.length === 0) {
    console.log('(none)');
    return;
  }
  const cell = (v: unknown) => (v === undefined || v === null || v === '' ? '-' : String(v));
  const widths = columns.map((c) => Math.max(c.length, ...rows.map((r) => cell((r as Record<string, unknown>)[c]).length)));
  const line = (vals: string[]) => vals.map((v, i) => v.padEnd(widths[i])).join('  ').trimEnd();
  console.log(line(columns.map((c) => c.toUpperCase())));
  for (const r of rows) console.log(line(columns.map((c) => cell((r as Record<string, unknown>)[c]))));
}

/** A CLI error a user can act on: printed without a stack trace, exit code 1 (2 for usage). */
export class CliError extends Error {
  constructor(message: string, readonly exitCode = 1) {
    super(message);
  }
}
