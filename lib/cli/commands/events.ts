import type { Command } from 'commander';
import { catalog } from '../../../functions/core/events/catalog.js';
import { replayFanoutFailures } from '../../../functions/core/events/replay.js';
import { printResult, printTable } from '../output.js';
import { act } from '../run.js';

export function register(program: Command): void {
  const events = program.command('events').description('the event catalog, and replay of failed fan-out batches');
  events
    .command('catalog')
    .description('list the events endpoints can subscribe to (see docs/events.md)')
    // Needs no stack: the catalog is part of the code.
    .action((_options: unknown, command: Command) => {
      const rows = catalog.map(({ type, alias, description }) => ({ type, alias: alias ?? '', description }));
      printResult({ json: Boolean(command.optsWithGlobals().json) }, rows, () => printTable(rows, ['type', 'alias', 'description']));
    });
  events
    .command('replay-failures')
    .description('re-run the fan-out on stream batches it gave up on (the fan-out failure queue); nothing is delivered twice')
    .action(act<Record<string, never>>(async ({ target, json }) => {
      const result = await replayFanoutFailures(target.deps, target.streams, (r) => {
        if (!json && process.stderr.isTTY) process.stderr.write(`\r  ${r.batches} batches, ${r.records} records`);
      });
      if (!json && process.stderr.isTTY) process.stderr.write('\n');
      printResult({ json }, result, () => {
        console.log(result.batches === 0 ? 'The fan-out failure queue is empty.' : `Replayed ${result.batches} batch(es), ${result.records} record(s); ${result.failed} failed again and stay queued.`);
        if (result.trimmed) console.log(`${result.trimmed} of those are older than the stream's 24 h retention and can no longer be read (logged with their shard and sequence numbers); they stay in the failure queue until it is purged.`);
      });
    }));
}
