/**
 * Deps for tenancy's scenarios in memory: the keys, rate-window and request-log stores are the
 * twins (test/support/memory-*.ts), on a clock the test moves. Organizations are read through a
 * stand-in document client that answers their GetItem from a map, and the clients table's Query
 * (the request log's lead rows) with nothing: the organizations and clients stores are other
 * stages' (their twins replace this stand-in when they land). Any other SDK call fails the test.
 */
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { defaultConfig, type Config } from '../../functions/core/platform/config.js';
import type { Deps } from '../../functions/core/platform/deps.js';
import type { Organization } from '../../functions/core/platform/model.js';
import { withKeyStore } from '../../functions/core/tenancy/key-store.js';
import { withRateWindowStore } from '../../functions/core/tenancy/rate-window-store.js';
import { withRequestLogStore } from '../../functions/core/tenancy/request-log-store.js';
import { MemoryKeyStore } from './memory-key-store.js';
import { MemoryRateWindowStore } from './memory-rate-window-store.js';
import { MemoryRequestLogStore } from './memory-request-log-store.js';

export interface Tenancy {
  deps: Deps;
  keys: MemoryKeyStore;
  windows: MemoryRateWindowStore;
  log: MemoryRequestLogStore;
  /** The clock: `now.ms` is read by every store and by the domain. */
  now: { ms: number };
  /** An organization the stand-in serves (plan `starter` unless told). */
  givenOrganization(fields?: Partial<Organization>): Organization;
}

const tables = new Proxy({}, { get: (_t, name) => String(name) }) as Deps['tables'];

export function givenTenancy(options: { at?: number; config?: Partial<Config> } = {}): Tenancy {
  const now = { ms: options.at ?? Date.parse('2026-11-26T09:00:00.000Z') };
  const clock = () => now.ms;
  const organizations = new Map<string, Organization>();
  const doc = {
    async send(command: { constructor: { name: string }; input: Record<string, unknown> }) {
      const { input } = command;
      const key = input.Key as { pk?: string; sk?: string } | undefined;
      if (command.constructor.name === 'GetCommand' && input.TableName === 'organizations' && key?.sk === 'ORG') {
        const org = organizations.get(String(key.pk).replace(/^ORG#/, ''));
        return { Item: org && { ...org, pk: key.pk, sk: key.sk } };
      }
      if (command.constructor.name === 'QueryCommand' && input.TableName === 'clients') return { Items: [] };
      throw new Error(`no twin answers ${command.constructor.name} on ${String(input.TableName)}`);
    },
  } as unknown as DynamoDBDocumentClient;
  const keys = new MemoryKeyStore();
  const windows = new MemoryRateWindowStore(clock);
  const log = new MemoryRequestLogStore(clock);
  const base: Deps = {
    dynamodb: undefined as unknown as Deps['dynamodb'], sqs: undefined as unknown as Deps['sqs'], doc, tables,
    queues: {} as Deps['queues'], config: { ...defaultConfig, ...options.config }, now: clock,
  };
  const deps = withRequestLogStore(withRateWindowStore(withKeyStore(base, keys), windows), log);
  let n = 0;
  return {
    deps, keys, windows, log, now,
    givenOrganization(fields = {}) {
      n += 1;
      const org: Organization = { id: `org_${n}`, name: `Org ${n}`, plan: 'starter', billing: 'none', walletMicros: 0, createdAt: new Date(now.ms).toISOString(), ...fields };
      organizations.set(org.id, org);
      return org;
    },
  };
}
