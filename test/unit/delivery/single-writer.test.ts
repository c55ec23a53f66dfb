/**
 * The deliveries table has one writer, delivery-record.ts (docs/data-model.md "The delivery record: states and transitions"):
 * no other source file in functions/, lib/ or bin/ both names the table and builds a write to
 * DynamoDB. A scan of the source, shown to catch a planted writer.
 */
import { describe, it, expect } from '@jest/globals';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';

const WRITER = 'functions/core/delivery/delivery-record.ts';
/** The statistics' counters, under their own partition `STATS#<org>`: never a delivery record (docs/data-model.md). */
const COUNTERS = 'functions/core/delivery/stats-store.ts';
/** Notices the notices queue refused, under their own partition `UNQUEUED_NOTICES`: never a delivery record (docs/data-model.md). */
const UNQUEUED_NOTICES = 'functions/core/notify/unqueued-notices-store.ts';
const NAMES_TABLE = /\btables\.deliveries\b/;
const WRITES = /\bnew (Put|Update|Delete|BatchWrite|TransactWrite)(Item)?Command\b|\b(PutItem|UpdateItem|DeleteItem|BatchWriteItem|TransactWriteItems)Command\b/;

const writesDeliveries = (source: string) => NAMES_TABLE.test(source) && WRITES.test(source);

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) return sources(full);
    return /\.(ts|mts|js|mjs)$/.test(entry.name) && !entry.name.endsWith('.d.ts') ? [full] : [];
  });
}

describe('the deliveries table’s one writer', () => {
  it('is delivery-record.ts: no other source names the table and builds a write (the statistics\' counters and the unqueued notices, each in a partition of its own, aside)', () => {
    const writers = ['functions', 'lib', 'bin'].flatMap(sources).filter((file) => writesDeliveries(readFileSync(file, 'utf8')));
    expect(writers.sort()).toEqual([WRITER, COUNTERS, UNQUEUED_NOTICES].sort());
  });

  it('catches a planted writer, and lets a reader or a writer of another table be', () => {
    expect(writesDeliveries("await deps.doc.send(new UpdateCommand({ TableName: deps.tables.deliveries, Key }));")).toBe(true);
    expect(writesDeliveries("await deps.doc.send(new BatchWriteCommand({ RequestItems: { [deps.tables.deliveries]: [] } }));")).toBe(true);
    expect(writesDeliveries("await deps.doc.send(new QueryCommand({ TableName: deps.tables.deliveries }));")).toBe(false);
    expect(writesDeliveries("await deps.doc.send(new PutCommand({ TableName: deps.tables.clients, Item }));")).toBe(false);
  });
});

describe('the endpoints table’s one writer', () => {
  // lib/cli/commands/endpoints.ts is the one-off migration that copied the items from the
  // organizations table as they were (docs/decisions.md "Endpoints in their own table"): an operator tool, not the domain.
  const MIGRATION = 'lib/cli/commands/endpoints.ts';
  const writesEndpoints = (source: string) => /\btables\.endpoints\b/.test(source) && WRITES.test(source);

  it('is endpoint-store.ts: no other source names the table and builds a write (the migration aside)', () => {
    const writers = ['functions', 'lib', 'bin'].flatMap(sources).filter((file) => file !== MIGRATION && writesEndpoints(readFileSync(file, 'utf8')));
    expect(writers).toEqual(['functions/core/delivery/endpoint-store.ts']);
  });

  it('catches a planted writer', () => {
    expect(writesEndpoints("await deps.doc.send(new UpdateCommand({ TableName: deps.tables.endpoints, Key }));")).toBe(true);
    expect(writesEndpoints("await deps.doc.send(new GetCommand({ TableName: deps.tables.endpoints, Key }));")).toBe(false);
  });
});
