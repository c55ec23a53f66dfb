/**
 * `crm tables export|import`: tables to files and back, for restores (docs/operations.md "Restore").
 * An export is one `<table>.jsonl` per table, each line an item in DynamoDB's own JSON (types kept
 * exactly), written page by page as it is scanned, and `manifest.json` with the counts; every file
 * is mode 0600 (they hold signing secrets, key hashes and personal data: delete them afterwards).
 * An import never rolls a live stack back: it writes only the items the table lacks (a conditional
 * put), endpoints first (so parked deliveries find theirs), and marks the streamed tables' items
 * with `restoredAt`, which the fan-out takes as "no event" (functions/core/events/derive.ts).
 * Every line is checked first (lib/cli/import-items.ts): one bad line and nothing is written,
 * unless --skip-invalid; --dry-run only reports. Writing only what is missing makes an import
 * that died partway resumable: run it again.
 */
import { createReadStream, createWriteStream, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { once } from 'node:events';
import path from 'node:path';
import { createInterface } from 'node:readline';
import type { Command } from 'commander';
import { PutItemCommand, ScanCommand } from '@aws-sdk/client-dynamodb';
import { tables, type TableName } from '../../topology.js';
import type { Deps } from '../../../functions/core/platform/deps.js';
import { checkLine, type Item } from '../import-items.js';
import { restoredAtAttribute } from '../../../functions/core/events/derive.js';
import { CliError, printResult, safeText } from '../output.js';
import { act } from '../run.js';

const tableNames = Object.keys(tables) as TableName[];
const PRIVATE = 0o600;
/** Conditional puts in flight at once (on-demand tables take far more; the CLI stays polite). */
const IMPORT_CONCURRENCY = 16;

/** `--from organizations=<physical name>`: read that table instead of the stack's (a restored or retained one). */
function sources(pairs: string[] = []): Partial<Record<TableName, string>> {
  const out: Partial<Record<TableName, string>> = {};
  for (const pair of pairs) {
    const [name, table] = pair.split('=');
    if (!tableNames.includes(name as TableName) || !table) throw new CliError(`--from takes <table>=<physical name>, <table> one of ${tableNames.join(', ')}; got "${pair}"`, 2);
    out[name as TableName] = table;
  }
  return out;
}

const listOf = (flag: string, value: string): TableName[] => value.split(',').map((name) => {
  if (!tableNames.includes(name as TableName)) throw new CliError(`${flag} takes table names (${tableNames.join(', ')}); got "${name}"`, 2);
  return name as TableName;
});

/** Scans `table` into `file`, one page at a time (never the whole table in memory); returns the count. */
async function exportTable(deps: Deps, table: string, file: string): Promise<number> {
  const out = createWriteStream(file, { mode: PRIVATE });
  let count = 0;
  let start: Item | undefined;
  try {
    do {
      const page = await deps.dynamodb.send(new ScanCommand({ TableName: table, ConsistentRead: true, ExclusiveStartKey: start }));
      const chunk = (page.Items ?? []).map((i) => JSON.stringify(i) + '\n').join('');
      if (chunk && !out.write(chunk)) await once(out, 'drain');
      count += page.Items?.length ?? 0;
      start = page.LastEvaluatedKey;
    } while (start);
  } finally {
    out.end();
    await once(out, 'close');
  }
  return count;
}

/** The non-empty lines of one export file, with their numbers (1-based). */
async function* linesIn(file: string): AsyncGenerator<{ n: number; line: string }> {
  let n = 0;
  for await (const line of createInterface({ input: createReadStream(file), crlfDelay: Infinity })) {
    n++;
    if (line.trim()) yield { n, line };
  }
}

/** Puts `item` unless the table holds its key; true if written. */
async function putIfMissing(deps: Deps, table: TableName, item: Item): Promise<boolean> {
  const key = tables[table].partitionKey.name;
  try {
    await deps.dynamodb.send(new PutItemCommand({ TableName: deps.tables[table], Item: item, ConditionExpression: 'attribute_not_exists(#k)', ExpressionAttributeNames: { '#k': key } }));
    return true;
  } catch (error) {
    if ((error as Error).name === 'ConditionalCheckFailedException') return false;
    throw error;
  }
}

function readManifest(dir: string): Record<string, number> {
  if (!existsSync(path.join(dir, 'manifest.json'))) throw new CliError(`${dir} holds no manifest.json: not an export of \`crm tables export\``, 2);
  return (JSON.parse(readFileSync(path.join(dir, 'manifest.json'), 'utf8')) as { counts: Record<string, number> }).counts;
}

interface Invalid { file: string; line: number; reason: string }

/**
 * Checks every line of every file, and each file's count against the manifest, before anything is
 * written: an incomplete export imports nothing; a bad line is reported with its number and reason.
 */
async function checkExport(deps: Deps, dir: string, counts: Record<string, number>): Promise<{ invalid: Invalid[]; valid: Partial<Record<TableName, number>> }> {
  const invalid: Invalid[] = [];
  const valid: Partial<Record<TableName, number>> = {};
  for (const [name, expected] of Object.entries(counts)) {
    if (!tableNames.includes(name as TableName)) throw new CliError(`The export holds a table "${name}" this version does not know.`, 2);
    const file = `${name}.jsonl`;
    if (!existsSync(path.join(dir, file))) throw new CliError(`${file} is missing: the export is incomplete.`, 2);
    let lines = 0;
    for await (const { n, line } of linesIn(path.join(dir, file))) {
      lines++;
      const checked = checkLine(deps, name as TableName, line);
      if (checked.ok) valid[checked.to] = (valid[checked.to] ?? 0) + 1;
      else invalid.push({ file, line: n, reason: checked.reason });
    }
    if (lines !== expected) throw new CliError(`${file} holds ${lines} item(s), the manifest says ${expected}: the export is incomplete.`, 2);
  }
  return { invalid, valid };
}

/** Bad lines shown on a terminal (all of them are in --json's answer). */
const SHOWN_INVALID = 50;
const report = (invalid: Invalid[]) => {
  for (const bad of invalid.slice(0, SHOWN_INVALID)) process.stderr.write(`  ${bad.file}:${bad.line}: ${safeText(bad.reason)}\n`);
  if (invalid.length > SHOWN_INVALID) process.stderr.write(`  … and ${invalid.length - SHOWN_INVALID} more (--json lists them all)\n`);
};
/** A progress line every this many items written to a table. */
const PROGRESS_EVERY = 500;

export function register(program: Command): void {
  const group = program.command('tables').description('tables of the stack to files and back (restores)');
  group
    .command('export')
    .description('write tables to <dir> (one <table>.jsonl each and manifest.json, mode 0600: delete them when done)')
    .requiredOption('--dir <dir>', 'folder to write (created; existing export files are replaced)')
    .option('--only <tables>', 'only these tables (comma-separated): the ones a restore brings back')
    .option('--from <table=name...>', 'read these tables from other physical tables (a point-in-time restore, a retained table)')
    .action(act<{ dir: string; only?: string; from?: string[] }>(async ({ target, options, json }) => {
      const from = sources(options.from);
      const names = options.only === undefined ? tableNames : listOf('--only', options.only);
      mkdirSync(options.dir, { recursive: true, mode: 0o700 });
      const counts: Partial<Record<TableName, number>> = {};
      for (const name of names) {
        counts[name] = await exportTable(target.deps, from[name] ?? target.deps.tables[name], path.join(options.dir, `${name}.jsonl`));
        if (!json) process.stderr.write(`  ${name}: ${counts[name]}\n`);
      }
      writeFileSync(path.join(options.dir, 'manifest.json'), JSON.stringify({ exportedAt: new Date().toISOString(), counts }, null, 2), { mode: PRIVATE });
      printResult({ json }, { counts }, () => console.log(`Exported ${Object.entries(counts).map(([n, c]) => `${n} ${c}`).join(', ')} to ${options.dir} (signing secrets, key hashes and personal data: delete it when done).`));
    }));
  group
    .command('import')
    .description('write the items an export holds that the stack\'s tables lack (existing items are never replaced), endpoints first, without re-emitting events; every line is checked first')
    .requiredOption('--dir <dir>', 'folder written by `crm tables export`')
    .option('--only <tables>', 'only these tables (comma-separated)')
    .option('--dry-run', 'check every line and report the bad ones with their numbers; write nothing')
    .option('--skip-invalid', 'write the valid lines and report the bad ones (without it, one bad line and nothing is written)')
    .action(act<{ dir: string; only?: string; dryRun?: boolean; skipInvalid?: boolean }>(async ({ target, options, json }) => {
      const only = options.only === undefined ? undefined : listOf('--only', options.only);
      const counts = readManifest(options.dir);
      const { invalid, valid } = await checkExport(target.deps, options.dir, counts);
      if (options.dryRun) {
        printResult({ json }, { dryRun: true, valid, invalid }, () => {
          report(invalid);
          console.log(`Dry run: ${Object.entries(valid).map(([n, c]) => `${n} ${c}`).join(', ') || 'nothing'} valid; ${invalid.length} invalid line(s). Nothing was written.`);
        });
        if (invalid.length > 0) process.exitCode = 1;
        return;
      }
      if (invalid.length > 0 && !options.skipInvalid) {
        if (!json) report(invalid);
        throw new CliError(`${invalid.length} invalid line(s)${json ? `: ${invalid.slice(0, SHOWN_INVALID).map((b) => `${b.file}:${b.line}: ${b.reason}`).join('; ')}` : ' (above)'}. Nothing was written. Fix them, or pass --skip-invalid to import the rest.`);
      }
      const skipped = new Set(invalid.map((b) => `${b.file}:${b.line}`));
      const restoredAt = new Date(target.deps.now()).toISOString();
      const written: Partial<Record<TableName, number>> = {};
      const present: Partial<Record<TableName, number>> = {};
      // Endpoints first: a parked delivery the sweeper re-queues must find its endpoint.
      for (const endpointsPass of [true, false]) {
        for (const name of Object.keys(counts) as TableName[]) {
          const inFlight = new Set<Promise<void>>();
          for await (const { n, line } of linesIn(path.join(options.dir, `${name}.jsonl`))) {
            if (skipped.has(`${name}.jsonl:${n}`)) continue;
            const checked = checkLine(target.deps, name, line);
            if (!checked.ok) continue;
            const { to, item } = checked;
            if ((to === 'endpoints') !== endpointsPass || (only && !only.includes(to))) continue;
            const marked: Item = 'stream' in tables[to] ? { ...item, [restoredAtAttribute]: { S: restoredAt } } : item;
            const put = putIfMissing(target.deps, to, marked).then((done) => {
              const tally = done ? written : present;
              tally[to] = (tally[to] ?? 0) + 1;
              const total = (written[to] ?? 0) + (present[to] ?? 0);
              if (!json && total % PROGRESS_EVERY === 0) process.stderr.write(`  ${to}: ${total} done\n`);
            }).finally(() => inFlight.delete(put));
            inFlight.add(put);
            if (inFlight.size >= IMPORT_CONCURRENCY) await Promise.race(inFlight);
          }
          await Promise.all(inFlight);
        }
      }
      printResult({ json }, { counts: written, alreadyPresent: present, ...(invalid.length ? { skippedInvalid: invalid } : {}) }, () => {
        if (invalid.length) report(invalid);
        console.log(`Imported ${Object.entries(written).map(([n, c]) => `${n} ${c}`).join(', ') || 'nothing'}; already present (kept as they are): ${Object.entries(present).map(([n, c]) => `${n} ${c}`).join(', ') || 'none'}${invalid.length ? `; skipped ${invalid.length} invalid line(s) (above)` : ''}.`);
      });
    }));
}
