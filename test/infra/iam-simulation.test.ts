/**
 * Least privilege, proven by simulation: each function role's policies, as prod synthesizes them,
 * evaluated by an offline IAM simulator (@cloud-copilot/iam-simulate) against concrete requests —
 * what each function may do (its topology grants) and what it may not (docs/deploy.md "What gets
 * deployed", docs/decisions.md). Intrinsic functions are resolved to the ARNs CloudFormation would
 * give in one account (support/resolve-arns.ts).
 */
import { describe, it, expect, beforeAll, afterAll } from '@jest/globals';
import { runSimulation } from '@cloud-copilot/iam-simulate';
import type { CfnRole } from 'aws-cdk-lib/aws-iam';
import { stages } from '../../lib/stages.js';
import { functions, queues, tables, type FunctionName, type FunctionSpec, type QueueName, type QueueSpec, type TableAccess, type TableName, type TableSpec } from '../../lib/topology.js';
import { TRAIL_CLIENT_FIELDS } from '../../functions/core/settings/trail-fields.js';
import { REQUEST_LOG_CLIENT_FIELDS } from '../../functions/core/tenancy/request-log-fields.js';
import { RECIPIENT_FIELDS, SUPPRESSION_FIELDS } from '../../functions/core/notify/recipient-fields.js';
import { arnResolver } from './support/resolve-arns.js';
import { synthStage, type Synthesized } from './support/synth.js';

const where = { partition: 'aws', region: stages.prod.region!, account: stages.prod.account! };
const functionNames = Object.keys(functions) as FunctionName[];
const tableNames = Object.keys(tables) as TableName[];
const specOf = (name: FunctionName): FunctionSpec => functions[name];
const tableSpecOf = (name: TableName): TableSpec => tables[name];
const queueSpecs: Record<QueueName, QueueSpec> = queues;

let prod: Synthesized;
let resolver: ReturnType<typeof arnResolver>;
/** Each function's identity policies, resolved. */
const policies = new Map<FunctionName, { name: string; policy: unknown }[]>();
const logicalId = (construct: { node: { defaultChild?: unknown } }) => prod.stack.getLogicalId(construct.node.defaultChild as never);
const roleId = (fn: FunctionName) => prod.stack.getLogicalId(prod.stack.functions[fn].role!.node.defaultChild as CfnRole);
const tableArn = (name: TableName) => resolver.getAtt(logicalId(prod.stack.tables[name]), 'Arn');
const indexArns = (name: TableName) => (tableSpecOf(name).globalIndexes ?? []).map((i) => `${tableArn(name)}/index/${i.name}`);
const queueArn = (name: QueueName) => resolver.getAtt(logicalId(prod.stack.queues[name]), 'Arn');
const logGroupId = (fn: FunctionName) => logicalId(prod.stack.functions[fn].logGroup as never);
/** A log stream of a group, as Lambda writes it. */
const streamIn = (logGroupArn: string) => logGroupArn.replace(/:\*$/, ':log-stream:2026/11/29/[$LATEST]0123456789abcdef');

type Decision = 'Allowed' | 'ImplicitlyDenied' | 'ExplicitlyDenied';
/** The simulator's decision on one request of `fn`'s role; `context` holds the request's condition keys. */
async function decide(fn: FunctionName, action: string, resource: string, context: Record<string, string | string[]> = {}): Promise<Decision> {
  const result = await runSimulation({
    identityPolicies: policies.get(fn)!,
    serviceControlPolicies: [],
    resourceControlPolicies: [],
    request: {
      action,
      principal: `arn:aws:iam::${where.account}:role/${roleId(fn)}`,
      resource: { accountId: where.account, resource },
      contextVariables: context,
    },
  }, {});
  if (result.resultType === 'error') throw new Error(`${fn} ${action} ${resource}: ${JSON.stringify(result.errors)}`);
  return (result as { overallResult: Decision }).overallResult;
}
/** Decisions of many requests at once, keyed `<action> <resource>` for readable failures. */
async function decideAll(fn: FunctionName, requests: [action: string, resource: string, context?: Record<string, string | string[]>][]): Promise<Record<string, Decision>> {
  const decisions = await Promise.all(requests.map(([action, resource, context]) => decide(fn, action, resource, context)));
  return Object.fromEntries(requests.map(([action, resource, context], i) => [`${action} ${resource}${context ? ` ${JSON.stringify(context)}` : ''}`, decisions[i]]));
}
const every = <T>(keys: string[], value: T) => Object.fromEntries(keys.map((k) => [k, value]));

