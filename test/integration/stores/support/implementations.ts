/**
 * The two implementations every store's contract suite runs against: the DynamoDB store on the
 * suite's DynamoDB Local (integration stack), and the in-memory twin (test/support/stores). Each
 * comes with deps whose ports choose it, a clock the test sets, and raw access to the table (a
 * given item of an older version; the stored item read back, to hold both to the same shapes).
 */
import { GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import type { Deps } from '../../../../functions/core/platform/deps.js';
import { testStack } from '../../support/stack.js';
import { memoryStores, type MemoryStores } from '../../../support/stores/memory-deps.js';

type Item = Record<string, unknown>;
type Key = { pk: string; sk: string };
export type TableOf = 'organizations' | 'clients' | 'workOrders';

export interface Implementation {
  deps: Deps;
  clock: { now: () => number; set(iso: string): void };
  /** The stored item, read back (a consistent read). */
  read(table: TableOf, key: Key): Promise<Item | undefined>;
  /** Writes an item as given (an item of an older version, a state to start from). */
  given(table: TableOf, item: Item & Key): Promise<void>;
  /** The twin's fault injection (undefined on DynamoDB Local). */
  memory?: MemoryStores;
}

function testClock(iso = '2030-01-15T12:00:00.000Z') {
  let t = Date.parse(iso);
  return { now: () => t, set: (at: string) => { t = Date.parse(at); } };
}

export async function onDynamo(): Promise<Implementation> {
  const { deps: stack } = await testStack();
  const clock = testClock();
  const deps = { ...stack, now: clock.now };
  return {
    deps, clock,
    read: async (table, key) => (await deps.doc.send(new GetCommand({ TableName: deps.tables[table], Key: { pk: key.pk, sk: key.sk }, ConsistentRead: true }))).Item,
    given: async (table, item) => { await deps.doc.send(new PutCommand({ TableName: deps.tables[table], Item: item })); },
  };
}

export async function inMemory(): Promise<Implementation> {
  const memory = memoryStores();
  const { organizations, clients, workOrders } = memory;
  const id = (k: Key) => `${k.pk}\u0000${k.sk}`;
  const maps = { organizations: organizations.items, clients: clients.items, workOrders: workOrders.items };
  return {
    deps: memory.deps,
    clock: memory.clock,
    memory,
    read: async (table, key) => { const item = maps[table].get(id(key)); return item && structuredClone(item); },
    given: async (table, item) => { maps[table].set(id(item), structuredClone(item)); },
  };
}

/** For describe.each: each implementation by name. */
export const implementations: [string, () => Promise<Implementation>][] = [['DynamoDB Local', onDynamo], ['the in-memory twin', inMemory]];
