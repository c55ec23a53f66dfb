/**
 * Deps whose organizations, clients and work-orders stores are the in-memory twins, on a clock the
 * test controls: intake, tenancy's billing and the CRM records run without a stack. Anything that
 * would reach DynamoDB or SQS otherwise throws (the SDK clients point nowhere).
 */
import type { Deps } from '../../../functions/core/platform/deps.js';
import { parseConfig, type Config } from '../../../functions/core/platform/config.js';
import { organizationPort } from '../../../functions/core/tenancy/organization-store.js';
import { walletPort } from '../../../functions/core/tenancy/wallet-store.js';
import { clientsPort } from '../../../functions/core/intake/clients-store.js';
import { workOrdersPort } from '../../../functions/core/crm/work-orders-store.js';
import { MemoryOrganizationsTable } from './memory-organizations.js';
import { MemoryClientsStore } from './memory-clients.js';
import { MemoryWorkOrdersStore } from './memory-work-orders.js';
import { recipientPort } from '../../../functions/core/notify/recipient-store.js';
import { memoryRecipientStore } from './memory-recipients.js';

export interface MemoryStores {
  deps: Deps;
  organizations: MemoryOrganizationsTable;
  clients: MemoryClientsStore;
  workOrders: MemoryWorkOrdersStore;
  /** The test's clock: now, and a way to move it. */
  clock: { now: () => number; set(iso: string): void; advance(ms: number): void };
}

const unreachable = new Proxy({}, { get: () => { throw new Error('no SDK client in memory deps: use a store'); } });

export function memoryStores(options: { now?: string; config?: Partial<Config> } = {}): MemoryStores {
  let t = Date.parse(options.now ?? '2030-01-15T12:00:00.000Z');
  const clock = { now: () => t, set: (iso: string) => { t = Date.parse(iso); }, advance: (ms: number) => { t += ms; } };
  const config = parseConfig({ local: true, ...options.config });
  const organizations = new MemoryOrganizationsTable();
  const clients = new MemoryClientsStore();
  const workOrders = new MemoryWorkOrdersStore();
  const bare = {
    dynamodb: unreachable, doc: unreachable, sqs: unreachable,
    tables: new Proxy({}, { get: (_t, name) => `memory-${String(name)}` }), queues: new Proxy({}, { get: (_t, name) => `memory://${String(name)}` }),
    config, now: clock.now,
  } as unknown as Deps;
  let deps = organizationPort.with(bare, organizations.organizations);
  deps = walletPort.with(deps, organizations.wallet);
  deps = clientsPort.with(deps, clients);
  deps = workOrdersPort.with(deps, workOrders);
  deps = recipientPort.with(deps, memoryRecipientStore(organizations.items));
  return { deps, organizations, clients, workOrders, clock };
}
