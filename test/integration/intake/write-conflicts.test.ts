/**
 * Leads and DynamoDB's transaction conflicts (docs/decisions.md#lead-write-cost-what-a-lead-writes-and-what-is-atomic). On AWS, overlapping
 * transactions on one item (the organization's wallet) are cancelled with `TransactionConflict`,
 * which the SDK does not retry; DynamoDB Local serializes transactions and never does it. So the
 * cancellation is injected with aws-sdk-client-mock and every other call reaches DynamoDB Local.
 * Also: the day's usage rolls over without losing a debit, and a postpaid lead is counted.
 */
import { describe, it, expect, jest } from '@jest/globals';
import { mockClient } from 'aws-sdk-client-mock';
import { TransactionCanceledException } from '@aws-sdk/client-dynamodb';
import { TransactWriteCommand, type TransactWriteCommandInput } from '@aws-sdk/lib-dynamodb';
import type { APIGatewayProxyEvent } from 'aws-lambda';
import { itemsOf, newTenant, ownDeps, testStack, type Tenant } from '../support/stack.js';
import type { Deps } from '../../../functions/core/platform/deps.js';
import { httpAdapter } from '../../../functions/adapters/http-adapter.js';
import { handleLeadRequest as leadIntake } from '../../../functions/core/intake/handle-lead-request.js';
import { createLead } from '../../../functions/core/intake/create-lead.js';
import { parseLead } from '../../../functions/core/intake/lead-schema.js';
import { dailyUsage, getOrganization, listOrganizations, requireOrganization } from '../../../functions/core/tenancy/organizations.js';
import { keys } from '../../../functions/core/platform/model.js';
import { DeleteCommand, GetCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { lambdaContext } from '../../../lib/local/lambda-context.js';
import { metrics } from '../../../functions/core/platform/observability.js';

const conflict = () => new TransactionCanceledException({
  message: 'Transaction cancelled, please refer cancellation reasons for specific reasons [None, TransactionConflict]',
  $metadata: {},
  CancellationReasons: [{ Code: 'None' }, { Code: 'TransactionConflict', Message: 'Transaction is ongoing for the item' }],
});

/** Deps on their own document client whose first `failures` TransactWriteItems are cancelled. */
async function conflictingDeps(failures: number): Promise<{ deps: Deps; transactions: () => number }> {
  const base = await ownDeps();
  const { doc } = base;
  const realSend = doc.send.bind(doc) as (command: TransactWriteCommand) => Promise<unknown>;
  const mock = mockClient(doc);
  mock.send.callThrough(); // every other command goes to DynamoDB Local
  let calls = 0;
  mock.on(TransactWriteCommand).callsFake(async (input: TransactWriteCommandInput) => {
    calls += 1;
    if (calls <= failures) throw conflict();
    return realSend(new TransactWriteCommand(input));
  });
  return { deps: { ...base, doc }, transactions: () => calls };
}

/**
 * Deps whose first client PutItem reaches DynamoDB Local and commits, but whose answer is replaced
 * by a connection reset: the SDK's own retry then sends the same put again.
 */
async function lostAnswerDeps(): Promise<{ deps: Deps; puts: () => number }> {
  const { info, deps: base } = await testStack();
  const { doc } = await ownDeps();
  let puts = 0;
  // Below the retry middleware (deserialize step), so the SDK sees a transient network error and retries.
  doc.middlewareStack.add((next, context) => async (args) => {
    if (context.commandName !== 'PutItemCommand' || (args.input as { TableName?: string }).TableName !== info.tables.clients) return next(args);
    puts += 1;
    const answer = await next(args);
    if (puts === 1) throw Object.assign(new Error('socket hang up'), { name: 'Error', code: 'ECONNRESET', $metadata: {} });
    return answer;
  }, { step: 'deserialize', name: 'loseFirstAnswer' });
  return { deps: { ...base, doc }, puts: () => puts };
}

function postEvent(t: Tenant, body: unknown): APIGatewayProxyEvent {
  return {
    httpMethod: 'POST', path: '/api/webhook/leads', resource: '/api/webhook/leads',
    headers: { 'Content-Type': 'application/json', 'X-API-Key': t.key }, body: JSON.stringify(body),
    requestContext: { requestId: `req-${Math.random()}`, identity: { sourceIp: '127.0.0.1' } },
  } as unknown as APIGatewayProxyEvent;
}

const today = () => new Date().toISOString().slice(0, 10);

describe('a prepaid lead whose transaction conflicts', () => {
  it('is retried: 201, one client, the wallet debited once, each retry counted', async () => {
    const t = await newTenant({ billing: 'prepaid', walletMicros: 10_000 });
    const { deps, transactions } = await conflictingDeps(3);
    const handler = httpAdapter(leadIntake, { deps: async () => deps });
    const added = jest.spyOn(metrics, 'addMetric');
    const res = await handler(postEvent(t, { name: 'Contended Lead' }), lambdaContext('leadIntake'));
    expect(added.mock.calls.filter(([name]) => name === 'TransactionConflictRetries')).toHaveLength(3);
    added.mockRestore();
    expect(res.statusCode).toBe(201);
    expect(transactions()).toBeGreaterThanOrEqual(4); // 3 cancelled, then through
    const clients = await itemsOf('clients', t.organizationId);
    expect(clients.filter((c) => c.first_name === 'Contended')).toHaveLength(1);
    expect((await getOrganization(deps, t.organizationId))?.walletMicros).toBe(7_000);
    expect((await dailyUsage(deps, t.organizationId, today())).calls).toBe(1);
  });

  it('gives up after a bounded number of attempts with 503 and Retry-After, writing nothing', async () => {
    const t = await newTenant({ billing: 'prepaid', walletMicros: 10_000 });
    const { deps, transactions } = await conflictingDeps(Infinity);
    const handler = httpAdapter(leadIntake, { deps: async () => deps });
    const res = await handler(postEvent(t, { name: 'Never Through' }), lambdaContext('leadIntake'));
    expect(res.statusCode).toBe(503);
    expect(res.headers?.['Retry-After']).toBe('1');
    expect(transactions()).toBeLessThanOrEqual(10);
    expect(await itemsOf('clients', t.organizationId)).toEqual([]);
    expect((await getOrganization(deps, t.organizationId))?.walletMicros).toBe(10_000);
  });
});

describe('a postpaid lead whose write committed but whose answer was lost', () => {
  it('is a 201 with one client when the SDK retry meets its own write, and an Idempotency-Key replay returns it', async () => {
    const t = await newTenant();
    const { deps, puts } = await lostAnswerDeps();
    const handler = httpAdapter(leadIntake, { deps: async () => deps });
    const event = postEvent(t, { name: 'Lost Answer' });
    event.headers['Idempotency-Key'] = `lost-${Date.now()}`;
    const res = await handler(event, lambdaContext('leadIntake'));
    expect(puts()).toBe(2); // the write and the SDK's retry of it
    expect(res.statusCode).toBe(201);
    const again = await handler({ ...event, requestContext: { ...event.requestContext, requestId: 'req-again' } }, lambdaContext('leadIntake'));
    expect(again.statusCode).toBe(201);
    expect(JSON.parse(again.body).id).toBe(JSON.parse(res.body).id);
    expect((await itemsOf('clients', t.organizationId)).filter((c) => c.first_name === 'Lost')).toHaveLength(1);
  });
});

describe('usage counters', () => {
  it('close a prepaid day into its usage item when the next day’s first lead arrives', async () => {
    const { deps } = await testStack();
    const t = await newTenant({ billing: 'prepaid', walletMicros: 100_000 });
    const org = await requireOrganization(deps, t.organizationId);
    const auth = { organization: org, key: { keyId: t.keyId, name: 'test' } };
    const at = (iso: string) => ({ ...deps, now: () => Date.parse(iso) });
    // Five different leads: the same one again within 10 minutes would be a double-submit (docs/leads.md).
    const lead = (n: number) => parseLead({ name: 'Day Lead', notes: `lead ${n}` });
    await createLead(at('2030-01-01T23:59:58Z'), auth, lead(1), { requestId: 'r1' });
    await createLead(at('2030-01-01T23:59:59Z'), auth, lead(2), { requestId: 'r2' });
    await Promise.all([1, 2, 3].map((i) => createLead(at(`2030-01-02T00:00:0${i}Z`), auth, lead(i + 2), { requestId: `r${i + 2}` })));
    expect(await dailyUsage(deps, t.organizationId, '2030-01-01')).toEqual({ calls: 2, billedMicros: 6_000 });
    expect(await dailyUsage(deps, t.organizationId, '2030-01-02')).toEqual({ calls: 3, billedMicros: 9_000 });
    expect((await getOrganization(deps, t.organizationId))?.walletMicros).toBe(100_000 - 5 * 3_000);
    expect(await itemsOf('clients', t.organizationId)).toHaveLength(5);
  });

  it('move an older organization’s index keys off its item, so later debits write no index', async () => {
    const { deps } = await testStack();
    const t = await newTenant({ billing: 'prepaid', walletMicros: 100_000 });
    const org = await requireOrganization(deps, t.organizationId);
    // The shape organizations had before the ORGINDEX item.
    await deps.doc.send(new DeleteCommand({ TableName: deps.tables.organizations, Key: keys.orgIndexItem(org.id) }));
    await deps.doc.send(new UpdateCommand({ TableName: deps.tables.organizations, Key: keys.org(org.id), UpdateExpression: 'SET gsi1pk = :p, gsi1sk = :s', ExpressionAttributeValues: { ':p': 'ORGS', ':s': `${org.createdAt}#${org.id}` } }));
    await createLead(deps, { organization: org, key: { keyId: t.keyId, name: 'test' } }, parseLead({ name: 'Migrating Lead' }), { requestId: 'r' });
    const { Item } = await deps.doc.send(new GetCommand({ TableName: deps.tables.organizations, Key: keys.org(org.id), ConsistentRead: true }));
    expect(Item).not.toHaveProperty('gsi1pk');
    expect(Item?.walletMicros).toBe(97_000);
    expect((await listOrganizations(deps)).filter((o) => o.id === org.id)).toHaveLength(1);
  });

  it('count a postpaid lead without a transaction', async () => {
    const { deps } = await testStack();
    const t = await newTenant();
    const { deps: watched, transactions } = await conflictingDeps(Infinity);
    const handler = httpAdapter(leadIntake, { deps: async () => watched });
    expect((await handler(postEvent(t, { name: 'Postpaid Lead' }), lambdaContext('leadIntake'))).statusCode).toBe(201);
    expect(transactions()).toBe(0);
    expect(await dailyUsage(deps, t.organizationId, today())).toEqual({ calls: 1, billedMicros: 0 });
  });
});