beforeAll(() => {
  prod = synthStage('prod');
  resolver = arnResolver(prod.template.Resources, where);
  for (const fn of functionNames) {
    const role = prod.template.Resources[roleId(fn)];
    const attached = Object.entries(prod.template.Resources)
      .filter(([, r]) => r.Type === 'AWS::IAM::Policy' && JSON.stringify(r.Properties?.Roles) === JSON.stringify([{ Ref: roleId(fn) }]))
      .map(([id, r]) => ({ name: id, policy: resolver.resolveDeep(r.Properties!.PolicyDocument) }));
    const inline = ((role.Properties?.Policies ?? []) as { PolicyName: string; PolicyDocument: unknown }[])
      .map((p) => ({ name: p.PolicyName, policy: resolver.resolveDeep(p.PolicyDocument) }));
    policies.set(fn, [...attached, ...inline]);
  }
});

afterAll(() => prod?.remove());

describe('least privilege, simulated on the prod roles', () => {
  it('no function role carries a managed policy (no AWSLambdaBasicExecutionRole)', () => {
    for (const fn of functionNames) expect([fn, prod.template.Resources[roleId(fn)].Properties?.ManagedPolicyArns]).toEqual([fn, undefined]);
  });

  it('each function writes logs to its own log group, and to no other', async () => {
    const groups = Object.entries(prod.template.Resources).filter(([, r]) => r.Type === 'AWS::Logs::LogGroup').map(([id]) => resolver.getAtt(id, 'Arn'));
    const stranger = `arn:aws:logs:${where.region}:${where.account}:log-group:/aws/lambda/someone-else:*`;
    for (const fn of functionNames) {
      const own = resolver.getAtt(logGroupId(fn), 'Arn');
      const others = [...groups.filter((g) => g !== own), stranger];
      expect(others.length).toBeGreaterThan(functionNames.length);
      const actions = ['logs:CreateLogStream', 'logs:PutLogEvents'];
      expect(await decideAll(fn, actions.map((a) => [a, streamIn(own)]))).toEqual(every(actions.map((a) => `${a} ${streamIn(own)}`), 'Allowed'));
      const elsewhere = others.flatMap((g) => actions.map((a): [string, string] => [a, streamIn(g)]));
      expect(await decideAll(fn, elsewhere)).toEqual(every(elsewhere.map(([a, r]) => `${a} ${r}`), 'ImplicitlyDenied'));
      // Creating groups or reading any: not the function's business.
      expect(await decide(fn, 'logs:CreateLogGroup', own.replace(/:\*$/, ''))).toBe('ImplicitlyDenied');
      // X-Ray has no resource-level permissions: allowed on '*'.
      expect(await decide(fn, 'xray:PutTraceSegments', '*')).toBe('Allowed');
    }
  });

  it('no role may Scan a table or an index', async () => {
    const resources = tableNames.flatMap((t) => [tableArn(t), ...indexArns(t)]);
    for (const fn of functionNames) {
      expect(await decideAll(fn, resources.map((r) => ['dynamodb:Scan', r]))).toEqual(every(resources.map((r) => `dynamodb:Scan ${r}`), 'ImplicitlyDenied'));
    }
  });

  it('lead intake cannot read or write the endpoints table, where the signing secrets are', async () => {
    const actions = ['dynamodb:GetItem', 'dynamodb:Query', 'dynamodb:BatchGetItem', 'dynamodb:PutItem', 'dynamodb:UpdateItem'];
    const requests = actions.map((a): [string, string] => [a, tableArn('endpoints')]);
    expect(await decideAll('leadIntake', requests)).toEqual(every(requests.map(([a, r]) => `${a} ${r}`), 'ImplicitlyDenied'));
  });

  it('delivery statistics may update its counters (STATS#<org>) and no delivery record, nor read anything', async () => {
    const deliveries = tableArn('deliveries');
    expect(await decide('deliveryStatistics', 'dynamodb:UpdateItem', deliveries, { 'dynamodb:LeadingKeys': ['STATS#org_1'] })).toBe('Allowed');
    expect(await decide('deliveryStatistics', 'dynamodb:UpdateItem', deliveries, { 'dynamodb:LeadingKeys': ['ORG#org_1'] })).toBe('ImplicitlyDenied');
    expect(await decide('deliveryStatistics', 'dynamodb:UpdateItem', deliveries)).toBe('ImplicitlyDenied');
    for (const action of ['dynamodb:PutItem', 'dynamodb:GetItem', 'dynamodb:DeleteItem']) {
      expect([action, await decide('deliveryStatistics', action, deliveries, { 'dynamodb:LeadingKeys': ['STATS#org_1'] })]).toEqual([action, 'ImplicitlyDenied']);
    }
  });

  it('the settings API cannot consume the dead-letter queues (nor any queue), only send to the delivery queue and the notices queue (confirmation e-mails)', async () => {
    const parked = (Object.keys(queues) as QueueName[]).filter((q) => !queueSpecs[q].deadLetter);
    expect(parked.length).toBeGreaterThanOrEqual(3);
    const requests = (Object.keys(queues) as QueueName[]).flatMap((q) => ['sqs:ReceiveMessage', 'sqs:DeleteMessage'].map((a): [string, string] => [a, queueArn(q)]));
    expect(await decideAll('settingsApi', requests)).toEqual(every(requests.map(([a, r]) => `${a} ${r}`), 'ImplicitlyDenied'));
    const sends = (Object.keys(queues) as QueueName[]).map((q): [string, string] => ['sqs:SendMessage', queueArn(q)]);
    expect(await decideAll('settingsApi', sends)).toEqual(Object.fromEntries(sends.map(([a, r], i) => [`${a} ${r}`, ['deliveryQueue', 'noticesQueue'].includes((Object.keys(queues) as QueueName[])[i]) ? 'Allowed' : 'ImplicitlyDenied'])));
  });

  describe("the settings API's reads of clients", () => {
    const trail = ['pk', 'sk', ...TRAIL_CLIENT_FIELDS];
    // The request context keys as DynamoDB documents them: `dynamodb:Attributes` lists the attributes
    // a request names (its projection); `dynamodb:Select` the value of Select, if any.
    it('GetItem without a projection is denied by an explicit Deny, whether or not DynamoDB sets Select', async () => {
      expect(await decide('settingsApi', 'dynamodb:GetItem', tableArn('clients'))).toBe('ExplicitlyDenied');
      expect(await decide('settingsApi', 'dynamodb:GetItem', tableArn('clients'), { 'dynamodb:Select': 'ALL_ATTRIBUTES' })).toBe('ExplicitlyDenied');
    });

    it("GetItem projecting the trail's fields is allowed; naming a contact detail is not", async () => {
      expect(await decide('settingsApi', 'dynamodb:GetItem', tableArn('clients'), { 'dynamodb:Attributes': trail })).toBe('Allowed');
      expect(await decide('settingsApi', 'dynamodb:GetItem', tableArn('clients'), { 'dynamodb:Attributes': trail, 'dynamodb:Select': 'SPECIFIC_ATTRIBUTES' })).toBe('Allowed');
      for (const field of ['email', 'phone', 'address', 'consent']) {
        expect([field, await decide('settingsApi', 'dynamodb:GetItem', tableArn('clients'), { 'dynamodb:Attributes': [...trail, field] })]).toEqual([field, 'ImplicitlyDenied']);
      }
    });

    it("Query must project the request log's fields with Select SPECIFIC_ATTRIBUTES", async () => {
      const fields = [...REQUEST_LOG_CLIENT_FIELDS];
      expect(await decide('settingsApi', 'dynamodb:Query', tableArn('clients'), { 'dynamodb:Attributes': fields, 'dynamodb:Select': 'SPECIFIC_ATTRIBUTES' })).toBe('Allowed');
      expect(await decide('settingsApi', 'dynamodb:Query', tableArn('clients'), { 'dynamodb:Select': 'ALL_ATTRIBUTES' })).toBe('ExplicitlyDenied');
      expect(await decide('settingsApi', 'dynamodb:Query', tableArn('clients'), { 'dynamodb:Attributes': fields })).toBe('ImplicitlyDenied');
      expect(await decide('settingsApi', 'dynamodb:Query', tableArn('clients'), { 'dynamodb:Attributes': [...fields, 'email'], 'dynamodb:Select': 'SPECIFIC_ATTRIBUTES' })).toBe('ImplicitlyDenied');
    });

    it('no other read of clients: BatchGetItem, the match index, writes', async () => {
      const requests: [string, string][] = [
        ['dynamodb:BatchGetItem', tableArn('clients')], ['dynamodb:Query', `${tableArn('clients')}/index/match`],
        ['dynamodb:PutItem', tableArn('clients')], ['dynamodb:UpdateItem', tableArn('clients')], ['dynamodb:DeleteItem', tableArn('clients')],
      ];
      expect(await decideAll('settingsApi', requests)).toEqual(every(requests.map(([a, r]) => `${a} ${r}`), 'ImplicitlyDenied'));
    });
  });

  describe("the mailer's and mail-feedback's reach into the organizations table", () => {
    const recipient = [...RECIPIENT_FIELDS];
    it('the mailer reads recipients and the organization\'s name projected, never a whole item nor a wallet or an API key\'s attributes', async () => {
      expect(await decide('mailer', 'dynamodb:Query', tableArn('organizations'), { 'dynamodb:Attributes': recipient, 'dynamodb:Select': 'SPECIFIC_ATTRIBUTES' })).toBe('Allowed');
      expect(await decide('mailer', 'dynamodb:GetItem', tableArn('organizations'), { 'dynamodb:Attributes': ['pk', 'sk', 'name'] })).toBe('Allowed');
      // An APIKEY# item (or any) read whole: denied outright.
      expect(await decide('mailer', 'dynamodb:GetItem', tableArn('organizations'))).toBe('ExplicitlyDenied');
      expect(await decide('mailer', 'dynamodb:Query', tableArn('organizations'), { 'dynamodb:Select': 'ALL_ATTRIBUTES' })).toBe('ExplicitlyDenied');
      for (const field of ['walletMicros', 'keyHash', 'secret']) {
        expect([field, await decide('mailer', 'dynamodb:GetItem', tableArn('organizations'), { 'dynamodb:Attributes': ['pk', 'sk', field] })]).toEqual([field, 'ImplicitlyDenied']);
        expect([field, await decide('mailer', 'dynamodb:Query', tableArn('organizations'), { 'dynamodb:Attributes': [...recipient, field], 'dynamodb:Select': 'SPECIFIC_ATTRIBUTES' })]).toEqual([field, 'ImplicitlyDenied']);
      }
      // Its one write: an address refused for good suppressed, naming the suppression's attributes alone, on an organization's items.
      const suppression = { 'dynamodb:Attributes': [...SUPPRESSION_FIELDS], 'dynamodb:LeadingKeys': ['ORG#org_1'] };
      expect(await decide('mailer', 'dynamodb:UpdateItem', tableArn('organizations'), suppression)).toBe('Allowed');
      expect(await decide('mailer', 'dynamodb:UpdateItem', tableArn('organizations'), { 'dynamodb:Attributes': ['pk', 'sk', 'status', 'walletMicros'], 'dynamodb:LeadingKeys': ['ORG#org_1'] })).not.toBe('Allowed');
      expect(await decide('mailer', 'dynamodb:UpdateItem', tableArn('organizations'))).not.toBe('Allowed');
      expect(await decideAll('mailer', [['dynamodb:PutItem', tableArn('organizations')], ['dynamodb:DeleteItem', tableArn('organizations')]]))
        .toEqual(every([`dynamodb:PutItem ${tableArn('organizations')}`, `dynamodb:DeleteItem ${tableArn('organizations')}`], 'ImplicitlyDenied'));
    });

    it.each(['mailer', 'mailFeedback'] as const)("%s's suppression write returns no whole item (ReturnValues ALL_OLD, ALL_NEW) and reaches an organization's items alone, not an API key's", async (fn) => {
      const suppression = { 'dynamodb:Attributes': [...SUPPRESSION_FIELDS], 'dynamodb:LeadingKeys': ['ORG#org_1'] };
      for (const returnValues of ['NONE', 'UPDATED_OLD', 'UPDATED_NEW']) {
        expect([returnValues, await decide(fn, 'dynamodb:UpdateItem', tableArn('organizations'), { ...suppression, 'dynamodb:ReturnValues': returnValues })]).toEqual([returnValues, 'Allowed']);
      }
      for (const returnValues of ['ALL_OLD', 'ALL_NEW']) {
        expect([returnValues, await decide(fn, 'dynamodb:UpdateItem', tableArn('organizations'), { ...suppression, 'dynamodb:ReturnValues': returnValues })]).toEqual([returnValues, 'ImplicitlyDenied']);
      }
      expect(await decide(fn, 'dynamodb:UpdateItem', tableArn('organizations'), { ...suppression, 'dynamodb:LeadingKeys': ['APIKEY#abc'] })).toBe('ImplicitlyDenied');
    });

    it("the mailer's rate-window writes are the lead notices' counters (NOTICES#*) and its refused-address count alone, not the rate limiter's windows nor a daily cap", async () => {
      expect(await decide('mailer', 'dynamodb:UpdateItem', tableArn('rateWindows'), { 'dynamodb:LeadingKeys': ['NOTICES#org_1#1700000000000'] })).toBe('Allowed');
      // And the suppression breaker's count of refused addresses (notify/rejection-count-store.ts).
      expect(await decide('mailer', 'dynamodb:UpdateItem', tableArn('rateWindows'), { 'dynamodb:LeadingKeys': ['MAILREJECT#1700000000000'] })).toBe('Allowed');
      // It reads the breaker's items (the window before, the latches) and nothing else there.
      for (const key of ['MAILREJECT#1700000000000', 'MAILREJECT#TRIPPED', 'MAILREJECT#TRIPPED#abc']) {
        expect([key, await decide('mailer', 'dynamodb:GetItem', tableArn('rateWindows'), { 'dynamodb:LeadingKeys': [key] })]).toEqual([key, 'Allowed']);
      }
      for (const key of ['NOTICES#org_1#1700000000000', 'RLS#key_1#0']) {
        expect([key, await decide('mailer', 'dynamodb:GetItem', tableArn('rateWindows'), { 'dynamodb:LeadingKeys': [key] })]).toEqual([key, 'ImplicitlyDenied']);
      }
      for (const key of ['RLS#key_1#0', 'CAP#key_1#2030-01-15']) {
        expect([key, await decide('mailer', 'dynamodb:UpdateItem', tableArn('rateWindows'), { 'dynamodb:LeadingKeys': [key] })]).toEqual([key, 'ImplicitlyDenied']);
      }
      expect(await decide('mailer', 'dynamodb:UpdateItem', tableArn('rateWindows'))).toBe('ImplicitlyDenied');
    });

    it("the fan-out's rate-window reads and writes are the lead notices' counters and their batches' answers (NOTICES#*) alone, not the rate limiter's windows nor a daily cap", async () => {
      for (const action of ['dynamodb:UpdateItem', 'dynamodb:GetItem']) {
        for (const key of ['NOTICES#org_1#1700000000000', 'NOTICES#org_1#1700000000000#batch']) {
          expect([action, key, await decide('eventFanout', action, tableArn('rateWindows'), { 'dynamodb:LeadingKeys': [key] })]).toEqual([action, key, 'Allowed']);
        }
        for (const key of ['RLS#key_1#0', 'CAP#key_1#2030-01-15', 'MAILREJECT#1700000000000']) {
          expect([action, key, await decide('eventFanout', action, tableArn('rateWindows'), { 'dynamodb:LeadingKeys': [key] })]).toEqual([action, key, 'ImplicitlyDenied']);
        }
      }
    });

    it("the mailer's sent marks are its only idempotency items: not the lead endpoint's records", async () => {
      expect(await decide('mailer', 'dynamodb:UpdateItem', tableArn('idempotency'), { 'dynamodb:LeadingKeys': ['notice#abc'] })).toBe('Allowed');
      expect(await decide('mailer', 'dynamodb:GetItem', tableArn('idempotency'), { 'dynamodb:LeadingKeys': ['crm-lead-intake#abc'] })).toBe('ImplicitlyDenied');
    });

    it('mail-feedback updates a recipient\'s suppression and nothing else: not walletMicros', async () => {
      expect(await decide('mailFeedback', 'dynamodb:UpdateItem', tableArn('organizations'), { 'dynamodb:Attributes': [...SUPPRESSION_FIELDS], 'dynamodb:LeadingKeys': ['ORG#org_1'] })).toBe('Allowed');
      expect(await decide('mailFeedback', 'dynamodb:UpdateItem', tableArn('organizations'), { 'dynamodb:Attributes': ['pk', 'sk', 'walletMicros'], 'dynamodb:LeadingKeys': ['ORG#org_1'] })).toBe('ImplicitlyDenied');
      expect(await decide('mailFeedback', 'dynamodb:UpdateItem', tableArn('organizations'))).toBe('ExplicitlyDenied');
    });
  });

  it('each function may do what its topology grants: its tables, queues and secrets, nothing of the tables it is not bound to', async () => {
    const sets: Record<Exclude<TableAccess, object>, { may: string[]; mayNot: string[] }> = {
      read: { may: ['dynamodb:GetItem', 'dynamodb:Query', 'dynamodb:BatchGetItem'], mayNot: ['dynamodb:PutItem', 'dynamodb:DeleteItem'] },
      readUpdate: { may: ['dynamodb:GetItem', 'dynamodb:PutItem', 'dynamodb:UpdateItem'], mayNot: ['dynamodb:DeleteItem', 'dynamodb:BatchWriteItem'] },
      write: { may: ['dynamodb:PutItem', 'dynamodb:DeleteItem', 'dynamodb:BatchWriteItem'], mayNot: ['dynamodb:GetItem', 'dynamodb:Query'] },
      readWrite: { may: ['dynamodb:GetItem', 'dynamodb:Query', 'dynamodb:PutItem', 'dynamodb:DeleteItem'], mayNot: [] },
      readFields: { may: [], mayNot: ['dynamodb:GetItem', 'dynamodb:BatchGetItem', 'dynamodb:PutItem'] },
    };
    for (const fn of functionNames) {
      const spec = specOf(fn);
      const expected: Record<string, Decision> = {};
      const requests: [string, string, Record<string, string | string[]>?][] = [];
      const expect_ = (action: string, resource: string, decision: Decision, context?: Record<string, string | string[]>) => {
        requests.push([action, resource, context]);
        expected[`${action} ${resource}${context ? ` ${JSON.stringify(context)}` : ''}`] = decision;
      };
      for (const table of tableNames) {
        const access = spec.tables[table];
        if (access === undefined) {
          for (const action of ['dynamodb:GetItem', 'dynamodb:Query', 'dynamodb:PutItem']) expect_(action, tableArn(table), 'ImplicitlyDenied');
        } else if (typeof access === 'string') {
          for (const action of sets[access].may) expect_(action, tableArn(table), 'Allowed');
          for (const action of sets[access].mayNot) expect_(action, tableArn(table), 'ImplicitlyDenied');
          if (access === 'readFields') {
            expect_('dynamodb:Query', tableArn(table), 'Allowed', { 'dynamodb:Attributes': [...tableSpecOf(table).readableFields!], 'dynamodb:Select': 'SPECIFIC_ATTRIBUTES' });
            expect_('dynamodb:Query', tableArn(table), 'ImplicitlyDenied', { 'dynamodb:Attributes': [...tableSpecOf(table).readableFields!, 'secrets'], 'dynamodb:Select': 'SPECIFIC_ATTRIBUTES' });
          }
        } else {
          for (const grant of [access].flat()) {
            const context = grant.attributes || grant.leadingKeys ? {
              ...(grant.attributes ? { 'dynamodb:Attributes': [...grant.attributes], 'dynamodb:Select': 'SPECIFIC_ATTRIBUTES' } : {}),
              ...(grant.leadingKeys ? { 'dynamodb:LeadingKeys': grant.leadingKeys.map((k) => k.replace('*', 'org_1')) } : {}),
            } : undefined;
            for (const action of grant.actions) expect_(action, tableArn(table), 'Allowed', context);
            for (const action of grant.index?.actions ?? []) expect_(action, `${tableArn(table)}/index/${grant.index!.name}`, 'Allowed');
          }
        }
      }
      // A stream's on-failure destination is sent to by Lambda with the function's role.
      const onFailure = spec.events.flatMap((e) => (e.kind === 'stream' ? [e.onFailure] : []));
      for (const queue of Object.keys(queues) as QueueName[]) {
        const access = spec.queues[queue];
        expect_('sqs:SendMessage', queueArn(queue), access === 'send' || access === 'sendAndConsume' || onFailure.includes(queue) ? 'Allowed' : 'ImplicitlyDenied');
        expect_('sqs:ReceiveMessage', queueArn(queue), access === 'consume' || access === 'sendAndConsume' || access === 'consumeWithBackoff' ? 'Allowed' : 'ImplicitlyDenied');
      }
      for (const [secret, construct] of Object.entries(prod.stack.secrets)) {
        expect_('secretsmanager:GetSecretValue', resolver.ref(logicalId(construct)), spec.secrets?.[secret as keyof typeof spec.secrets] ? 'Allowed' : 'ImplicitlyDenied');
      }
      const parameter = `arn:aws:ssm:${where.region}:${where.account}:parameter${resolver.ref(logicalId(prod.stack.settings))}`;
      expect_('ssm:GetParameter', parameter, 'Allowed');
      expect_('ssm:PutParameter', parameter, 'ImplicitlyDenied');
      expect([fn, await decideAll(fn, requests)]).toEqual([fn, expected]);
    }
  });
});
