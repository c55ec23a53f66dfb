import type { Command } from 'commander';
import { catalog } from '../../../functions/core/events/catalog.js';
import { replayFanoutFailures } from '../../../functions/core/events/replay.js';
import { replayBulkDeadLetters } from '../../../functions/core/events/bulk-replay.js';
import { printResult, printTable } from '../output.js';
import { act } from '../run.js';

export function register(program: Command): void {
  const events = program.command('events').description('the event catalog, and replay of failed fan-out batches and bulk shares');
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
  events
    .command('replay-bulk')
    .description('send the bulk shares the bulk fan-out gave up on (the bulk dead-letter queue) back to the bulk queue; nothing is recorded or delivered twice')
    .option('--dry-run', 'count the messages and check each, moving nothing')
    .action(act<{ dryRun?: boolean }>(async ({ target, options, json }) => {
      const progress = !json && process.stderr.isTTY;
      const result = await replayBulkDeadLetters(target.deps, { dryRun: options.dryRun }, (r) => {
        if (progress) process.stderr.write(`\r  ${r.messages} messages, ${r.moved} ${r.dryRun ? 'to move' : 'moved'}, ${r.duplicates} duplicates, ${r.failed} failed`);
      });
      if (progress) process.stderr.write('\n');
      printResult({ json }, result, () => {
        if (result.messages === 0) console.log('The bulk dead-letter queue is empty.');
        else if (result.dryRun) console.log(`Dry run: ${result.messages} message(s); ${result.moved} would move back to the bulk queue, ${result.duplicates} duplicate(s) would be deleted, ${result.failed} refused (see the log).`);
        else console.log(`Moved ${result.moved} of ${result.messages} message(s) back to the bulk queue (${result.duplicates} duplicate(s) deleted); ${result.failed} failed and stay in the bulk dead-letter queue (see the log).`);
      });
      if (result.failed > 0) process.exitCode = 1;
    }));
}
