/** How CLI commands print: a readable table for people, JSON (--json) for scripts. */

export interface OutputOptions { json?: boolean }

/**
 * Stored text comes from the outside (lead forms, the CRM app): a control character or a bidi
 * override printed raw would drive the admin's terminal (escape sequences, text that reads
 * backwards). Human output shows each as a visible escape; JSON escapes what JSON.stringify leaves.
 */
// eslint-disable-next-line no-control-regex -- matching control characters is the point
const TERMINAL_UNSAFE = /[\u0000-\u001F\u007F-\u009F\u061C\u200E\u200F\u2028\u2029\u202A-\u202E\u2066-\u2069]/g;
// JSON.stringify escapes C0 controls only: C1, bidi marks and overrides, and U+2028/U+2029 are left raw.
const JSON_UNSAFE = /[\u007F-\u009F\u061C\u200E\u200F\u2028\u2029\u202A-\u202E\u2066-\u2069]/g;
const escapeChar = (c: string) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`;

/** Text safe to print to a terminal: every control and bidi character as a visible `\uXXXX`. */
export const safeText = (value: unknown): string => String(value).replace(TERMINAL_UNSAFE, escapeChar);

export function printResult(options: OutputOptions, value: unknown, human: () => void): void {
  if (options.json) process.stdout.write(JSON.stringify(value, null, 2).replace(JSON_UNSAFE, escapeChar) + '\n');
  else human();
}

/** Prints rows as an aligned text table; empty cells show as '-'. */
export function printTable(rows: object[], columns: string[]): void {
  if (rows.length === 0) {
    console.log('(none)');
    return;
  }
  const cell = (v: unknown) => (v === undefined || v === null || v === '' ? '-' : safeText(v));
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
