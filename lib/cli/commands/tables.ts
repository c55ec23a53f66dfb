/**
 * `crm tables export|import`: every topology table to files and back, for restores and moves
 * (docs/operations.md "Restore"). An export is one `<table>.jsonl` per table, each line an item
 * in DynamoDB's own JSON (types kept exactly), and `manifest.json` with the counts. An import
 * writes them into the target stack's tables (BatchWriteItem, retried until every item is in).
 */
import { mkdirSync, readFileSync, writeFileSync, existsSync } from 'node:fs';
import path from 'node:path';
import type { Command } from 'commander';
import { BatchWriteItemCommand, ScanCommand, type AttributeValue } from '@aws-sdk/client-dynamodb';
import { tables, type TableName } from '../../topology.js';
import { keys } from '../../../functions/core/platform/model.js';
import { inBatches } from '../../../functions/core/platform/batches.js';
import type { Deps } from '../../../functions/core/platform/deps.js';
import { CliError, printResult } from '../output.js';
import { act } from '../run.js';

type Item = Record<string, AttributeValue>;
const tableNames = Object.keys(tables) as TableName[];

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

async function scanTable(deps: Deps, table: string): Promise<Item[]> {
  const items: Item[] = [];
  let start: Item | undefined;
  do {
    const page = await deps.dynamodb.send(new ScanCommand({ TableName: table, ConsistentRead: true, ExclusiveStartKey: start }));
    items.push(...(page.Items ?? []));
    start = page.LastEvaluatedKey;
  } while (start);
  return items;
}

/**
 * The table an exported item goes to. Exports from before the endpoints table had the webhook
 * endpoints (and their bound) in the organizations table: they move to their own table here.
 */
function destination(from: TableName, item: Item): TableName {
  const sk = item.sk?.S;
  if (from === 'organizations' && sk !== undefined && (sk.startsWith(keys.endpointPrefix) || sk === keys.endpointSlots('').sk)) return 'endpoints';
  return from;
}

async function writeAll(deps: Deps, table: string, items: Item[]): Promise<void> {
  for (const batch of inBatches(items, 25)) {
    let pending = batch.map((Item) => ({ PutRequest: { Item } }));
    for (let attempt = 0; pending.length > 0; attempt++) {
      if (attempt > 0) await new Promise((resolve) => setTimeout(resolve, Math.min(2000, 50 * 2 ** attempt)));
      if (attempt > 10) throw new Error(`${table}: ${pending.length} item(s) still unprocessed after ${attempt} attempts (throttled?); run the import again`);
      const out = await deps.dynamodb.send(new BatchWriteItemCommand({ RequestItems: { [table]: pending } }));
      pending = (out.UnprocessedItems?.[table] ?? []) as typeof pending;
    }
  }
}

export function register(program: Command): void {
  const group = program.command('tables').description('every table of the stack to files and back (restores, moves)');
  group
    .command('export')
    .description('write every table to <dir> (one <table>.jsonl each and manifest.json)')
    .requiredOption('--dir <dir>', 'folder to write (created; existing export files are replaced)')
    .option('--from <table=name...>', 'read these tables from other physical tables (a point-in-time restore, a retained table)')
    .action(act<{ dir: string; from?: string[] }>(async ({ target, options, json }) => {
      const from = sources(options.from);
      mkdirSync(options.dir, { recursive: true });
      const counts: Partial<Record<TableName, number>> = {};
      for (const name of tableNames) {
        const items = await scanTable(target.deps, from[name] ?? target.deps.tables[name]);
        writeFileSync(path.join(options.dir, `${name}.jsonl`), items.map((i) => JSON.stringify(i)).join('\n') + (items.length ? '\n' : ''));
        counts[name] = items.length;
      }
      writeFileSync(path.join(options.dir, 'manifest.json'), JSON.stringify({ exportedAt: new Date().toISOString(), counts }, null, 2));
      printResult({ json }, { counts }, () => console.log(`Exported ${Object.entries(counts).map(([n, c]) => `${n} ${c}`).join(', ')} to ${options.dir}.`));
    }));
  group
    .command('import')
    .description('write an export into the stack\'s tables (items with the same key are replaced)')
    .requiredOption('--dir <dir>', 'folder written by `crm tables export`')
    .option('--only <tables>', 'only these tables (comma-separated)')
    .option('--except <tables>', 'all tables but these (comma-separated): `--except endpoints` first, then `--only endpoints` once the fan-out has caught up, re-emits no event (docs/operations.md)')
    .action(act<{ dir: string; only?: string; except?: string }>(async ({ target, options, json }) => {
      const only = options.only === undefined ? undefined : listOf('--only', options.only);
      const except = options.except === undefined ? [] : listOf('--except', options.except);
      const wanted = (name: TableName) => (only ? only.includes(name) : !except.includes(name));
      if (!existsSync(path.join(options.dir, 'manifest.json'))) throw new CliError(`${options.dir} holds no manifest.json: not an export of \`crm tables export\``, 2);
      const manifest = JSON.parse(readFileSync(path.join(options.dir, 'manifest.json'), 'utf8')) as { counts: Record<string, number> };
      const byTable = new Map<TableName, Item[]>();
      for (const name of Object.keys(manifest.counts)) {
        if (!tableNames.includes(name as TableName)) throw new CliError(`The export holds a table "${name}" this version does not know.`, 2);
        const lines = readFileSync(path.join(options.dir, `${name}.jsonl`), 'utf8').split('\n').filter(Boolean);
        if (lines.length !== manifest.counts[name]) throw new CliError(`${name}.jsonl holds ${lines.length} item(s), the manifest says ${manifest.counts[name]}: the export is incomplete.`, 2);
        for (const item of lines.map((l) => JSON.parse(l) as Item)) {
          const to = destination(name as TableName, item);
          if (!byTable.has(to)) byTable.set(to, []);
          byTable.get(to)!.push(item);
        }
      }
      const counts: Partial<Record<TableName, number>> = {};
      for (const [name, items] of byTable) {
        if (!wanted(name)) continue;
        await writeAll(target.deps, target.deps.tables[name], items);
        counts[name] = items.length;
      }
      printResult({ json }, { counts }, () => console.log(`Imported ${Object.entries(counts).map(([n, c]) => `${n} ${c}`).join(', ')}.`));
    }));
}
