/** CRM-side records (clients, work orders, invoices, bookings): written here to produce every event by hand. */
import type { Command } from 'commander';
import {
  createBooking, createClient, createInvoice, createWorkOrder, deleteClient, deleteWorkOrder, recordPayment, sendInvoice, setWorkOrderStatus, updateClient,
} from '../../../functions/core/crm/entities.js';
import { WORK_ORDER_STATUSES } from '../../../functions/core/platform/crm-fields.js';
import { CliError, printResult, safeText } from '../output.js';
import { act } from '../run.js';

type Item = Record<string, unknown>;
const show = (json: boolean, what: string, item: Item) => {
  const { pk: _pk, sk: _sk, entity: _e, ...rest } = item;
  printResult({ json }, rest, () => console.log(safeText(`${what} ${String(rest.id)}: ${JSON.stringify(rest)}`)));
};
const cents = (flag: string, value: string) => {
  if (!/^\d+(\.\d{1,2})?$/.test(value)) throw new CliError(`${flag} must be an amount like 185 or 185.50, got "${value}"`, 2);
  return Math.round(Number(value) * 100);
};

export function register(program: Command): void {
  const clients = program.command('clients').description('CRM clients (their changes emit client.* events)');
  clients.command('create').description('create a client')
    .requiredOption('--org <id>', 'organization id').requiredOption('--name <name>', 'full name')
    .option('--email <email>').option('--phone <phone>').option('--status <status>', 'client status', 'active')
    .action(act<{ org: string; name: string; email?: string; phone?: string; status: string }>(async ({ target, options, json }) =>
      show(json, 'Created client', await createClient(target.deps, options.org, { name: options.name, email: options.email, phone: options.phone }, options.status))));
  clients.command('update').description('change a client’s fields')
    .requiredOption('--org <id>', 'organization id').requiredOption('--client <id>', 'client id')
    .option('--status <status>').option('--email <email>').option('--phone <phone>').option('--notes <text>')
    .action(act<{ org: string; client: string; status?: string; email?: string; phone?: string; notes?: string }>(async ({ target, options, json }) =>
      show(json, 'Updated client', await updateClient(target.deps, options.org, options.client, { status: options.status, email: options.email, phone: options.phone, notes: options.notes }))));
  clients.command('delete').description('delete a client')
    .requiredOption('--org <id>', 'organization id').requiredOption('--client <id>', 'client id')
    .action(act<{ org: string; client: string }>(async ({ target, options, json }) => show(json, 'Deleted client', await deleteClient(target.deps, options.org, options.client))));

  const workOrders = program.command('work-orders').description('work orders (work_order.* events)');
  workOrders.command('create').description('create a work order (status scheduled)')
    .requiredOption('--org <id>', 'organization id').requiredOption('--title <text>', 'what is to be done')
    .option('--client <id>', 'client id').option('--scheduled-for <iso>', 'when')
    .action(act<{ org: string; title: string; client?: string; scheduledFor?: string }>(async ({ target, options, json }) =>
      show(json, 'Created work order', await createWorkOrder(target.deps, options.org, { title: options.title, clientId: options.client, scheduledFor: options.scheduledFor }))));
  workOrders.command('set-status').description(`move a work order to ${WORK_ORDER_STATUSES.join(' | ')}`)
    .requiredOption('--org <id>', 'organization id').requiredOption('--work-order <id>', 'work order id').requiredOption('--status <status>', WORK_ORDER_STATUSES.join(' | '))
    .action(act<{ org: string; workOrder: string; status: string }>(async ({ target, options, json }) =>
      show(json, 'Updated work order', await setWorkOrderStatus(target.deps, options.org, options.workOrder, options.status))));
  workOrders.command('delete').description('delete a work order')
    .requiredOption('--org <id>', 'organization id').requiredOption('--work-order <id>', 'work order id')
    .action(act<{ org: string; workOrder: string }>(async ({ target, options, json }) => show(json, 'Deleted work order', await deleteWorkOrder(target.deps, options.org, options.workOrder))));

  const invoices = program.command('invoices').description('invoices (invoice.* events)');
  invoices.command('create').description('create an invoice')
    .requiredOption('--org <id>', 'organization id').requiredOption('--amount <amount>', 'total, e.g. 185.50')
    .option('--currency <code>', 'ISO 4217', 'USD').option('--work-order <id>').option('--client <id>').option('--sent', 'mark it sent now')
    .action(act<{ org: string; amount: string; currency: string; workOrder?: string; client?: string; sent?: boolean }>(async ({ target, options, json }) =>
      show(json, 'Created invoice', await createInvoice(target.deps, options.org, { amountCents: cents('--amount', options.amount), currency: options.currency, workOrderId: options.workOrder, clientId: options.client, sent: options.sent }))));
  invoices.command('send').description('mark an invoice sent')
    .requiredOption('--org <id>', 'organization id').requiredOption('--invoice <id>', 'invoice id')
    .action(act<{ org: string; invoice: string }>(async ({ target, options, json }) => show(json, 'Sent invoice', await sendInvoice(target.deps, options.org, options.invoice))));
  invoices.command('pay').description('record a payment on an invoice')
    .requiredOption('--org <id>', 'organization id').requiredOption('--invoice <id>', 'invoice id').requiredOption('--amount <amount>', 'amount paid, e.g. 185.50')
    .action(act<{ org: string; invoice: string; amount: string }>(async ({ target, options, json }) =>
      show(json, 'Recorded payment on invoice', await recordPayment(target.deps, options.org, options.invoice, cents('--amount', options.amount)))));

  const bookings = program.command('bookings').description('bookings (booking.received)');
  bookings.command('create').description('record a booking')
    .requiredOption('--org <id>', 'organization id').requiredOption('--starts-at <iso>', 'start time')
    .option('--service <text>').option('--client <id>').option('--notes <text>')
    .action(act<{ org: string; startsAt: string; service?: string; client?: string; notes?: string }>(async ({ target, options, json }) =>
      show(json, 'Created booking', await createBooking(target.deps, options.org, { startsAt: options.startsAt, service: options.service, clientId: options.client, notes: options.notes }))));
}
