/**
 * Leads and DynamoDB faults an emulator cannot produce (docs/decisions.md#lead-write-cost-what-a-lead-writes-and-what-is-atomic),
 * injected with aws-sdk-client-mock while every other call reaches DynamoDB Local: a prepaid debit
 * meeting the day roll-over's transaction (`TransactionConflictException`, which the SDK does not
 * retry), a client write failing after its debit (refunded), a refund that fails too, a put or a bill whose
 * answer was lost. Also: the day's usage rolls over without losing a debit, and no lead makes a
 * transaction. The same behaviours without HTTP or SDK-level faults (a refund into the closed day, a
 * refund that fails, a merge that fails after its debit, the older organization's index moved) run
 * on the in-memory stores (test/unit/intake/billing.test.ts) and the wallet store's contract
 * (test/integration/stores/wallet-store.contract.test.ts).
 */
import { describe, it, expect, jest } from '@jest/globals';
import { mockClient } from 'aws-sdk-client-mock';
import { PutCommand, TransactWriteCommand, UpdateCommand, type PutCommandInput, type TransactWriteCommandInput, type UpdateCommandInput } from '@aws-sdk/lib-dynamodb';
import type { APIGatewayProxyEvent } from 'aws-lambda';
import { itemsOf, newTenant, ownDeps, testStack, type Tenant } from '../support/stack.js';
import type { Deps } from '../../../functions/core/platform/deps.js';
import { httpAdapter } from '../../../functions/adapters/http-adapter.js';
import { handleLeadRequest as leadIntake } from '../../../functions/core/intake/handle-lead-request.js';
import { createLead } from '../../../functions/core/intake/create-lead.js';
import { parseLead } from '../../../functions/core/intake/lead-schema.js';
import { dailyUsage, getOrganization, requireOrganization, setDuplicatePolicy } from '../../../functions/core/tenancy/organizations.js';
import { keys } from '../../../functions/core/platform/model.js';
import { submissionGuard } from '../../../functions/core/intake/duplicates.js';
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { lambdaContext } from '../../../lib/local/lambda-context.js';
import { listRequests } from '../../../functions/core/settings/request-log-read.js';
import { logger, metrics } from '../../../functions/core/platform/observability.js';

const conflict = () => Object.assign(new Error('Transaction is ongoing for the item'), { name: 'TransactionConflictException', $metadata: {} });
const failure = () => Object.assign(new Error('injected'), { name: 'InternalServerError', $metadata: {} });

type Fault = 'debit' | 'refund' | 'clientPut';
/** Which write an UpdateItem or PutItem is: the organization item's debit or refund, or a client put. */
function faultOf(command: 'update' | 'put', input: { TableName?: string; UpdateExpression?: string }, deps: Deps): Fault | undefined {
  if (command === 'put') return input.TableName === deps.tables.clients ? 'clientPut' : undefined;
  if (input.TableName !== deps.tables.organizations) return undefined;
  if (input.UpdateExpression?.startsWith('SET walletMicros = walletMicros - ')) return 'debit';
  if (input.UpdateExpression?.startsWith('SET walletMicros = walletMicros + ') || input.UpdateExpression?.startsWith('ADD calls :minusOne')) return 'refund';
  return undefined;
}

/**
 * Deps on their own document client: the first `times` writes of kind `fault` throw `error()`, the
 * rest (and every other call) reach DynamoDB Local. `seen(kind)` counts the writes of a kind sent.
 */
async function faultyDeps(faults: Partial<Record<Fault, { times: number; error: () => Error }>>): Promise<{ deps: Deps; seen: (kind: Fault | 'transaction') => number }> {
  const base = await ownDeps();
  const { doc } = base;
  const realSend = doc.send.bind(doc) as (command: unknown) => Promise<unknown>;
  const mock = mockClient(doc);
  mock.send.callThrough(); // every other command goes to DynamoDB Local
  const counts: Record<string, number> = {};
  const through = (command: 'update' | 'put', make: () => unknown, input: { TableName?: string; UpdateExpression?: string }) => {
    const kind = faultOf(command, input, base);
    if (kind) counts[kind] = (counts[kind] ?? 0) + 1;
    const fault = kind && faults[kind];
    if (fault && counts[kind] <= fault.times) throw fault.error();
    return realSend(make());
  };
  mock.on(UpdateCommand).callsFake(async (input: UpdateCommandInput) => through('update', () => new UpdateCommand(input), input));
  mock.on(PutCommand).callsFake(async (input: PutCommandInput) => through('put', () => new PutCommand(input), input));
  mock.on(TransactWriteCommand).callsFake(async (input: TransactWriteCommandInput) => {
    counts.transaction = (counts.transaction ?? 0) + 1;
    return realSend(new TransactWriteCommand(input));
  });
  return { deps: { ...base, doc }, seen: (kind) => counts[kind] ?? 0 };
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

describe('a prepaid lead whose debit conflicts with the day roll-over', () => {
  it('is retried: 201, one client, the wallet debited once, each retry counted', async () => {
    const t = await newTenant({ billing: 'prepaid', walletMicros: 10_000 });
    const { deps, seen } = await faultyDeps({ debit: { times: 3, error: conflict } });
    const handler = httpAdapter(leadIntake, { deps: async () => deps });
    const added = jest.spyOn(metrics, 'addMetric');
    const res = await handler(postEvent(t, { name: 'Contended Lead' }), lambdaContext('leadIntake'));
    expect(added.mock.calls.filter(([name]) => name === 'TransactionConflictRetries')).toHaveLength(3);
    added.mockRestore();
    expect(res.statusCode).toBe(201);
    expect(seen('debit')).toBe(5); // 3 refused, then one that finds no day open (a new organization), then through
    const clients = await itemsOf('clients', t.organizationId);
    expect(clients.filter((c) => c.first_name === 'Contended')).toHaveLength(1);
    expect((await getOrganization(deps, t.organizationId))?.walletMicros).toBe(7_000);
    expect((await dailyUsage(deps, t.organizationId, today())).calls).toBe(1);
  });

  it('gives up after a bounded number of attempts with 503 and Retry-After, writing nothing', async () => {
    const t = await newTenant({ billing: 'prepaid', walletMicros: 10_000 });
    const { deps, seen } = await faultyDeps({ debit: { times: Infinity, error: conflict } });
    const handler = httpAdapter(leadIntake, { deps: async () => deps });
    const res = await handler(postEvent(t, { name: 'Never Through' }), lambdaContext('leadIntake'));
    expect(res.statusCode).toBe(503);
    expect(res.headers?.['Retry-After']).toBe('1');
    expect(seen('debit')).toBeLessThanOrEqual(10);
    expect(await itemsOf('clients', t.organizationId)).toEqual([]);
    expect((await getOrganization(deps, t.organizationId))?.walletMicros).toBe(10_000);
    expect((await dailyUsage(deps, t.organizationId, today())).calls).toBe(0);
  });
});

describe('a prepaid lead whose client write fails after its debit', () => {
  it('is refunded: 500, no client, the wallet and the day’s count given back; the caller’s retry creates it and is billed once', async () => {
    const t = await newTenant({ billing: 'prepaid', walletMicros: 10_000 });
    const { deps, seen } = await faultyDeps({ clientPut: { times: 1, error: failure } });
    const handler = httpAdapter(leadIntake, { deps: async () => deps });
    const body = { name: 'Refunded Lead', email: 'refunded@example.com' };
    const event = postEvent(t, body);
    const res = await handler(event, lambdaContext('leadIntake'));
    expect(res.statusCode).toBe(500);
    expect(seen('debit')).toBe(2); // the first finds no day open (a new organization)
    expect(seen('refund')).toBe(1);
    expect(await itemsOf('clients', t.organizationId)).toEqual([]);
    // No client holds its row: the request log has its own, a 500 (docs/settings.md "Request log").
    expect(await listRequests(deps, t.organizationId)).toEqual([expect.objectContaining({ requestId: event.requestContext.requestId, status: 500 })]);
    expect((await getOrganization(deps, t.organizationId))?.walletMicros).toBe(10_000);
    expect(await dailyUsage(deps, t.organizationId, today())).toEqual({ calls: 0, billedMicros: 0 });
    // Within 10 minutes: the guard names a client never written, so the retry is created, not a duplicate.
    const retryEvent = postEvent(t, body);
    const retry = await handler(retryEvent, lambdaContext('leadIntake'));
    expect(retry.statusCode).toBe(201);
    expect(await itemsOf('clients', t.organizationId, 'CLIENT#')).toHaveLength(1);
    // The retry's row is its client; the failed call's stays.
    expect((await listRequests(deps, t.organizationId)).map((r) => [r.requestId, r.status, r.clientId])).toEqual([
      [retryEvent.requestContext.requestId, 201, JSON.parse(retry.body).id], [event.requestContext.requestId, 500, undefined],
    ]);
    expect((await itemsOf('requestLog', t.organizationId, 'REQUEST#')).map((r) => r.requestId)).toEqual([event.requestContext.requestId]);
    expect((await getOrganization(deps, t.organizationId))?.walletMicros).toBe(7_000);
    expect(await dailyUsage(deps, t.organizationId, today())).toEqual({ calls: 1, billedMicros: 3_000 });
  });




});

describe.each([['postpaid', {}, 0], ['prepaid', { billing: 'prepaid' as const, walletMicros: 10_000 }, 3_000]])('a %s lead whose request died between its bill and its client write', (_billing, options, price) => {
  it('is written under the id its bill claimed by the caller\'s identical retry, not billed again: one client, billed once', async () => {
    const t = await newTenant(options);
    // The put fails and the refund never lands: the state a function that died after its bill leaves.
    const { deps, seen } = await faultyDeps({ clientPut: { times: 1, error: () => new Error('the process died') }, refund: { times: 1, error: failure } });
    const handler = httpAdapter(leadIntake, { deps: async () => deps });
    const body = { name: 'Died Midway', email: 'died.midway@example.com' };
    expect((await handler(postEvent(t, body), lambdaContext('leadIntake'))).statusCode).toBe(500);
    expect(seen('refund')).toBe(1);
    expect(await dailyUsage(deps, t.organizationId, today())).toEqual({ calls: 1, billedMicros: price });
    const guardItem = price ? keys.org(t.organizationId) : keys.usage(t.organizationId, today());
    const { slot } = submissionGuard(t.keyId, parseLead(body));
    const { Item: claimed } = await deps.doc.send(new GetCommand({ TableName: deps.tables.organizations, Key: guardItem }));

    const retryEvent = postEvent(t, body);
    const retry = await handler(retryEvent, lambdaContext('leadIntake'));
    expect(retry.statusCode).toBe(201);
    expect(JSON.parse(retry.body).id).toBe(claimed?.[`dc${slot}`]);
    const adopted = await itemsOf('clients', t.organizationId, 'CLIENT#');
    expect(adopted.map((c) => c.id)).toEqual([claimed?.[`dc${slot}`]]);
    // The adopted client carries the retry's request and is its row: no REQUEST# item for it, the first call's 500 kept.
    expect(adopted[0]).toMatchObject({ request_id: retryEvent.requestContext.requestId, key_id: t.keyId });
    expect((await itemsOf('requestLog', t.organizationId, 'REQUEST#')).map((r) => [r.requestId, r.status])).toEqual([[expect.not.stringMatching(retryEvent.requestContext.requestId), 500]]);
    // The client's id keeps the first request's time, its row's place (docs/settings.md "Request log"): below that request's 500, showing the retry's created_at.
    const rows = await listRequests(deps, t.organizationId);
    expect(rows.map((r) => [r.requestId, r.status, r.clientId])).toEqual([
      [expect.any(String), 500, undefined], [retryEvent.requestContext.requestId, 201, adopted[0].id],
    ]);
    expect(rows[1].at >= rows[0].at).toBe(true);
    expect(await dailyUsage(deps, t.organizationId, today())).toEqual({ calls: 1, billedMicros: price });
    if (price) expect((await getOrganization(deps, t.organizationId))?.walletMicros).toBe(10_000 - price);
    // A third identical submission is the double-submit of that client, billed as a call.
    const third = await handler(postEvent(t, body), lambdaContext('leadIntake'));
    expect([third.statusCode, JSON.parse(third.body)]).toEqual([200, expect.objectContaining({ id: claimed?.[`dc${slot}`], duplicate: true })]);
    expect(await dailyUsage(deps, t.organizationId, today())).toEqual({ calls: 2, billedMicros: 2 * price });
  });
});

describe('a prepaid lead whose request died after its debit, retried twice at once', () => {
  it('is written once: one retry adopts the debit (201), the other is its double-submit (200, billed)', async () => {
    const t = await newTenant({ billing: 'prepaid', walletMicros: 10_000 });
    const { deps } = await faultyDeps({ clientPut: { times: 1, error: () => new Error('the process died') }, refund: { times: 1, error: failure } });
    const handler = httpAdapter(leadIntake, { deps: async () => deps });
    const body = { name: 'Twice Retried', email: 'twice.retried@example.com' };
    expect((await handler(postEvent(t, body), lambdaContext('leadIntake'))).statusCode).toBe(500);
    const retries = await Promise.all([1, 2].map(() => handler(postEvent(t, body), lambdaContext('leadIntake'))));
    expect(retries.map((r) => r.statusCode).sort()).toEqual([200, 201]);
    const clients = await itemsOf('clients', t.organizationId, 'CLIENT#');
    expect(clients).toHaveLength(1);
    expect(new Set(retries.map((r) => JSON.parse(r.body).id))).toEqual(new Set([clients[0].id]));
    expect((await getOrganization(deps, t.organizationId))?.walletMicros).toBe(10_000 - 2 * 3_000);
    expect(await dailyUsage(deps, t.organizationId, today())).toEqual({ calls: 2, billedMicros: 6_000 });
  });
});

describe('a prepaid refund', () => {
  it('credits the wallet once when its answer was lost and the SDK retried it', async () => {
    const t = await newTenant({ billing: 'prepaid', walletMicros: 10_000 });
    const { deps: plain } = await testStack();
    const { doc } = await ownDeps();
    let credits = 0;
    doc.middlewareStack.add((next, context) => async (args) => {
      if (context.commandName === 'PutItemCommand' && (args.input as { TableName?: string }).TableName === plain.tables.clients) throw failure();
      return next(args);
    }, { step: 'initialize', name: 'failClientPut' });
    // Below the retry middleware: the refund commits, then the SDK sees a transient network error and retries it.
    doc.middlewareStack.add((next, context) => async (args) => {
      if (context.commandName !== 'UpdateItemCommand' || !(args.input as { UpdateExpression?: string }).UpdateExpression?.startsWith('SET walletMicros = walletMicros + ')) return next(args);
      credits += 1;
      const answer = await next(args);
      if (credits === 1) throw Object.assign(new Error('socket hang up'), { name: 'Error', code: 'ECONNRESET', $metadata: {} });
      return answer;
    }, { step: 'deserialize', name: 'loseFirstCreditAnswer' });
    const handler = httpAdapter(leadIntake, { deps: async () => ({ ...plain, doc }) });
    const added = jest.spyOn(metrics, 'addMetric');
    const body = { name: 'Lost Credit', email: 'lost.credit@example.com' };
    const res = await handler(postEvent(t, body), lambdaContext('leadIntake'));
    const failures = added.mock.calls.filter(([name]) => name === 'LeadRefundFailed');
    added.mockRestore();
    expect(res.statusCode).toBe(500);
    expect(credits).toBe(2);
    expect(failures).toEqual([]);
    expect((await getOrganization(plain, t.organizationId))?.walletMicros).toBe(10_000);
    expect(await dailyUsage(plain, t.organizationId, today())).toEqual({ calls: 0, billedMicros: 0 });
    // The refund gave the guard slot back: the caller's retry is a new lead, billed once.
    expect((await httpAdapter(leadIntake, { deps: async () => plain })(postEvent(t, body), lambdaContext('leadIntake'))).statusCode).toBe(201);
    expect((await getOrganization(plain, t.organizationId))?.walletMicros).toBe(7_000);
  });

  it('across the day\'s roll-over whose usage take-back fails: the wallet credited once, only the usage count logged and counted as owed', async () => {
    const { deps: plain } = await testStack();
    const t = await newTenant({ billing: 'prepaid', walletMicros: 100_000 });
    const org = await requireOrganization(plain, t.organizationId);
    const auth = { organization: org, key: { keyId: t.keyId, name: 'test' } };
    const at = (d: Deps, iso: string) => ({ ...d, now: () => Date.parse(iso) });
    await createLead(at(plain, '2030-04-01T23:59:50Z'), auth, parseLead({ name: 'Early Lead' }), { requestId: 'r0' });
    const { deps } = await faultyDeps({});
    deps.doc.middlewareStack.add((next, context) => async (args) => {
      const input = args.input as { Item?: { first_name?: string }; UpdateExpression?: string };
      if (context.commandName === 'PutItemCommand' && input.Item?.first_name === 'Late') {
        await createLead(at(plain, '2030-04-02T00:00:01Z'), auth, parseLead({ name: 'Next Day' }), { requestId: 'r2' });
        throw failure();
      }
      if (context.commandName === 'UpdateItemCommand' && input.UpdateExpression === 'ADD calls :minusOne, billed_micros :minusPrice') throw failure();
      return next(args);
    }, { step: 'initialize', name: 'rollThenFail' });
    const added = jest.spyOn(metrics, 'addMetric');
    const logged = jest.spyOn(logger, 'error');
    await expect(createLead(at(deps, '2030-04-01T23:59:59Z'), auth, parseLead({ name: 'Late Lead' }), { requestId: 'r1' })).rejects.toThrow('injected');
    const counted = added.mock.calls.map(([name]) => name).filter((name) => name.startsWith('Lead'));
    const lines = logged.mock.calls.map(([message, extra]) => [message, extra]);
    added.mockRestore();
    logged.mockRestore();
    expect(counted).toEqual(['LeadUsageCountFailed']);
    expect(lines).toEqual([["refunded a lead's debit but not its usage count", expect.objectContaining({ day: '2030-04-01', calls: 1, micros: 3_000 })]]);
    expect((await getOrganization(plain, t.organizationId))?.walletMicros).toBe(100_000 - 2 * 3_000);
    expect(await dailyUsage(plain, t.organizationId, '2030-04-01')).toEqual({ calls: 2, billedMicros: 6_000 }); // the take-back still owed
  });
});

describe('two identical merge submissions at the same millisecond', () => {
  it('are one merge and one double-submit, each billed: neither takes the other\'s guard record for its own', async () => {
    const { deps: plain } = await testStack();
    const t = await newTenant({ billing: 'prepaid', walletMicros: 100_000 });
    await setDuplicatePolicy(plain, t.organizationId, 'merge');
    const auth = { organization: await requireOrganization(plain, t.organizationId), key: { keyId: t.keyId, name: 'test' } };
    await createLead(plain, auth, parseLead({ name: 'Twin Merge', email: 'twin@example.com' }), { requestId: 'r0' });
    const instant = Date.now();
    const pinned = { ...plain, now: () => instant };
    const body = parseLead({ name: 'Twin Merge', email: 'twin@example.com', notes: 'twice' });
    const outcomes = await Promise.all(['r1', 'r2'].map((requestId) => createLead(pinned, auth, body, { requestId })));
    expect(outcomes.map((o) => o.kind).sort()).toEqual(['duplicate', 'merged']);
    const [client] = await itemsOf('clients', t.organizationId, 'CLIENT#');
    expect(client.submission_count).toBe(2);
    expect((await getOrganization(plain, t.organizationId))?.walletMicros).toBe(100_000 - 3 * 3_000);
  });
});

describe.each([['postpaid', {}], ['prepaid', { billing: 'prepaid' as const, walletMicros: 10_000 }]])('a %s lead whose write committed but whose answer was lost', (billing, options) => {
  it('is a 201 with one client when the SDK retry meets its own write, and an Idempotency-Key replay returns it', async () => {
    const t = await newTenant(options);
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
    const { deps: plain } = await testStack();
    expect(await dailyUsage(plain, t.organizationId, today())).toEqual({ calls: 1, billedMicros: billing === 'prepaid' ? 3_000 : 0 });
  });
});

describe.each([['postpaid', {}, 0], ['prepaid', { billing: 'prepaid' as const, walletMicros: 10_000 }, 3_000]])('a %s lead whose bill committed but whose answer was lost', (_billing, options, price) => {
  it('is billed once: the SDK’s retry meets its own guard record and the lead goes on (201, one client)', async () => {
    const t = await newTenant(options);
    const { deps: plain } = await testStack();
    const { doc } = await ownDeps();
    let bills = 0;
    // Below the retry middleware: the SDK sees a transient network error after the bill committed, and retries it.
    doc.middlewareStack.add((next, context) => async (args) => {
      const input = args.input as { TableName?: string; ConditionExpression?: string };
      if (context.commandName !== 'UpdateItemCommand' || input.TableName !== plain.tables.organizations || !input.ConditionExpression?.includes('dh')) return next(args);
      bills += 1;
      const answer = await next(args);
      if (bills === 1) throw Object.assign(new Error('socket hang up'), { name: 'Error', code: 'ECONNRESET', $metadata: {} });
      return answer;
    }, { step: 'deserialize', name: 'loseFirstBillAnswer' });
    const handler = httpAdapter(leadIntake, { deps: async () => ({ ...plain, doc }) });
    // A prepaid organization's first debit opens its day first: open it, so the lost answer is the lead's debit.
    if (price) expect((await handler(postEvent(t, { name: 'Opening Lead' }), lambdaContext('leadIntake'))).statusCode).toBe(201);
    bills = 0;
    const res = await handler(postEvent(t, { name: 'Lost Bill', email: 'lost.bill@example.com' }), lambdaContext('leadIntake'));
    expect(bills).toBe(2);
    expect(res.statusCode).toBe(201);
    expect((await itemsOf('clients', t.organizationId, 'CLIENT#')).filter((c) => c.first_name === 'Lost')).toHaveLength(1);
    const leads = price ? 2 : 1;
    expect(await dailyUsage(plain, t.organizationId, today())).toEqual({ calls: leads, billedMicros: leads * price });
    if (price) expect((await getOrganization(plain, t.organizationId))?.walletMicros).toBe(10_000 - 2 * price);
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


  it.each([['postpaid', {}, 0], ['prepaid', { billing: 'prepaid' as const, walletMicros: 10_000 }, 3_000]])('count a %s lead without a transaction (once its day is open)', async (_billing, options, billedMicros) => {
    const { deps } = await testStack();
    const t = await newTenant(options);
    const { deps: watched, seen } = await faultyDeps({});
    const handler = httpAdapter(leadIntake, { deps: async () => watched });
    expect((await handler(postEvent(t, { name: 'First Lead' }), lambdaContext('leadIntake'))).statusCode).toBe(201);
    const opening = seen('transaction'); // prepaid: the first lead of a day opens it
    expect((await handler(postEvent(t, { name: 'Second Lead' }), lambdaContext('leadIntake'))).statusCode).toBe(201);
    expect(seen('transaction')).toBe(opening);
    expect(opening).toBeLessThanOrEqual(1);
    expect(await dailyUsage(deps, t.organizationId, today())).toEqual({ calls: 2, billedMicros: 2 * billedMicros });
  });
});
