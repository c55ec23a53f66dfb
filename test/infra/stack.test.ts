/**
 * The synthesized CloudFormation template (bundling skipped): what the topology promises is there,
 * each function can do exactly what its job needs and no more, and cdk-nag passes.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, it, expect, beforeAll, afterAll, jest } from '@jest/globals';
import type { AppProps } from 'aws-cdk-lib';
import { Match, Template } from 'aws-cdk-lib/assertions';
import type { CfnRole } from 'aws-cdk-lib/aws-iam';
import type { CfnFunction } from 'aws-cdk-lib/aws-lambda';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import { buildApp } from '../../lib/stacks/app.js';
import { attributeConditions } from '../../lib/stacks/crm-function.js';
import { stages, type StageConfig } from '../../lib/stages.js';
import { generateApiKey } from '../../functions/core/tenancy/api-keys.js';
import type { CrmStack } from '../../lib/stacks/crm-stack.js';
import { readRequestLog } from '../../functions/core/settings/request-log-read.js';
import { leadTrail } from '../../functions/core/settings/lead-trail.js';
import type { Deps } from '../../functions/core/platform/deps.js';
import { timePart } from '../../functions/core/platform/ids.js';
import { DIGEST_INDEX_PK, handOffMarkerFields } from '../../functions/core/platform/bindings.js';
import { secrets, type SecretName, deliveryMaxConcurrency, slowLaneMaxConcurrency, functions, outputKeys, queues, tables, type FunctionName, type QueueName, type TableAccess, type TableName, type TableSpec } from '../../lib/topology.js';
import { hasParameterChild, routes, crossOrigin, routeThrottle, catchAllThrottle, settingsThrottle } from '../../functions/front-door/routes.js';
import { cors } from '../../functions/core/intake/cors.js';
import { wafAddressLimitPer5Minutes, wafKeyLimitPerMinute } from '../../functions/front-door/waf.js';
import { gatewayResponses, mockRequestContentTypes, compressionMinBytes } from '../../functions/front-door/gateway-answers.js';

const outdirs: string[] = [];
/** The stage the tests build: prod's settings without backups, in a test account. */
const testStage: StageConfig = { account: '123456789012', region: 'eu-west-1', leadIntakeReservedConcurrency: 100, logRetentionDays: 30 };
/**
 * Builds the app as `cdk synth` does, minus esbuild, into a scratch directory; `config` changes the
 * test stage's settings. The CDK's built-in CloudFormation validation runs on the main build only
 * (`validate`: its verdict is asserted with cdk-nag's below); it changes no template, and the
 * variants would each pay for it again.
 */
function build(context: Record<string, unknown> = {}, config: Partial<StageConfig> = {}, validate = false): ReturnType<typeof buildApp> & { outdir: string } {
  const outdir = mkdtempSync(path.join(tmpdir(), 'crm-infra-'));
  outdirs.push(outdir);
  const props: AppProps = { outdir, builtinCloudFormationValidation: validate, context: { 'aws:cdk:bundling-stacks': [], stage: 'test', ...context } };
  return { ...buildApp(props, { ...stages, test: { ...testStage, ...config } }), outdir };
}

/** A value computed on first use and kept: each stage variant below is built once per file. */
function once<T>(make: () => T): () => T {
  let value: T | undefined;
  return () => (value ??= make());
}
/** The prod stage, as `cdk synth -c stage=prod` builds it. */
const prod = once(() => build({ stage: 'prod' }));
const prodTemplate = once(() => templateOf(prod().stack));
/**
 * The test stage with every optional setting the tests vary turned up, built once: each setting
 * shows in resources of its own (the delivery and bulk reservations, the pager subscription, the
 * backup plan), so one build serves the tests of all four.
 */
const raised = once(() => build({}, { deliveryMaxConcurrency: 300, bulkReservedConcurrency: 20, pagerEndpoint: 'https://events.pager.example/integration/abc', pointInTimeRecoveryDays: 7, backup: { weeklyRetentionDays: 28, monthlyRetentionDays: 180, copyToRegion: 'eu-central-1' } }));
const raisedTemplate = once(() => templateOf(raised().stack));
/** The test stage with the delivery and bulk reservations turned off (0: none). */
const unreserved = once(() => build({}, { deliveryReservedConcurrency: 0, bulkReservedConcurrency: 0 }));

interface ValidationReport { pluginReports: { pluginName: string; violations: { ruleName: string }[] }[] }

let stack: CrmStack;
let template: Template;
let synthError: unknown;
let report: ValidationReport;

beforeAll(() => {
  const built = build({}, {}, true);
  stack = built.stack;
  try {
    built.app.synth(); // runs the cdk-nag plugin; throws "Validation failed" on any unacknowledged finding
  } catch (error) {
    synthError = error;
  }
  const read = (file: string) => JSON.parse(readFileSync(path.join(built.outdir, file), 'utf8'));
  report = read('validation-report.json') as ValidationReport;
  // Templates are written before validation runs: the assertions below still run (and tell more)
  // when cdk-nag failed the synth.
  template = Template.fromJSON(read(stack.templateFile));
});

afterAll(() => {
  for (const dir of outdirs) rmSync(dir, { recursive: true, force: true });
});

const logicalId = (construct: { node: { defaultChild?: unknown } }) => stack.getLogicalId(construct.node.defaultChild as never);
const tableRef = (name: TableName) => logicalId(stack.tables[name]);
const queueRef = (name: QueueName) => logicalId(stack.queues[name]);
const functionProps = (name: FunctionName) => template.findResources('AWS::Lambda::Function')[logicalId(stack.functions[name])].Properties;
/** Each other stack's template, synthesized once (Template.fromStack synthesizes its app again each time). */
const templates = new WeakMap<typeof stack, Template>();
const templateOf = (other: typeof stack) => templates.get(other) ?? templates.set(other, Template.fromStack(other)).get(other)!;
const functionPropsOf = (other: typeof stack, name: FunctionName) =>
  templateOf(other).findResources('AWS::Lambda::Function')[other.getLogicalId(other.functions[name].node.defaultChild as CfnFunction)].Properties;

/** Every IAM Allow statement attached to a function's role (the Denies beside grants on attributes are iam-simulation.test.ts's), its resources rendered as one string. */
function statementsOf(name: FunctionName): { actions: string[]; resources: string }[] {
  const roleId = stack.getLogicalId(stack.functions[name].role!.node.defaultChild as CfnRole);
  return Object.values(template.findResources('AWS::IAM::Policy'))
    .filter((policy) => JSON.stringify(policy.Properties.Roles) === JSON.stringify([{ Ref: roleId }]))
    .flatMap((policy) => (policy.Properties.PolicyDocument.Statement as { Effect: string; Action: string | string[]; Resource: unknown }[]))
    .filter((s) => s.Effect === 'Allow')
    .map((s) => ({ actions: ([] as string[]).concat(s.Action), resources: JSON.stringify(s.Resource) }));
}
/** The Allow statements of a function's role on a resource: their actions and Condition (undefined: none). */
function statementsOn(name: FunctionName, resourceLogicalId: string): { actions: string[]; condition: unknown }[] {
  const roleId = stack.getLogicalId(stack.functions[name].role!.node.defaultChild as CfnRole);
  return Object.values(template.findResources('AWS::IAM::Policy'))
    .filter((policy) => JSON.stringify(policy.Properties.Roles) === JSON.stringify([{ Ref: roleId }]))
    .flatMap((policy) => (policy.Properties.PolicyDocument.Statement as { Effect: string; Action: string | string[]; Resource: unknown; Condition?: unknown }[]))
    .filter((st) => st.Effect === 'Allow')
    .filter((st) => JSON.stringify(st.Resource).includes(`"${resourceLogicalId}"`))
    .map((st) => ({ actions: [st.Action].flat(), condition: st.Condition }));
}
const conditionsOn = (name: FunctionName, resourceLogicalId: string) => statementsOn(name, resourceLogicalId).map((st) => st.condition);
const allActions = (name: FunctionName) => statementsOf(name).flatMap((s) => s.actions);
const actionsOn = (name: FunctionName, resourceLogicalId: string) =>
  statementsOf(name).filter((s) => s.resources.includes(`"${resourceLogicalId}"`)).flatMap((s) => s.actions);
const streamReadActions = ['dynamodb:DescribeStream', 'dynamodb:GetRecords', 'dynamodb:GetShardIterator', 'dynamodb:ListStreams'];

describe('the CDK stack', () => {
  it('has one on-demand, encrypted, point-in-time-recoverable, retained table per topology table, with its keys, TTL, indexes and stream', () => {
    template.resourceCountIs('AWS::DynamoDB::Table', Object.keys(tables).length);
    const resources = template.findResources('AWS::DynamoDB::Table');
    for (const [name, spec] of Object.entries(tables) as [TableName, (typeof tables)[TableName]][]) {
      const { Properties: props, DeletionPolicy, UpdateReplacePolicy } = resources[tableRef(name)];
      expect(DeletionPolicy).toBe('Retain');
      expect(UpdateReplacePolicy).toBe('Retain');
      expect(props.BillingMode).toBe('PAY_PER_REQUEST');
      expect(props.PointInTimeRecoverySpecification).toEqual({ PointInTimeRecoveryEnabled: true, RecoveryPeriodInDays: 35 });
      expect(props.SSESpecification).toEqual({ SSEEnabled: true });
      expect(props.KeySchema[0]).toEqual({ AttributeName: spec.partitionKey.name, KeyType: 'HASH' });
      expect(props.KeySchema[1]).toEqual('sortKey' in spec ? { AttributeName: spec.sortKey.name, KeyType: 'RANGE' } : undefined);
      expect(props.TimeToLiveSpecification).toEqual('ttlAttribute' in spec ? { AttributeName: spec.ttlAttribute, Enabled: true } : undefined);
      expect(props.StreamSpecification).toEqual('stream' in spec ? { StreamViewType: 'NEW_AND_OLD_IMAGES' } : undefined);
      expect((props.GlobalSecondaryIndexes ?? []).map((i: { IndexName: string }) => i.IndexName))
        .toEqual('globalIndexes' in spec ? spec.globalIndexes.map((i) => i.name) : []);
    }
  });

  it('moves a delivery to the dead-letter queue after 5 receives; every queue is encrypted and requires TLS', () => {
    template.resourceCountIs('AWS::SQS::Queue', Object.keys(queues).length);
    expect(template.findResources('AWS::SQS::Queue')[queueRef('deliveryQueue')].Properties).toMatchObject({
      VisibilityTimeout: 180,
      MessageRetentionPeriod: 14 * 86400,
      RedrivePolicy: { deadLetterTargetArn: { 'Fn::GetAtt': [queueRef('deliveryDlq'), 'Arn'] }, maxReceiveCount: 10 },
    });
    template.allResourcesProperties('AWS::SQS::Queue', { SqsManagedSseEnabled: true });
    template.resourceCountIs('AWS::SQS::QueuePolicy', Object.keys(queues).length);
    template.allResourcesProperties('AWS::SQS::QueuePolicy', {
      PolicyDocument: { Statement: Match.arrayWith([Match.objectLike({ Effect: 'Deny', Condition: { Bool: { 'aws:SecureTransport': 'false' } } })]) },
    });
  });

  it('runs every function on Node 24, arm64, with X-Ray, source maps and a log group kept one month', () => {
    template.resourceCountIs('AWS::Lambda::Function', Object.keys(functions).length);
    template.allResourcesProperties('AWS::Lambda::Function', {
      Runtime: 'nodejs24.x',
      Architectures: ['arm64'],
      TracingConfig: { Mode: 'Active' },
      LoggingConfig: Match.objectLike({ LogGroup: Match.anyValue() }),
      Environment: { Variables: Match.objectLike({ NODE_OPTIONS: '--enable-source-maps', STAGE: 'test', POWERTOOLS_SERVICE_NAME: Match.anyValue() }) },
    });
    for (const [name, spec] of Object.entries(functions) as [FunctionName, (typeof functions)[FunctionName]][]) {
      expect(functionProps(name)).toMatchObject({ Timeout: spec.timeoutSeconds, MemorySize: spec.memoryMb, Handler: 'index.handler' });
    }
    template.hasResourceProperties('AWS::Logs::LogGroup', { RetentionInDays: 30 });
  });

  it('feeds both streams to the fan-out with partial batch responses, bisect, bounded retries and an on-failure queue', () => {
    for (const table of ['clients', 'workOrders'] as const) {
      template.hasResourceProperties('AWS::Lambda::EventSourceMapping', {
        FunctionName: { Ref: logicalId(stack.functions.eventFanout) },
        EventSourceArn: { 'Fn::GetAtt': [tableRef(table), 'StreamArn'] },
        FunctionResponseTypes: ['ReportBatchItemFailures'],
        BisectBatchOnFunctionError: true,
        MaximumRetryAttempts: 10,
        BatchSize: 400,
        // Per-organization lanes: one organization's import holds one of 10 (docs/capacity.md).
        ParallelizationFactor: 10,
        StartingPosition: 'TRIM_HORIZON',
        DestinationConfig: { OnFailure: { Destination: { 'Fn::GetAtt': [queueRef('fanoutFailures'), 'Arn'] } } },
      });
    }
  });

  it('feeds the delivery queue to the delivery function in batches of 10 with partial batch responses and bounded concurrency', () => {
    template.hasResourceProperties('AWS::Lambda::EventSourceMapping', {
      FunctionName: { Ref: logicalId(stack.functions.webhookDelivery) },
      EventSourceArn: { 'Fn::GetAtt': [queueRef('deliveryQueue'), 'Arn'] },
      FunctionResponseTypes: ['ReportBatchItemFailures'],
      BatchSize: 10,
      ScalingConfig: { MaximumConcurrency: deliveryMaxConcurrency },
    });
    // The slow lane (docs/architecture.md#fair-delivery): failing, hanging or slow endpoints' deliveries, with a concurrency of their own.
    template.hasResourceProperties('AWS::Lambda::EventSourceMapping', {
      FunctionName: { Ref: logicalId(stack.functions.webhookDelivery) },
      EventSourceArn: { 'Fn::GetAtt': [queueRef('deliverySlowQueue'), 'Arn'] },
      FunctionResponseTypes: ['ReportBatchItemFailures'],
      BatchSize: 10,
      ScalingConfig: { MaximumConcurrency: slowLaneMaxConcurrency },
    });
    template.hasResourceProperties('AWS::SQS::Queue', {
      VisibilityTimeout: queues.deliverySlowQueue.visibilityTimeoutSeconds,
      RedrivePolicy: { deadLetterTargetArn: { 'Fn::GetAtt': [queueRef('deliveryDlq'), 'Arn'] }, maxReceiveCount: 10 },
    });
    template.resourceCountIs('AWS::Lambda::EventSourceMapping', 9); // + the bulk queue's (below), the deliveries stream's (statistics), the notices queue's, the mail feedback queue's and the digest queue's
    // The statistics read the deliveries table's stream a minute at a time, with no on-failure queue (best effort: docs/settings.md "Statistics").
    template.hasResourceProperties('AWS::Lambda::EventSourceMapping', {
      FunctionName: { Ref: Match.stringLikeRegexp('deliveryStatistics') }, BatchSize: 1000, MaximumBatchingWindowInSeconds: 60, DestinationConfig: Match.absent(),
      ParallelizationFactor: 4, MaximumRetryAttempts: 2,
      // Only delivery records' inserts and changes reach it (the local poller applies the same pattern: test/unit/local/stream-filter.test.ts).
      FilterCriteria: { Filters: [{ Pattern: JSON.stringify({ eventName: ['INSERT', 'MODIFY'], dynamodb: { Keys: { sk: { S: [{ prefix: 'DELIVERY#' }] } } } }) }] },
    });
    // The fan-out's mappings read every record: no filter.
    template.hasResourceProperties('AWS::Lambda::EventSourceMapping', { FunctionName: { Ref: logicalId(stack.functions.eventFanout) }, BatchSize: 400, FilterCriteria: Match.absent() });
  });

  it('lets lead intake write clients but never send to a queue or touch deliveries', () => {
    expect(actionsOn('leadIntake', tableRef('clients'))).toContain('dynamodb:PutItem');
    // Duplicate matching (docs/leads.md): a Query of the match index, a GetItem of a double-submit's client.
    expect(actionsOn('leadIntake', tableRef('clients'))).toEqual(expect.arrayContaining(['dynamodb:Query', 'dynamodb:GetItem']));
    expect(actionsOn('leadIntake', tableRef('deliveries'))).toEqual([]);
    expect(allActions('leadIntake')).not.toContain('sqs:SendMessage');
    expect(allActions('leadIntake').filter((a) => a.startsWith('sqs:'))).toEqual([]);
  });

  it('lets the fan-out read the streams and endpoints and queue deliveries, but never write clients', () => {
    for (const table of ['clients', 'workOrders'] as const) {
      expect(actionsOn('eventFanout', tableRef(table)).filter((a) => !streamReadActions.includes(a))).toEqual([]);
    }
    expect(actionsOn('eventFanout', tableRef('endpoints'))).toContain('dynamodb:Query');
    expect(actionsOn('eventFanout', tableRef('endpoints'))).not.toContain('dynamodb:PutItem');
    expect(actionsOn('eventFanout', tableRef('deliveries'))).toEqual(expect.arrayContaining(['dynamodb:PutItem', 'dynamodb:Query']));
    expect(actionsOn('eventFanout', queueRef('deliveryQueue'))).toContain('sqs:SendMessage');
    expect(actionsOn('eventFanout', queueRef('deliveryQueue'))).not.toContain('sqs:DeleteMessage');
  });

  it('lets delivery consume both lanes and send only to them (retries, moves to the slow lane), to its dead-letter queue and to the notices queue, never touch the clients table', () => {
    for (const lane of ['deliveryQueue', 'deliverySlowQueue'] as const) {
      expect(actionsOn('webhookDelivery', queueRef(lane))).toEqual(expect.arrayContaining(['sqs:ReceiveMessage', 'sqs:DeleteMessage', 'sqs:SendMessage']));
    }
    expect(actionsOn('webhookDelivery', tableRef('clients'))).toEqual([]);
    expect(actionsOn('webhookDelivery', tableRef('workOrders'))).toEqual([]);
    // A batch's records are read together, its delivered outcomes written one UpdateItem each (batch-records.ts DeliveredWrites).
    expect(actionsOn('webhookDelivery', tableRef('deliveries'))).toEqual(expect.arrayContaining(['dynamodb:BatchGetItem', 'dynamodb:UpdateItem']));
    // The notices queue: an endpoint paused or disabled is a notice (functions/core/delivery/endpoint-notices.ts).
    const named = ['deliveryDlq', 'deliveryQueue', 'deliverySlowQueue', 'noticesQueue'] as const;
    const sendsTo = statementsOf('webhookDelivery').filter((st) => st.actions.includes('sqs:SendMessage'))
      .map((st) => named.filter((q) => st.resources.includes(`"${queueRef(q)}"`)).join() || st.resources);
    expect(sendsTo.sort()).toEqual([...named]);
  });

  it('lets delivery statistics update its counters alone: UpdateItem on the deliveries table, only of STATS# partitions', () => {
    // Its event source reads the table's stream (DescribeStream, GetRecords, GetShardIterator): no item action.
    const onItems = statementsOn('deliveryStatistics', tableRef('deliveries')).filter((st) => !st.actions.every((a) => ['dynamodb:DescribeStream', 'dynamodb:GetRecords', 'dynamodb:GetShardIterator'].includes(a)));
    expect(onItems).toEqual([{
      actions: ['dynamodb:UpdateItem'],
      condition: { 'ForAllValues:StringLike': { 'dynamodb:LeadingKeys': ['STATS#*'] }, Null: { 'dynamodb:LeadingKeys': 'false' } },
    }]);
  });

  it('lets the sweeper re-queue parked deliveries and clear their due entries, and re-drive the notices the notices queue refused, nothing more: no other table, no consuming, no dead-letter or slow-lane queue', () => {
    const deliveries = actionsOn('deliverySweeper', tableRef('deliveries'));
    expect(deliveries).toEqual(expect.arrayContaining(['dynamodb:Query', 'dynamodb:BatchGetItem', 'dynamodb:UpdateItem']));
    for (const table of ['clients', 'workOrders', 'organizations', 'rateWindows', 'requestLog', 'idempotency'] as const) expect(actionsOn('deliverySweeper', tableRef(table))).toEqual([]);
    const sqs = statementsOf('deliverySweeper').filter((st) => st.actions.some((a) => a.startsWith('sqs:')));
    expect(sqs.map((st) => st.resources).sort()).toEqual([JSON.stringify({ 'Fn::GetAtt': [queueRef('deliveryQueue'), 'Arn'] }), JSON.stringify({ 'Fn::GetAtt': [queueRef('noticesQueue'), 'Arn'] })].sort());
    expect(sqs.flatMap((st) => st.actions).every((a) => ['sqs:SendMessage', 'sqs:GetQueueAttributes', 'sqs:GetQueueUrl'].includes(a))).toBe(true);
    expect(allActions('deliverySweeper').filter((a) => /^(sqs:(Receive|Delete|ChangeMessage)|secretsmanager:|kms:Decrypt$)/.test(a))).toEqual([]);
  });

  it('names exactly the bound tables and queues in env vars, and points every function at the settings parameter it may read', () => {
    for (const [name, spec] of Object.entries(functions) as [FunctionName, (typeof functions)[FunctionName]][]) {
      const env = functionProps(name).Environment.Variables as Record<string, unknown>;
      const bound = [
        ...Object.keys(spec.tables).map((t) => tables[t as TableName].envVar),
        ...Object.keys(spec.queues).map((q) => queues[q as QueueName].envVar),
        ...Object.keys((spec as { secrets?: object }).secrets ?? {}).map((n) => secrets[n as SecretName].envVar),
        // A function that sends mail: the links' base URL and the SES configuration set (lib/stacks/crm-mail.ts).
        ...((spec as { sendsMail?: true }).sendsMail ? ['PUBLIC_API_URL', 'SES_CONFIGURATION_SET'] : []),
      ];
      expect(Object.keys(env).sort()).toEqual([...bound, 'NODE_OPTIONS', 'POWERTOOLS_SERVICE_NAME', 'SETTINGS_PARAMETER', 'CRM_SETTINGS_SNAPSHOT', 'STAGE'].sort());
      expect(env.SETTINGS_PARAMETER).toEqual({ Ref: logicalId(stack.settings) });
      expect(allActions(name)).toContain('ssm:GetParameter');
    }
    const parameter = template.findResources('AWS::SSM::Parameter')[logicalId(stack.settings)].Properties;
    expect(parameter).toMatchObject({ Name: '/crm/test/settings', Type: 'String' });
    expect(JSON.parse(parameter.Value)).toMatchObject({ stage: 'test', local: false, defaultRateLimitPerMinute: 100 });
  });

  it('lets every function GetParameter on its settings parameter only, and gives it the deployed document as a snapshot', () => {
    const document = template.findResources('AWS::SSM::Parameter')[logicalId(stack.settings)].Properties.Value as string;
    for (const name of Object.keys(functions) as FunctionName[]) {
      // Exactly one SSM statement: GetParameter (no GetParameters, GetParameterHistory, DescribeParameters) on this ARN.
      const ssmStatements = statementsOf(name).filter((st) => st.actions.some((a) => a.startsWith('ssm:')));
      expect(ssmStatements).toEqual([{ actions: ['ssm:GetParameter'], resources: expect.stringContaining(`"${logicalId(stack.settings)}"`) }]);
      expect(ssmStatements[0].resources).toMatch(/:parameter/);
      // The snapshot a cold container serves when SSM fails is the very document the stack writes to SSM.
      expect(functionProps(name).Environment.Variables.CRM_SETTINGS_SNAPSHOT).toBe(document);
    }
  });

  it('generates the session-token secret in Secrets Manager (no value in the template) and lets only the settings function GetSecretValue on it (and on the notice links\' secret, which the mailer reads too)', () => {
    const secretId = logicalId(stack.secrets.settingsToken);
    const secret = template.findResources('AWS::SecretsManager::Secret')[secretId];
    expect(secret.Properties.GenerateSecretString).toMatchObject({ PasswordLength: 64, ExcludePunctuation: true });
    expect(secret.Properties.SecretString).toBeUndefined();
    expect(JSON.stringify(template.toJSON())).not.toMatch(/resolve:secretsmanager/);
    for (const name of Object.keys(functions) as FunctionName[]) {
      const statements = statementsOf(name).filter((st) => st.actions.some((a) => a.startsWith('secretsmanager:')));
      const links = { actions: ['secretsmanager:GetSecretValue'], resources: JSON.stringify({ Ref: logicalId(stack.secrets.noticeLinks) }) };
      if (name === 'settingsApi') expect(statements).toEqual([{ actions: ['secretsmanager:GetSecretValue'], resources: JSON.stringify({ Ref: secretId }) }, links]);
      else if (name === 'mailer') expect(statements).toEqual([links]);
      else expect(statements).toEqual([]);
    }
    expect(functionProps('settingsApi').Environment.Variables[secrets.settingsToken.envVar]).toEqual({ Ref: secretId });
  });

  it('lets only the mailer send e-mail, as the stage\'s identity and through its configuration set only, whose bounces and complaints reach the mail feedback queue', () => {
    const ses = (name: FunctionName) => statementsOf(name).filter((st) => st.actions.some((a) => a.startsWith('ses:')));
    for (const name of Object.keys(functions) as FunctionName[]) {
      if (name !== 'mailer') expect({ name, ses: ses(name) }).toEqual({ name, ses: [] });
    }
    const [grant] = ses('mailer');
    expect(grant.actions.sort()).toEqual(['ses:SendEmail', 'ses:SendRawEmail']);
    expect(grant.resources).toContain(':identity/example.com');
    expect(grant.resources).toContain(':configuration-set/');
    expect(grant.resources).not.toContain('*');
    // As the stage's sender address alone, not any address of the verified domain.
    const sesStatements = Object.values(template.findResources('AWS::IAM::Policy'))
      .flatMap((policy) => policy.Properties.PolicyDocument.Statement as { Action: string | string[]; Condition?: unknown }[])
      .filter((st) => ([] as string[]).concat(st.Action).includes('ses:SendEmail'));
    expect(sesStatements.map((st) => st.Condition)).toEqual([{ StringEquals: { 'ses:FromAddress': expect.stringMatching(/^[^<>\s]+@example\.com$/) } }]);
    template.resourceCountIs('AWS::SES::ConfigurationSet', 1);
    template.hasResourceProperties('AWS::SES::ConfigurationSetEventDestination', {
      EventDestination: Match.objectLike({ Enabled: true, MatchingEventTypes: Match.arrayWith(['bounce', 'complaint']) }),
    });
    template.hasResourceProperties('AWS::Events::Rule', {
      EventPattern: Match.objectLike({ source: ['aws.ses'], 'detail-type': ['Email Bounced', 'Email Complaint Received'] }),
      Targets: [Match.objectLike({ Arn: { 'Fn::GetAtt': [queueRef('mailFeedbackQueue'), 'Arn'] } })],
    });
  });

  it('lets the settings function manage keys, endpoints and deliveries, read one client by key (a lead\'s trail), but never write clients, touch work orders or idempotency records, nor consume the delivery queue', () => {
    expect(actionsOn('settingsApi', tableRef('organizations'))).toEqual(expect.arrayContaining(['dynamodb:PutItem', 'dynamodb:UpdateItem', 'dynamodb:Query']));
    expect(actionsOn('settingsApi', tableRef('clients')).sort()).toEqual(['dynamodb:GetItem', 'dynamodb:Query']);
    // GetItem: only the trail's fields of a client (lead-trail.ts); Query: only who sent a lead and
    // when (the request log's, request-log-read.ts), each read projecting (Select SPECIFIC_ATTRIBUTES,
    // required of a Query). Never a client's contact details, its notification (the lead's name) nor
    // its matchKey. Written out here, not taken from the code's lists: widening a grant edits this test.
    expect(statementsOn('settingsApi', tableRef('clients'))).toEqual(expect.arrayContaining([
      { actions: ['dynamodb:GetItem'], condition: { 'ForAllValues:StringEquals': { 'dynamodb:Attributes': ['pk', 'sk', 'id', 'status', 'source', 'first_name', 'last_name', 'created_at', 'possible_duplicate_of', 'submission_count', 'submissions', 'request_id'] }, StringEqualsIfExists: { 'dynamodb:Select': 'SPECIFIC_ATTRIBUTES' } } },
      { actions: ['dynamodb:Query'], condition: { 'ForAllValues:StringEquals': { 'dynamodb:Attributes': ['pk', 'sk', 'id', 'source', 'created_at', 'request_id', 'key_id', 'request_status', 'request_channel'] }, StringEquals: { 'dynamodb:Select': 'SPECIFIC_ATTRIBUTES' } } },
    ]));
    expect(statementsOn('settingsApi', tableRef('clients'))).toHaveLength(2);
    for (const table of ['workOrders', 'idempotency'] as const) expect(actionsOn('settingsApi', tableRef(table))).toEqual([]);
    expect(actionsOn('settingsApi', queueRef('deliveryQueue'))).toContain('sqs:SendMessage');
    expect(actionsOn('settingsApi', queueRef('deliveryQueue'))).not.toContain('sqs:ReceiveMessage');
    expect(actionsOn('settingsApi', queueRef('fanoutFailures'))).toEqual([]);
    // Every settings route reaches the settings function through a Lambda proxy integration.
    const pathOf = resourcePaths();
    const settingsMethods = Object.values(template.findResources('AWS::ApiGateway::Method'))
      .filter((m) => m.Properties.Integration?.Type === 'AWS_PROXY' && JSON.stringify(m.Properties.Integration.Uri).includes(logicalId(stack.functions.settingsApi)))
      .map((m) => `${m.Properties.HttpMethod} ${pathOf(m.Properties.ResourceId)}`);
    expect(settingsMethods.sort()).toEqual(routes.filter((r) => r.function === 'settingsApi').map((r) => `${r.method} ${r.path}`).sort());
  });

  it('refuses at synth a grant on attributes mixing Query or Scan (Select required) with GetItem (none to require)', () => {
    expect(() => attributeConditions(['dynamodb:GetItem', 'dynamodb:Query'], ['pk', 'sk'])).toThrow(/mixes dynamodb:Query with dynamodb:GetItem/);
    expect(() => attributeConditions(['dynamodb:Scan', 'dynamodb:BatchGetItem'], ['pk'])).toThrow(/split/);
    expect(attributeConditions(['dynamodb:Query'], ['pk'])).toEqual({ 'ForAllValues:StringEquals': { 'dynamodb:Attributes': ['pk'] }, StringEquals: { 'dynamodb:Select': 'SPECIFIC_ATTRIBUTES' } });
    expect(attributeConditions(['dynamodb:GetItem'], ['pk'])).toEqual({ 'ForAllValues:StringEquals': { 'dynamodb:Attributes': ['pk'] }, StringEqualsIfExists: { 'dynamodb:Select': 'SPECIFIC_ATTRIBUTES' } });
  });

  it("sends on clients only reads the settings function's grant allows: the request log's Query and the trail's GetItem name granted attributes alone, and project", async () => {
    // The local stack does not evaluate IAM: the commands the code sends are checked against the synthesized grant here.
    const sent: { input: Record<string, unknown>; constructor: { name: string } }[] = [];
    const deps = {
      doc: { send: async (command: (typeof sent)[number]) => { sent.push(command); return {}; } },
      tables: { clients: 'clients', requestLog: 'requestLog', organizations: 'organizations', deliveries: 'deliveries' },
      config: { retentionDays: 30 }, now: () => Date.parse('2026-11-26T12:00:00.000Z'),
    } as unknown as Deps;
    await readRequestLog(deps, 'org_1', { limit: 25 });
    await readRequestLog(deps, 'org_1', { limit: 25, before: { request: 'REQUEST#2026-11-20T00:00:00.000Z#r', client: `CLIENT#cli_${timePart(Date.parse('2026-11-20T00:00:00.000Z'))}A` } });
    await leadTrail(deps, 'org_1', 'cli_0000000000000000000000A').catch(() => undefined);
    const grant = (action: string) => {
      const st = statementsOn('settingsApi', tableRef('clients')).find((s) => s.actions.includes(action))!;
      return (st.condition as Record<string, Record<string, string[]>>)['ForAllValues:StringEquals']['dynamodb:Attributes'];
    };
    const operators = new Set(['AND', 'OR', 'NOT', 'BETWEEN', 'IN', 'attribute_exists', 'attribute_not_exists', 'attribute_type', 'begins_with', 'contains', 'size']);
    const namesIn = (input: Record<string, unknown>) => {
      const names = (input.ExpressionAttributeNames ?? {}) as Record<string, string>;
      const expressions = [input.ProjectionExpression, input.FilterExpression, input.KeyConditionExpression].filter((e): e is string => typeof e === 'string');
      const used = expressions.flatMap((e) => e.match(/(?<![:\w#])#?[A-Za-z_]\w*/g) ?? []).filter((t) => !operators.has(t)).map((t) => (t.startsWith('#') ? names[t] : t));
      return [...used, ...Object.values(names), ...Object.keys((input.Key ?? {}) as object)];
    };
    const onClients = sent.filter((c) => c.input.TableName === 'clients');
    const queries = onClients.filter((c) => c.constructor.name === 'QueryCommand');
    const gets = onClients.filter((c) => c.constructor.name === 'GetCommand');
    expect([queries.length, gets.length]).toEqual([2, 1]);
    expect(onClients).toHaveLength(3);
    // A page of 25 rows reads 26 clients a Query, not 100 (docs/settings.md "Request log": the read's cost).
    expect(queries.map((q) => q.input.Limit)).toEqual([26, 26]);
    for (const [commands, action] of [[queries, 'dynamodb:Query'], [gets, 'dynamodb:GetItem']] as const) {
      for (const { input } of commands) {
        expect(input.ProjectionExpression).toEqual(expect.any(String));
        if (action === 'dynamodb:Query') expect(input.Select).toBe('SPECIFIC_ATTRIBUTES');
        const used = namesIn(input);
        expect(used).not.toContain(undefined);
        expect(used.filter((n) => !grant(action).includes(n))).toEqual([]);
      }
    }
  });

  it('serves GET and POST /api/webhook/leads on a regional API with JSON access logs and tracing', () => {
    template.hasResourceProperties('AWS::ApiGateway::RestApi', { EndpointConfiguration: { Types: ['REGIONAL'] } });
    template.hasResourceProperties('AWS::ApiGateway::Stage', {
      StageName: 'test',
      TracingEnabled: true,
      AccessLogSetting: { DestinationArn: Match.anyValue(), Format: Match.stringLikeRegexp('^\\{.*"requestId"') },
    });
    for (const method of ['GET', 'POST']) {
      template.hasResourceProperties('AWS::ApiGateway::Method', {
        HttpMethod: method,
        AuthorizationType: 'NONE',
        Integration: Match.objectLike({ Type: 'AWS_PROXY', IntegrationHttpMethod: 'POST' }),
      });
    }
  });

  it('throttles per method (as API Gateway does): the catch-all mocks by the low stage default, each lead method and its preflight by the sized bucket', () => {
    const [stage] = Object.values(template.findResources('AWS::ApiGateway::Stage'));
    const settings = Object.fromEntries((stage.Properties.MethodSettings as { ResourcePath: string; HttpMethod: string; ThrottlingRateLimit: number; ThrottlingBurstLimit: number; LoggingLevel: string }[])
      .map((m) => [`${m.ResourcePath === '/*' ? '/*' : m.ResourcePath.slice(1).replaceAll('~1', '/')} ${m.HttpMethod}`, { rate: m.ThrottlingRateLimit, burst: m.ThrottlingBurstLimit, logging: m.LoggingLevel }]));
    const sized = { rate: routeThrottle.rateLimit, burst: routeThrottle.burstLimit, logging: 'ERROR' };
    expect(settings).toMatchObject({
      '/* *': { rate: catchAllThrottle.rateLimit, burst: catchAllThrottle.burstLimit, logging: 'ERROR' },
      '/api/webhook/leads GET': sized,
      '/api/webhook/leads POST': sized,
      '/api/webhook/leads OPTIONS': sized,
    });
    // Every routed method and its path's preflight (the settings routes included, `{id}` paths too), nothing else.
    const routed = [...new Set(routes.flatMap((r) => [`${r.path} ${r.method}`, ...(crossOrigin(r.path) ? [`${r.path} OPTIONS`] : [])]))];
    expect(Object.keys(settings).sort()).toEqual(['/* *', ...routed].sort());
    // The settings routes (a few admins per organization) get a small bucket of their own: their
    // ~30 methods at the lead size would exceed the account's quota (docs/capacity.md).
    const settingsPaths = new Set(routes.filter((r) => r.function === 'settingsApi').map((r) => r.path));
    const small = { rate: settingsThrottle.rateLimit, burst: settingsThrottle.burstLimit, logging: 'ERROR' };
    for (const key of routed) expect(settings[key]).toEqual(settingsPaths.has(key.split(' ')[0]) ? small : sized);
    expect(settings['/api/settings/webhooks/{id}/test POST']).toEqual(small);
    expect(settingsThrottle.rateLimit * 20).toBeLessThanOrEqual(routeThrottle.rateLimit);
    // Low enough that scanners cannot claim the account's API Gateway quota (docs/capacity.md).
    expect(catchAllThrottle.rateLimit * 20).toBeLessThanOrEqual(routeThrottle.rateLimit);
  });

  it('answers CORS preflights without a key, allowing the lead headers, and puts CORS headers on gateway errors', () => {
    template.hasResourceProperties('AWS::ApiGateway::Method', {
      HttpMethod: 'OPTIONS',
      AuthorizationType: 'NONE',
      Integration: Match.objectLike({
        IntegrationResponses: [Match.objectLike({
          ResponseParameters: Match.objectLike({
            'method.response.header.Access-Control-Allow-Headers': "'Content-Type,X-API-Key,Authorization,Idempotency-Key'",
            'method.response.header.Access-Control-Allow-Origin': "'*'",
            'method.response.header.Access-Control-Max-Age': `'${cors.maxAgeSeconds}'`,
          }),
        })],
      }),
    });
    for (const type of ['DEFAULT_4XX', 'DEFAULT_5XX']) {
      template.hasResourceProperties('AWS::ApiGateway::GatewayResponse', {
        ResponseType: type,
        ResponseParameters: Match.objectLike({ 'gatewayresponse.header.Access-Control-Expose-Headers': `'${cors.exposeHeaders.join(',')}'` }),
      });
    }
  });

  /** The MOCK methods of the API: resource logical id → the answer it renders. */
  const mockMethods = () => Object.values(template.findResources('AWS::ApiGateway::Method'))
    .map((m) => m.Properties)
    .filter((p) => p.HttpMethod === 'ANY');
  const resourcePaths = () => {
    const resources = template.findResources('AWS::ApiGateway::Resource');
    const pathOf = (ref: unknown): string => {
      const id = (ref as { Ref?: string }).Ref;
      if (!id) return ''; // the root resource (Fn::GetAtt RootResourceId)
      return `${pathOf(resources[id].Properties.ParentId)}/${resources[id].Properties.PathPart}`;
    };
    return pathOf;
  };

  it('answers every path without a route 404 and every other method on a route 405 (problem+json, MOCK: no function runs), so nothing meets "Missing Authentication Token"', () => {
    const pathOf = resourcePaths();
    const byPath = new Map(mockMethods().map((p) => [pathOf(p.ResourceId) || '/', p]));
    const routePaths = [...new Set(routes.map((r) => r.path))];
    // Every resource (root included) has an ANY, and a {proxy+} child with an ANY.
    const allPaths = ['/', ...Object.keys(template.findResources('AWS::ApiGateway::Resource')).map((id) => pathOf({ Ref: id }))];
    for (const path of allPaths) {
      expect(byPath.has(path)).toBe(true);
      // Where a route has a path parameter, `{id}` is the one variable child API Gateway allows.
      if (!path.endsWith('{proxy+}')) expect(byPath.has(`${path === '/' ? '' : path}/{proxy+}`)).toBe(!hasParameterChild(path));
    }
    for (const [path, method] of byPath) {
      const integration = method.Integration;
      expect(integration.Type).toBe('MOCK');
      // Without a template for its content type, API Gateway feeds the raw body to the mock, which
      // then fails ("statusCode should be an integer": a 500). Other types are 415s (NEVER).
      expect(integration.RequestTemplates).toEqual(Object.fromEntries(mockRequestContentTypes.map((t) => [t, '{"statusCode": 200}'])));
      expect(mockRequestContentTypes).toEqual(expect.arrayContaining(['application/json', 'application/x-www-form-urlencoded', 'text/plain', 'multipart/form-data']));
      expect(integration.PassthroughBehavior).toBe('NEVER');
      const [response] = integration.IntegrationResponses;
      expect(response.SelectionPattern).toBeUndefined(); // the default response, whatever the mock returns
      expect(response.ResponseParameters).toMatchObject({
        'method.response.header.Content-Type': "'application/problem+json'",
        'method.response.header.X-Request-Id': 'context.requestId',
        'method.response.header.Access-Control-Allow-Origin': "'*'",
      });
      const body = JSON.parse(response.ResponseTemplates['application/json']);
      expect(body.request_id).toBe('$context.requestId');
      if (routePaths.includes(path)) {
        expect(response.StatusCode).toBe('405');
        expect(body).toMatchObject({ status: 405, title: 'Method not allowed' });
        expect(response.ResponseParameters['method.response.header.Allow']).toBe(`'${routes.filter((r) => r.path === path).map((r) => r.method).join(', ')}'`);
      } else {
        expect(response.StatusCode).toBe('404');
        expect(body).toMatchObject({ status: 404, title: 'Not found', type: 'https://docs.crm.example/problems/not-found' });
      }
      expect(method.MethodResponses).toEqual([{ StatusCode: response.StatusCode, ResponseParameters: Object.fromEntries(Object.keys(response.ResponseParameters).map((k) => [k, true])) }]);
    }
    // Preflights only where a route is (elsewhere OPTIONS is a 404 like any method).
    const options = Object.values(template.findResources('AWS::ApiGateway::Method')).filter((m) => m.Properties.HttpMethod === 'OPTIONS');
    // None on the same-origin settings paths (docs/settings.md).
    expect(options.map((m) => pathOf(m.Properties.ResourceId)).sort()).toEqual([...routePaths].filter(crossOrigin).sort());
  });

  it('compresses answers of compressionMinBytes or more (gzip/deflate), as the local gateway does', () => {
    template.hasResourceProperties('AWS::ApiGateway::RestApi', { MinimumCompressionSize: compressionMinBytes });
  });

  it('answers its own errors (throttle, WAF block, 413, 504, unknown route, any other 4xx/5xx) as problem+json with the request id, CORS, and Retry-After on 429s', () => {
    const responses = Object.values(template.findResources('AWS::ApiGateway::GatewayResponse')).map((r) => r.Properties);
    expect(responses.map((r) => r.ResponseType).sort()).toEqual(Object.keys(gatewayResponses).sort());
    for (const r of responses) {
      const spec = gatewayResponses[r.ResponseType as keyof typeof gatewayResponses];
      expect(r.StatusCode).toBe('status' in spec ? String(spec.status) : undefined);
      expect(r.ResponseParameters).toMatchObject({
        'gatewayresponse.header.Content-Type': "'application/problem+json'",
        'gatewayresponse.header.Access-Control-Allow-Origin': "'*'",
      });
      const template = r.ResponseTemplates['application/json'] as string;
      // The fallbacks carry API Gateway's own message (already a quoted JSON string), the others a fixed detail.
      const body = JSON.parse(template.replace('$context.error.messageString', '"message"'));
      expect(body).toMatchObject({ type: `https://docs.crm.example/problems/${spec.slug}`, title: spec.title, request_id: '$context.requestId' });
      expect(body.status).toBe('status' in spec ? spec.status : undefined);
    }
    const byType = Object.fromEntries(responses.map((r) => [r.ResponseType, r]));
    expect(byType.THROTTLED).toMatchObject({ StatusCode: '429', ResponseParameters: { 'gatewayresponse.header.Retry-After': "'1'" } });
    expect(byType.WAF_FILTERED).toMatchObject({ StatusCode: '429', ResponseParameters: { 'gatewayresponse.header.Retry-After': "'60'" } });
    expect(byType.MISSING_AUTHENTICATION_TOKEN.StatusCode).toBe('404');
    expect(byType.REQUEST_TOO_LARGE.StatusCode).toBe('413');
    expect(byType.INTEGRATION_TIMEOUT.StatusCode).toBe('504');
    // A Lambda time-out is DEFAULT_5XX (502): it carries the retry advice, not only the 504.
    expect(JSON.parse(byType.DEFAULT_5XX.ResponseTemplates['application/json']).detail).toContain('retry with the same Idempotency-Key');
    expect(byType.UNSUPPORTED_MEDIA_TYPE.StatusCode).toBe('415'); // a catch-all mock given a content type it has no template for
  });

  it('puts a WAF in front of the stage that blocks one key\'s flood (X-API-Key, Bearer; case and whitespace variants are one key), one address\'s flood, and keyless floods but never preflights', () => {
    const acl = Object.entries(template.findResources('AWS::WAFv2::WebACL'));
    expect(acl).toHaveLength(1);
    const [aclId, { Properties: props }] = acl[0];
    expect(props).toMatchObject({ Scope: 'REGIONAL', DefaultAction: { Allow: {} } });
    expect(props.Rules.map((r: { Name: string }) => r.Name)).toEqual(['PerAddress', 'PerApiKey', 'PerBearerKey', 'PerAddressWithoutKey']);
    const statement = (name: string) => props.Rules.find((r: { Name: string }) => r.Name === name).Statement.RateBasedStatement;
    const wellFormed = (header: string, regex: string) => ({
      RegexMatchStatement: { FieldToMatch: { SingleHeader: { Name: header } }, RegexString: regex, TextTransformations: [{ Priority: 0, Type: 'LOWERCASE' }] },
    });
    const apiKey = wellFormed('x-api-key', '^crm_(live|pub)_[0-9a-z]+$');
    const bearer = wellFormed('authorization', '^bearer crm_(live|pub)_[0-9a-z]+$');
    // Every address, every request: random well-formed keys from one caller are bounded too.
    expect(statement('PerAddress')).toEqual({ Limit: wafAddressLimitPer5Minutes, EvaluationWindowSec: 300, AggregateKeyType: 'IP' });
    // One address may send one key at the WAF.s key limit and more besides.
    expect(wafAddressLimitPer5Minutes).toBeGreaterThan(5 * wafKeyLimitPerMinute);
    for (const [rule, header, scope] of [['PerApiKey', 'x-api-key', apiKey], ['PerBearerKey', 'authorization', bearer]] as const) {
      expect(statement(rule)).toEqual({
        Limit: wafKeyLimitPerMinute, EvaluationWindowSec: 60, AggregateKeyType: 'CUSTOM_KEYS',
        CustomKeys: [{ Header: { Name: header, TextTransformations: [{ Priority: 0, Type: 'LOWERCASE' }, { Priority: 1, Type: 'COMPRESS_WHITE_SPACE' }] } }],
        ScopeDownStatement: scope,
      });
    }
    expect(statement('PerAddressWithoutKey')).toEqual({
      Limit: 600, EvaluationWindowSec: 60, AggregateKeyType: 'IP',
      ScopeDownStatement: { AndStatement: { Statements: [
        { NotStatement: { Statement: { OrStatement: { Statements: [apiKey, bearer] } } } },
        { NotStatement: { Statement: { ByteMatchStatement: { FieldToMatch: { Method: {} }, PositionalConstraint: 'EXACTLY', SearchString: 'OPTIONS', TextTransformations: [{ Priority: 0, Type: 'NONE' }] } } } },
      ] } },
    });
    // The patterns take every key the system issues, in the spellings the function accepts, and nothing else.
    const { key } = generateApiKey();
    const matches = (regex: string, value: string) => new RegExp(regex).test(value.toLowerCase());
    expect(matches(apiKey.RegexMatchStatement.RegexString, key)).toBe(true);
    expect(matches(apiKey.RegexMatchStatement.RegexString, key.replace('crm_live_', 'crm_pub_'))).toBe(true);
    for (const spelling of [`Bearer ${key}`, `bearer ${key}`, `BEARER ${key}`]) expect(matches(bearer.RegexMatchStatement.RegexString, spelling)).toBe(true);
    for (const spelling of [`Bearer  ${key}`, `Bearer\t${key}`, ` Bearer ${key}`, `Bearer ${key} x`, 'Basic dXNlcjpwYXNz', 'Bearer crm_test_abc']) {
      expect({ spelling, matches: matches(bearer.RegexMatchStatement.RegexString, spelling) }).toEqual({ spelling, matches: false });
    }
    for (const rule of props.Rules) expect(rule.Action).toEqual({ Block: {} }); // answered by the WAF_FILTERED gateway response
    // No sampled requests: they would show the callers' keys in the console.
    for (const v of [props.VisibilityConfig, ...props.Rules.map((r: { VisibilityConfig: unknown }) => r.VisibilityConfig)]) {
      expect(v).toMatchObject({ SampledRequestsEnabled: false });
    }
    // Above the highest plan limit: a key within its plan is never refused at the WAF.
    const { planRateLimits } = JSON.parse(template.findResources('AWS::SSM::Parameter')[logicalId(stack.settings)].Properties.Value) as { planRateLimits: Record<string, number> };
    expect(wafKeyLimitPerMinute).toBeGreaterThan(Math.max(...Object.values(planRateLimits)));
    template.hasResourceProperties('AWS::WAFv2::WebACLAssociation', {
      WebACLArn: { 'Fn::GetAtt': [aclId, 'Arn'] },
      ResourceArn: { 'Fn::Join': ['', Match.arrayWith([{ Ref: logicalId(stack.api) }, '/stages/', { Ref: logicalId(stack.api.deploymentStage) }])] },
    });
  });

  it('gives each routed function less time than API Gateway\'s 29 s integration time-out (a slow function is a 502 from Lambda, never a 504 mid-write)', () => {
    for (const route of routes) expect(functions[route.function].timeoutSeconds).toBeLessThan(29);
  });

  it('sizes the delivery queue\'s visibility time-out at ≥ 6 × its consumer\'s time-out and bounds the consumer\'s concurrency, from the topology', () => {
    const consumers = Object.entries(functions).flatMap(([name, spec]) => spec.events.flatMap((e) => (e.kind === 'queue' ? [{ name: name as FunctionName, spec, event: e }] : [])));
    expect(consumers.length).toBeGreaterThan(0);
    for (const { name, spec, event } of consumers) {
      const visibility = template.findResources('AWS::SQS::Queue')[queueRef(event.queue)].Properties.VisibilityTimeout;
      expect(visibility).toBe(queues[event.queue].visibilityTimeoutSeconds);
      expect(visibility).toBeGreaterThanOrEqual(6 * spec.timeoutSeconds);
      expect(functionProps(name).Timeout).toBe(spec.timeoutSeconds);
      template.hasResourceProperties('AWS::Lambda::EventSourceMapping', {
        FunctionName: { Ref: logicalId(stack.functions[name]) },
        ScalingConfig: { MaximumConcurrency: event.maxConcurrency },
      });
    }
  });

  it('sweeps the due index every minute with an EventBridge rule, reserves lead intake\'s concurrency, and keeps the deliveries indexes keys-only', () => {
    template.hasResourceProperties('AWS::Events::Rule', {
      ScheduleExpression: 'rate(1 minute)',
      Targets: [Match.objectLike({ Arn: { 'Fn::GetAtt': [logicalId(stack.functions.deliverySweeper), 'Arn'] } })],
    });
    // A sweeper that never runs publishes no lag metric: its missing invocations alarm.
    expect(alarmOn('Invocations', [{ Name: 'FunctionName', Value: { Ref: logicalId(stack.functions.deliverySweeper) } }]))
      .toEqual([expect.objectContaining({ Threshold: 1, ComparisonOperator: 'LessThanThreshold', TreatMissingData: 'breaching', Period: 900 })]);
    // A failed sweep is not retried by Lambda (it would overlap the next minute's run).
    template.hasResourceProperties('AWS::Lambda::EventInvokeConfig', {
      FunctionName: { Ref: logicalId(stack.functions.deliverySweeper) }, MaximumRetryAttempts: 0, MaximumEventAgeInSeconds: 60,
    });
    template.hasResourceProperties('AWS::Lambda::Function', { ReservedConcurrentExecutions: 100, Description: functions.leadIntake.description });
    template.hasResourceProperties('AWS::DynamoDB::Table', {
      GlobalSecondaryIndexes: [
        Match.objectLike({ IndexName: 'gsi1', Projection: { ProjectionType: 'KEYS_ONLY' } }),
        Match.objectLike({ IndexName: 'due', KeySchema: [{ AttributeName: 'duePk', KeyType: 'HASH' }, { AttributeName: 'dueAt', KeyType: 'RANGE' }], Projection: { ProjectionType: 'KEYS_ONLY' } }),
        Match.objectLike({ IndexName: 'byCreated', KeySchema: [{ AttributeName: 'pk', KeyType: 'HASH' }, { AttributeName: 'createdAt', KeyType: 'RANGE' }], Projection: { ProjectionType: 'KEYS_ONLY' } }),
      ],
    });
  });

  it('reserves the delivery function at least the sum of its mappings’ maximum concurrency, as AWS advises for SQS event sources', () => {
    const mappings = deliveryMaxConcurrency + slowLaneMaxConcurrency;
    expect(functionProps('webhookDelivery').ReservedConcurrentExecutions).toBe(mappings);
    const mappingsInTemplate = Object.values(template.findResources('AWS::Lambda::EventSourceMapping'))
      .filter((m) => JSON.stringify(m.Properties.FunctionName) === JSON.stringify({ Ref: logicalId(stack.functions.webhookDelivery) }))
      .reduce((sum, m) => sum + Number(m.Properties.ScalingConfig.MaximumConcurrency), 0);
    expect(mappingsInTemplate).toBe(mappings);
    // A deploy that raises the main lane raises the reservation with it; one below the sum is refused; 0 reserves none.
    expect(functionPropsOf(raised().stack, 'webhookDelivery').ReservedConcurrentExecutions).toBe(300 + slowLaneMaxConcurrency);
    expect(() => build({}, { deliveryReservedConcurrency: 100 })).toThrow(/below the delivery function's event sources' maximum concurrency/);
    expect(functionPropsOf(unreserved().stack, 'webhookDelivery').ReservedConcurrentExecutions).toBeUndefined();
  });

  it('protects the prod tables from deletion (other stages: retained, deletable by hand)', () => {
    const tablesOf = (t: Template) => Object.values(t.findResources('AWS::DynamoDB::Table'));
    const prodTables = tablesOf(prodTemplate());
    expect(prodTables).toHaveLength(Object.keys(tables).length);
    for (const t of prodTables) {
      expect(t.DeletionPolicy).toBe('Retain');
      expect(t.Properties.DeletionProtectionEnabled).toBe(true);
    }
    for (const t of tablesOf(template)) expect(t.Properties.DeletionProtectionEnabled).toBe(false);
  });

  const alarmsOf = () => Object.entries(template.findResources('AWS::CloudWatch::Alarm')).map(([id, a]) => ({ id, ...a.Properties }));
  const alarmOn = (metricName: string, dimensions?: unknown) => alarmsOf().filter((a) => a.MetricName === metricName && (dimensions === undefined || JSON.stringify(a.Dimensions) === JSON.stringify(dimensions)));

  const alarmNamed = (id: string) => alarmsOf().find((a) => a.AlarmName === `Crm-test-${id}`)!;
  /** The metrics a math alarm reads: its expression and each metric's name, statistic and period. */
  const mathOf = (id: string) => {
    const metrics = alarmNamed(id).Metrics as { Id: string; Expression?: string; MetricStat?: { Metric: { MetricName: string; Dimensions?: unknown }; Stat: string; Period: number } }[];
    return {
      expression: metrics.find((m) => m.Expression)!.Expression,
      inputs: Object.fromEntries(metrics.filter((m) => m.MetricStat).map((m) => [m.Id, { metric: m.MetricStat!.Metric.MetricName, stat: m.MetricStat!.Stat, period: m.MetricStat!.Period, dimensions: m.MetricStat!.Metric.Dimensions }])),
    };
  };
  const queueDimension = (name: QueueName) => [{ Name: 'QueueName', Value: { 'Fn::GetAtt': [queueRef(name), 'QueueName'] } }];

  it('alarms on the rate of new dead letters by cause, never on the depth (a receiver dead for days would keep it red for ever), and on the delivery failure rate and function errors', () => {
    // No alarm on what a parking queue holds (the bulk one aside: only a re-drive empties it, "alarms on the bulk path").
    for (const queue of ['deliveryDlq', 'fanoutFailures'] as const) {
      expect(alarmsOf().filter((a) => JSON.stringify(a.Dimensions) === JSON.stringify(queueDimension(queue)) && a.MetricName !== 'NumberOfMessagesSent')).toEqual([]);
    }
    // Exhausted deliveries (sent there by the delivery function): a ticket per hour's worth, a page for a surge.
    expect(alarmOn('NumberOfMessagesSent', queueDimension('deliveryDlq')).map((a) => [a.AlarmName, a.Statistic, a.Period, a.Threshold]).sort()).toEqual([
      ['Crm-test-DeliveryDeadLetterSurge', 'Sum', 900, 200],
      ['Crm-test-DeliveryDeadLetters', 'Sum', 3600, 25],
    ]);
    // Stream batches the fan-out gave up on (sent there by Lambda's on-failure destination).
    expect(alarmOn('NumberOfMessagesSent', queueDimension('fanoutFailures'))).toEqual([expect.objectContaining({ AlarmName: 'Crm-test-FanoutFailures', Statistic: 'Sum', Period: 300, Threshold: 1 })]);
    // SQS's own moves (a redrive policy) are not in NumberOfMessagesSent: the delivery function counts the ones it sees go.
    expect(alarmOn('DeliveriesMovedByQueue', [{ Name: 'service', Value: 'crm-integration-api' }])).toEqual([expect.objectContaining({ AlarmName: 'Crm-test-DeliveryQueueDeadLetters', Statistic: 'Sum', Period: 3600, Threshold: 1 })]);
    expect(mathOf('DeliveryFailureRate').expression).toMatch('failures / attempts');
    expect(mathOf('DeliveryFailureRate').expression).toMatch('attempts >= 50'); // no flapping on a quiet night's handful
    for (const name of Object.keys(functions) as FunctionName[]) {
      expect(alarmOn('Errors', [{ Name: 'FunctionName', Value: { Ref: logicalId(stack.functions[name]) } }])).toHaveLength(1);
    }
  });

  it('alarms on the bulk path: a page on the first bulk dead letter (the only copy of an import\'s share) and on a bulk message 15 minutes old', () => {
    // Only the redrive policy feeds the bulk DLQ, and its moves are not in NumberOfMessagesSent: its depth, which only a re-drive lowers.
    expect(alarmOn('NumberOfMessagesSent', queueDimension('bulkDlq'))).toEqual([]);
    expect(alarmOn('ApproximateNumberOfMessagesVisible', queueDimension('bulkDlq'))).toEqual([expect.objectContaining({
      AlarmName: 'Crm-test-BulkDeadLetters', Statistic: 'Maximum', Period: 300, Threshold: 1, ComparisonOperator: 'GreaterThanOrEqualToThreshold', TreatMissingData: 'notBreaching',
    })]);
    // A failed share is a partial batch response, not a function error: the bulk fan-out counts it.
    expect(alarmOn('BulkSharesFailed', [{ Name: 'service', Value: 'crm-integration-api' }])).toEqual([expect.objectContaining({ AlarmName: 'Crm-test-BulkSharesFailed', Statistic: 'Sum', Period: 300, Threshold: 1 })]);
    expect(alarmNamed('BulkSharesFailed').AlarmDescription).toMatch(/^\[page\]/);
    expect(alarmOn('ApproximateAgeOfOldestMessage', queueDimension('bulkQueue'))).toEqual([expect.objectContaining({ AlarmName: 'Crm-test-BulkOldestMessageAge', Threshold: 900 })]);
    expect(alarmNamed('BulkDeadLetters').AlarmDescription).toMatch(/^\[page\]/);
  });

  it('alarms on the e-mail path: a digest job 2 hours old, and the mailer holding back refused addresses (its breaker)', () => {
    expect(alarmOn('ApproximateAgeOfOldestMessage', queueDimension('digestQueue'))).toEqual([expect.objectContaining({
      AlarmName: 'Crm-test-DigestOldestMessageAge', Statistic: 'Maximum', Period: 300, Threshold: 7200, ComparisonOperator: 'GreaterThanThreshold',
    })]);
    expect(alarmOn('MailRejectionsHeld', [{ Name: 'service', Value: 'crm-integration-api' }])).toEqual([expect.objectContaining({ AlarmName: 'Crm-test-MailRejectionsHeld', Statistic: 'Sum', Threshold: 1 })]);
    for (const name of ['DigestOldestMessageAge', 'MailRejectionsHeld']) expect(alarmNamed(name).AlarmDescription).toMatch(/Runbook: docs\/operations\.md#alarm-notices$/);
  });

  it('links every alarm\'s description to its own runbook section in docs/operations.md, and each section exists there (prod\'s backup alarms too)', () => {
    // GitHub's anchors: the heading lower-cased, punctuation dropped, spaces as hyphens.
    const anchors = new Set(readFileSync('docs/operations.md', 'utf8').split('\n').filter((l) => /^#{2,4} /.test(l))
      .map((l) => l.replace(/^#+ /, '').toLowerCase().replace(/[^a-z0-9 _-]/g, '').replace(/ /g, '-')));
    const alarms = [template, prodTemplate()].flatMap((t) => Object.values(t.findResources('AWS::CloudWatch::Alarm')).map((a) => a.Properties as { AlarmName: string; AlarmDescription: string }));
    expect(alarms.some((a) => a.AlarmName.endsWith('-BackupJobsFailed'))).toBe(true);
    for (const { AlarmName, AlarmDescription } of alarms) {
      const section = / Runbook: docs\/operations\.md#([a-z0-9-]+)$/.exec(AlarmDescription)?.[1];
      // 'alarm-runbooks' is the fallback of an alarm no section was written for yet: refused.
      const found = section !== undefined && section !== 'alarm-runbooks' && anchors.has(section);
      expect({ AlarmName, section, found }).toEqual({ AlarmName, section, found: true });
    }
  });

  it('alarms on 5xx as a share of the API\'s requests, over a minimum of requests (5 errors are nothing at 10,000 and everything at 10)', () => {
    const stageDimensions = [{ Name: 'ApiName', Value: `crm-integration-test` }, { Name: 'Stage', Value: { Ref: logicalId(stack.api.deploymentStage) } }];
    expect(alarmOn('5XXError')).toEqual([]);
    const { expression, inputs } = mathOf('Api5xxShare');
    expect(expression).toBe('IF(requests >= 20, 100 * errors / requests, 0)');
    expect(inputs).toEqual({
      requests: { metric: 'Count', stat: 'Sum', period: 300, dimensions: stageDimensions },
      errors: { metric: '5XXError', stat: 'Sum', period: 300, dimensions: stageDimensions },
    });
    expect(alarmNamed('Api5xxShare')).toMatchObject({ Threshold: 5, ComparisonOperator: 'GreaterThanThreshold', EvaluationPeriods: 2 });
  });

  it('alarms on throttled reads or writes of every table', () => {
    for (const name of Object.keys(tables) as TableName[]) {
      const { expression, inputs } = mathOf(`${name}TableThrottles`);
      expect(expression).toBe('FILL(reads, 0) + FILL(writes, 0)');
      const table = [{ Name: 'TableName', Value: { Ref: tableRef(name) } }];
      expect(inputs).toEqual({ reads: { metric: 'ReadThrottleEvents', stat: 'Sum', period: 300, dimensions: table }, writes: { metric: 'WriteThrottleEvents', stat: 'Sum', period: 300, dimensions: table } });
      expect(alarmNamed(`${name}TableThrottles`)).toMatchObject({ Threshold: 1, ComparisonOperator: 'GreaterThanOrEqualToThreshold' });
    }
  });

  it('alarms on fan-out lag, API 5xx and latency, a delivery backlog, Lambda throttles, rate-limiter fail-open and tenant mismatches', () => {
    const fn = (name: FunctionName) => [{ Name: 'FunctionName', Value: { Ref: logicalId(stack.functions[name]) } }];
    expect(alarmOn('IteratorAge', fn('eventFanout'))).toEqual([expect.objectContaining({ Statistic: 'Maximum', Threshold: 300_000 })]);
    // Every stream consumer has its own: the statistics (best effort) open a ticket at 30 minutes behind.
    expect(alarmOn('IteratorAge', fn('deliveryStatistics'))).toEqual([expect.objectContaining({
      AlarmName: 'Crm-test-StatisticsIteratorAge', Statistic: 'Maximum', Period: 300, Threshold: 1_800_000, ComparisonOperator: 'GreaterThanThreshold',
    })]);
    expect(alarmNamed('StatisticsIteratorAge').AlarmDescription).toMatch(/^\[ticket\]/);
    expect(alarmOn('StatisticsUnwritten', [{ Name: 'service', Value: 'crm-integration-api' }])).toEqual([expect.objectContaining({ AlarmName: 'Crm-test-StatisticsUnwritten', Statistic: 'Sum', Threshold: 1 })]);
    expect(alarmNamed('StatisticsUnwritten').AlarmDescription).toMatch(/^\[ticket\]/);
    for (const name of Object.keys(functions) as FunctionName[]) {
      expect(alarmOn('Throttles', fn(name))).toEqual([expect.objectContaining({ Threshold: 1, ComparisonOperator: 'GreaterThanOrEqualToThreshold' })]);
    }
    const stageDimensions = [{ Name: 'ApiName', Value: `crm-integration-test` }, { Name: 'Stage', Value: { Ref: logicalId(stack.api.deploymentStage) } }];
    expect(alarmOn('Latency', stageDimensions)).toEqual([expect.objectContaining({ ExtendedStatistic: 'p99', EvaluationPeriods: 3 })]);
    // Retries never wait in flight (docs/architecture.md#retries-and-dead-letters): the in-flight count and the oldest message's age mean stuck deliveries.
    const deliveryQueue = [{ Name: 'QueueName', Value: { 'Fn::GetAtt': [queueRef('deliveryQueue'), 'QueueName'] } }];
    expect(alarmOn('ApproximateAgeOfOldestMessage', deliveryQueue))
      .toEqual([expect.objectContaining({ Statistic: 'Maximum', Threshold: 1800, ComparisonOperator: 'GreaterThanThreshold', Period: 300 })]);
    expect(alarmOn('ApproximateNumberOfMessagesNotVisible', deliveryQueue))
      .toEqual([expect.objectContaining({ Statistic: 'Maximum', Threshold: 5000, ComparisonOperator: 'GreaterThanThreshold', EvaluationPeriods: 3 })]);
    // The slow lane's own backlog (its small concurrency can fall behind while the main lane is fine).
    const slowLane = [{ Name: 'QueueName', Value: { 'Fn::GetAtt': [queueRef('deliverySlowQueue'), 'QueueName'] } }];
    expect(alarmOn('ApproximateAgeOfOldestMessage', slowLane))
      .toEqual([expect.objectContaining({ Statistic: 'Maximum', Threshold: 1800, ComparisonOperator: 'GreaterThanThreshold', Period: 300 })]);
    expect(alarmOn('ApproximateNumberOfMessagesVisible', deliveryQueue))
      .toEqual([expect.objectContaining({ Statistic: 'Maximum', Threshold: 100, ComparisonOperator: 'GreaterThanThreshold', EvaluationPeriods: 3, Period: 300 })]);
    // Powertools metrics: the functions' namespace and `service` dimension (functions/core/platform/observability.ts).
    for (const metric of ['RateLimitFailOpen', 'TenantMismatch', 'DeliveryOutcomesUnwritten']) {
      expect(alarmOn(metric, [{ Name: 'service', Value: 'crm-integration-api' }])).toEqual([expect.objectContaining({ Namespace: 'CrmIntegrationApi', Statistic: 'Sum', Threshold: 1 })]);
    }
    // Open circuits (docs/architecture.md#fair-delivery): many endpoints opening at once is more likely our egress than their receivers.
    expect(alarmOn('CircuitOpened', [{ Name: 'service', Value: 'crm-integration-api' }]))
      .toEqual([expect.objectContaining({ Namespace: 'CrmIntegrationApi', Statistic: 'Sum', Threshold: 10, Period: 900, ComparisonOperator: 'GreaterThanOrEqualToThreshold' })]);
  });

  it('alarms on LeadRefundFailed and LeadUsageCountFailed: a debit or usage count a lead intake could not put right (docs/leads.md#billing)', () => {
    for (const metric of ['LeadRefundFailed', 'LeadUsageCountFailed']) {
      expect(alarmOn(metric, [{ Name: 'service', Value: 'crm-integration-api' }]))
        .toEqual([expect.objectContaining({ Namespace: 'CrmIntegrationApi', Statistic: 'Sum', Threshold: 1, Period: 300, ComparisonOperator: 'GreaterThanOrEqualToThreshold', AlarmName: `Crm-test-${metric}` })]);
    }
  });

  it('alarms on CaptchaUnavailable: publishable-key leads refused because no CAPTCHA could be verified (docs/leads.md#lead-forms-in-public-pages-publishable-keys)', () => {
    expect(alarmOn('CaptchaUnavailable', [{ Name: 'service', Value: 'crm-integration-api' }]))
      .toEqual([expect.objectContaining({ Namespace: 'CrmIntegrationApi', Statistic: 'Sum', Threshold: 1, Period: 300, ComparisonOperator: 'GreaterThanOrEqualToThreshold' })]);
  });

  it('makes EVERY alarm notify its TLS-only topic (page or ticket) when it fires AND when it clears, and documents every alarm with its severity in the runbook', () => {
    const topics = { page: { Ref: logicalId(stack.monitoring.topics.page) }, ticket: { Ref: logicalId(stack.monitoring.topics.ticket) } };
    const alarms = alarmsOf();
    expect(alarms.length).toBe(stack.monitoring.alarms.length);
    const severities = new Map(stack.monitoring.alarms.map(({ alarm, severity }) => [logicalId(alarm), severity]));
    for (const alarm of alarms) {
      const topic = topics[severities.get(alarm.id)!];
      expect({ alarm: alarm.id, actions: alarm.AlarmActions, ok: alarm.OKActions }).toEqual({ alarm: alarm.id, actions: [topic], ok: [topic] });
    }
    // Both kinds are used: pages are not every alarm.
    expect(new Set(severities.values())).toEqual(new Set(['page', 'ticket']));
    for (const topicRef of Object.values(topics)) {
      template.hasResourceProperties('AWS::SNS::TopicPolicy', {
        Topics: [topicRef],
        PolicyDocument: { Statement: Match.arrayWith([Match.objectLike({ Effect: 'Deny', Condition: { Bool: { 'aws:SecureTransport': 'false' } } })]) },
      });
    }
    template.resourceCountIs('AWS::SNS::Subscription', 0);
    const runbook = readFileSync(path.join(path.dirname(new URL(import.meta.url).pathname), '../../docs/deploy.md'), 'utf8');
    const named = new RegExp(`^(${Object.keys(functions).join('|')}|${Object.keys(tables).join('|')})(?=Errors|Throttles|TableThrottles)`);
    for (const { alarm, severity } of stack.monitoring.alarms) {
      const id = alarm.node.id.replace(named, (m) => (m in functions ? '<function>' : '<table>'));
      const row = runbook.split('\n').find((line) => line.startsWith(`| \`${id}\``));
      expect({ alarm: id, documented: row !== undefined }).toEqual({ alarm: id, documented: true });
      // Per-function alarms page for some functions and ticket for others: the row names both.
      if (!id.startsWith('<function>')) expect({ alarm: id, severity: row!.split('|')[2].trim() }).toEqual({ alarm: id, severity });
    }
  });

  it('outputs the API URL, every table name and queue URL and the settings parameter, and nothing secret', () => {
    const outputs = template.findOutputs('*');
    const expected = [
      outputKeys.apiUrl, outputKeys.settingsParameter,
      ...Object.keys(tables).map((t) => outputKeys.table(t as TableName)),
      ...Object.keys(queues).map((q) => outputKeys.queue(q as QueueName)),
      ...Object.keys(secrets).map((n) => outputKeys.secret(n as SecretName)),
    ];
    expect(Object.keys(outputs).sort()).toEqual(expected.sort());
    // A secret's output is its ARN (Ref), never its value.
    for (const name of Object.keys(secrets) as SecretName[]) expect(outputs[outputKeys.secret(name)].Value).toEqual({ Ref: logicalId(stack.secrets[name]) });
    const others = Object.fromEntries(Object.entries(outputs).filter(([key]) => !Object.keys(secrets).map((n) => outputKeys.secret(n as SecretName)).includes(key)));
    expect(JSON.stringify(others)).not.toMatch(/crm_live_|whsec_|secret|password|token|AKIA/i);
    expect(JSON.stringify(outputs)).not.toMatch(/crm_live_|whsec_|SecretString|resolve:secretsmanager|password|AKIA/i);
    // The base URL, no trailing slash (like the local stack's apiUrl): https://<api>.execute-api.<region>.<suffix>/<stage>
    template.hasOutput(outputKeys.apiUrl, {
      Value: { 'Fn::Join': ['', ['https://', { Ref: logicalId(stack.api) }, '.execute-api.eu-west-1.', { Ref: 'AWS::URLSuffix' }, '/', { Ref: Match.anyValue() }]] },
    });
  });

  it('passes cdk-nag AwsSolutions with no unacknowledged finding', () => {
    expect(synthError).toBeUndefined();
    expect(report.pluginReports.flatMap((p) => p.violations.map((v) => `${p.pluginName}: ${v.ruleName}`))).toEqual([]);
  });

  it('fails synth when a resource breaks an AwsSolutions rule (the checks really run)', () => {
    const careless = build();
    new sqs.Queue(careless.stack, 'CarelessQueue');
    const printed = jest.spyOn(console, 'error').mockImplementation(() => undefined);
    try {
      expect(() => careless.app.synth()).toThrow(/AwsSolutions-SQS4/);
    } finally {
      printed.mockRestore();
    }
    const violations = (JSON.parse(readFileSync(path.join(careless.outdir, 'validation-report.json'), 'utf8')) as ValidationReport)
      .pluginReports.flatMap((p) => p.violations.map((v) => v.ruleName));
    expect(violations).toEqual(expect.arrayContaining(['AwsSolutions-SQS3', 'AwsSolutions-SQS4']));
  });

  it.each(['page', 'ticket'] as const)('lets CloudWatch alarms of this account publish to the %s topic (the TLS-only policy replaces SNS\'s default one)', (severity) => {
    const topicRef = { Ref: logicalId(stack.monitoring.topics[severity]) };
    const [policy] = Object.values(template.findResources('AWS::SNS::TopicPolicy', { Properties: { Topics: [topicRef] } }));
    expect(policy.Properties.PolicyDocument.Statement).toEqual(expect.arrayContaining([{
      Sid: 'AllowCloudWatchAlarms',
      Effect: 'Allow',
      Principal: { Service: 'cloudwatch.amazonaws.com' },
      Action: 'sns:Publish',
      Resource: topicRef,
      Condition: {
        StringEquals: { 'aws:SourceAccount': '123456789012' },
        ArnLike: { 'aws:SourceArn': { 'Fn::Join': ['', ['arn:', { Ref: 'AWS::Partition' }, ':cloudwatch:eu-west-1:123456789012:alarm:*']] } },
      },
    }]));
  });

  it('subscribes the stage\'s alarm mailbox (lib/stages.ts) to both topics, and two deploys in a row with only the stage name keep the subscription', () => {
    const first = prodTemplate().toJSON();
    const second = Template.fromStack(build({ stage: 'prod' }).stack).toJSON();
    const subscriptions = (t: typeof first) => Object.values(t.Resources as Record<string, { Type: string; Properties: { Protocol: string; Endpoint: string } }>)
      .filter((r) => r.Type === 'AWS::SNS::Subscription').map((r) => `${r.Properties.Protocol}:${r.Properties.Endpoint}`);
    expect(subscriptions(first)).toEqual([`email:${stages.prod.alarmEmail}`, `email:${stages.prod.alarmEmail}`]);
    expect(second).toEqual(first);
    // No command-line setting is read for it: the same stage with a stray -c still subscribes the stage's mailbox.
    expect(subscriptions(Template.fromStack(build({ stage: 'prod', alarmEmail: 'someone@else.example' }).stack).toJSON())).toEqual(subscriptions(first));
  });

  it('subscribes the stage\'s pagerEndpoint (https) to the page topic alone', () => {
    const withPager = raisedTemplate();
    withPager.resourcePropertiesCountIs('AWS::SNS::Subscription', { Protocol: 'https', Endpoint: 'https://events.pager.example/integration/abc' }, 1);
    withPager.hasResourceProperties('AWS::SNS::Subscription', { Protocol: 'https', TopicArn: { Ref: Match.stringLikeRegexp('Page') } });
    expect(() => build({}, { pagerEndpoint: 'http://plain.example' })).toThrow(/Invalid pagerEndpoint/);
  });
});

describe('the stage configuration (lib/stages.ts)', () => {
  it('refuses to synthesize without a region, saying how to set one (the CDK would quietly pick us-east-1)', () => {
    expect(() => build({}, { region: undefined })).toThrow(/No region for stage "test": name it in lib\/stages\.ts .* or pass -c region=<region>/);
    expect(() => build({}, { account: undefined })).toThrow(/No account for stage "test": name it in lib\/stages\.ts .* or pass -c account=/);
    expect(() => build({ stage: 'nowhere' })).toThrow(/Stage "nowhere" is not in lib\/stages\.ts: add it there/);
    // A stage that names neither takes them from the command line, checked.
    const fromContext = build({ region: 'eu-north-1', account: '210987654321' }, { region: undefined, account: undefined }).stack;
    expect([fromContext.region, fromContext.account]).toEqual(['eu-north-1', '210987654321']);
    expect(() => build({ region: 'moon-1' }, { region: undefined })).toThrow(/Invalid region "moon-1"/);
    expect(() => build({}, { logRetentionDays: 31 })).toThrow(/Invalid logRetentionDays 31/);
  });

  it('makes `cdk synth` (bin/app.ts) print the stage problem alone, with how to fix it, and exit 1', () => {
    const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), '../..');
    // What `cdk synth -c stage=nowhere` hands the app: its context in CDK_CONTEXT_JSON.
    const run = spawnSync(process.execPath, ['--no-warnings', '--import', 'tsx', 'bin/app.ts'], {
      cwd: root, encoding: 'utf8', env: { ...process.env, NODE_OPTIONS: '', CDK_CONTEXT_JSON: JSON.stringify({ stage: 'nowhere' }), CDK_OUTDIR: mkdtempSync(path.join(tmpdir(), 'crm-synth-')) },
    });
    expect(run.status).toBe(1);
    expect(run.stderr.trim()).toBe('Stage "nowhere" is not in lib/stages.ts: add it there (its account, region, alarm e-mail, concurrency, retention and backup) so every deploy reads the same settings. Known: dev, prod.');
  });

  it('synthesizes the default dev stage with no credentials: pinned region, the deploying account, nothing reserved (a new account\'s limit is 10)', () => {
    const dev = build({ stage: 'dev' });
    expect(dev.stack.region).toBe(stages.dev.region);
    expect(dev.stack.account).toEqual(expect.stringContaining('AccountId')); // a token: whatever account deploys it
    const devTemplate = Template.fromStack(dev.stack);
    for (const fn of Object.values(devTemplate.findResources('AWS::Lambda::Function'))) expect(fn.Properties.ReservedConcurrentExecutions).toBeUndefined();
    devTemplate.allResourcesProperties('AWS::Logs::LogGroup', { RetentionInDays: stages.dev.logRetentionDays });
  });
});

describe('the bulk path: an organization\'s large share of a stream batch (docs/capacity.md "Fan-out lanes")', () => {
  it('has a bulk queue fed to the bulk fan-out one message at a time, with partial batch responses and bounded concurrency, its visibility ≥ 6 × the consumer\'s time-out', () => {
    template.hasResourceProperties('AWS::Lambda::EventSourceMapping', {
      FunctionName: { Ref: logicalId(stack.functions.bulkFanout) },
      EventSourceArn: { 'Fn::GetAtt': [queueRef('bulkQueue'), 'Arn'] },
      FunctionResponseTypes: ['ReportBatchItemFailures'],
      BatchSize: 1,
      ScalingConfig: { MaximumConcurrency: 3 },
    });
    expect(queues.bulkQueue.visibilityTimeoutSeconds).toBeGreaterThanOrEqual(6 * functions.bulkFanout.timeoutSeconds);
    expect(template.findResources('AWS::SQS::Queue')[queueRef('bulkQueue')].Properties).toMatchObject({
      VisibilityTimeout: queues.bulkQueue.visibilityTimeoutSeconds,
      RedrivePolicy: { deadLetterTargetArn: { 'Fn::GetAtt': [queueRef('bulkDlq'), 'Arn'] }, maxReceiveCount: 20 },
    });
    // Both hold the only copy of the share: kept with the stack (its alarms: "alarms on the bulk path" below).
    expect(template.findResources('AWS::SQS::Queue')[queueRef('bulkDlq')].DeletionPolicy).toBe('Retain');
    expect(template.findResources('AWS::SQS::Queue')[queueRef('bulkQueue')].DeletionPolicy).toBe('Retain');
  });

  it('lets the fan-out only send to the bulk queue, and the bulk fan-out only consume it, write delivery records and send to the delivery queue: no endpoints, no CRM tables, no dead letters', () => {
    expect(actionsOn('eventFanout', queueRef('bulkQueue'))).toEqual(['sqs:SendMessage']);
    expect(actionsOn('bulkFanout', queueRef('bulkQueue')).sort()).toEqual(['sqs:DeleteMessage', 'sqs:GetQueueAttributes', 'sqs:ReceiveMessage']);
    expect(actionsOn('bulkFanout', queueRef('deliveryQueue'))).toEqual(['sqs:SendMessage']);
    // Exactly the batch read and the batch puts: no GetItem, Query, UpdateItem or DeleteItem, and no index.
    expect(actionsOn('bulkFanout', tableRef('deliveries')).sort()).toEqual(['dynamodb:BatchGetItem', 'dynamodb:BatchWriteItem']);
    const onDeliveries = statementsOf('bulkFanout').filter((st) => st.resources.includes(`"${tableRef('deliveries')}"`));
    expect(onDeliveries).not.toHaveLength(0);
    expect(onDeliveries.map((st) => st.resources).join()).not.toContain('index');
    for (const table of ['endpoints', 'clients', 'workOrders', 'organizations'] as const) expect(actionsOn('bulkFanout', tableRef(table))).toEqual([]);
    for (const queue of ['bulkDlq', 'deliveryDlq', 'deliverySlowQueue', 'fanoutFailures'] as const) expect(actionsOn('bulkFanout', queueRef(queue))).toEqual([]);
    // Nobody else touches the bulk queue.
    const bound = (Object.keys(functions) as FunctionName[]).filter((name) => actionsOn(name, queueRef('bulkQueue')).length > 0);
    expect(bound.sort()).toEqual(['bulkFanout', 'eventFanout']);
  });

  it('reserves the bulk fan-out at least its mapping\'s maximum concurrency (a stage may set more, or 0 for none; less is refused)', () => {
    expect(functionProps('bulkFanout').ReservedConcurrentExecutions).toBe(3);
    expect(functionPropsOf(raised().stack, 'bulkFanout').ReservedConcurrentExecutions).toBe(20);
    expect(() => build({}, { bulkReservedConcurrency: 2 })).toThrow(/bulkReservedConcurrency 2 is below the bulk fan-out's event sources' maximum concurrency \(3 in all\)/);
    expect(functionPropsOf(unreserved().stack, 'bulkFanout').ReservedConcurrentExecutions).toBeUndefined();
  });
});

describe('least privilege (a later grant that widens access fails here)', () => {
  const everyStatement = () => Object.values(template.findResources('AWS::IAM::Policy'))
    .flatMap((p) => p.Properties.PolicyDocument.Statement as { Action: string | string[] }[]).flatMap((st) => ([] as string[]).concat(st.Action));

  it('grants no dynamodb:Scan (only the local stack scans), no DescribeTable and no wildcard action to any role', () => {
    const actions = everyStatement();
    expect(actions.filter((a) => /^dynamodb:(Scan|DescribeTable|\*)$|\*/.test(a))).toEqual([]);
  });

  it('grants every function exactly the table actions of its access (reads never include Scan) and queue actions of its binding', () => {
    const reads = ['dynamodb:GetItem', 'dynamodb:BatchGetItem', 'dynamodb:Query', 'dynamodb:ConditionCheckItem'];
    const writes = ['dynamodb:PutItem', 'dynamodb:UpdateItem', 'dynamodb:DeleteItem', 'dynamodb:BatchWriteItem', 'dynamodb:ConditionCheckItem'];
    for (const [name, spec] of Object.entries(functions) as [FunctionName, (typeof functions)[FunctionName]][]) {
      for (const table of Object.keys(tables) as TableName[]) {
        const access = (spec.tables as Partial<Record<TableName, TableAccess>>)[table];
        const updates = ['dynamodb:PutItem', 'dynamodb:UpdateItem', 'dynamodb:ConditionCheckItem'];
        const expected = access === undefined ? [] : access === 'readFields' ? ['dynamodb:Query']
          : typeof access === 'object' ? [...new Set([access].flat().flatMap((grant) => [...grant.actions, ...(grant.index?.actions ?? [])]))]
            : [...new Set([...(access === 'write' ? [] : reads), ...(access === 'read' ? [] : access === 'readUpdate' ? updates : writes)])];
        // The stream's reads (on the stream's ARN) come with the stream event source, not the binding.
        const streamed = spec.events.some((e) => e.kind === 'stream' && e.table === table);
        const actions = actionsOn(name, tableRef(table)).filter((a) => !(streamed && streamReadActions.includes(a)));
        expect({ name, table, actions: actions.sort() }).toEqual({ name, table, actions: expected.sort() });
      }
      for (const queue of Object.keys(queues) as QueueName[]) {
        const access = (spec.queues as Partial<Record<QueueName, string>>)[queue];
        const onFailure = spec.events.some((e) => e.kind === 'stream' && 'onFailure' in e && e.onFailure === queue);
        const expected = [
          ...(access === 'send' || access === 'sendAndConsume' || onFailure ? ['sqs:SendMessage'] : []),
          ...(access === 'consume' || access === 'sendAndConsume' || access === 'consumeWithBackoff' ? ['sqs:ReceiveMessage', 'sqs:DeleteMessage', 'sqs:GetQueueAttributes'] : []),
          ...(access === 'consumeWithBackoff' ? ['sqs:ChangeMessageVisibility'] : []),
        ];
        expect({ name, queue, actions: actionsOn(name, queueRef(queue)).sort() }).toEqual({ name, queue, actions: expected.sort() });
      }
    }
  });

  it('gives the settings API no way to receive or delete dead letters (a tenant\'s redelivery never passes over the shared queue)', () => {
    expect(actionsOn('settingsApi', queueRef('deliveryDlq'))).toEqual([]);
    expect(functionProps('settingsApi').Environment.Variables[queues.deliveryDlq.envVar]).toBeUndefined();
  });

  it('keeps the signing secrets out of lead intake\'s reach: endpoints live in their own table, which only delivery, the fan-out, the daily digest and the settings API may touch', () => {
    expect(actionsOn('leadIntake', tableRef('endpoints'))).toEqual([]);
    // Lead intake never deletes organization data (keys, CAPTCHA secrets, wallet).
    expect(actionsOn('leadIntake', tableRef('organizations'))).not.toEqual(expect.arrayContaining(['dynamodb:DeleteItem']));
    expect(actionsOn('leadIntake', tableRef('organizations'))).not.toEqual(expect.arrayContaining(['dynamodb:BatchWriteItem']));
    expect(allActions('leadIntake').filter((a) => a.startsWith('kms:'))).toEqual([]);
    const bound = (Object.keys(functions) as FunctionName[]).filter((name) => actionsOn(name, tableRef('endpoints')).length > 0);
    expect(bound.sort()).toEqual(['dailyDigest', 'eventFanout', 'settingsApi', 'webhookDelivery']);
    // The daily digest names endpoints by URL: the fan-out's projection, no more.
    expect(conditionsOn('eventFanout', tableRef('endpoints'))).toEqual(expect.arrayContaining(conditionsOn('dailyDigest', tableRef('endpoints'))));
    expect(actionsOn('dailyDigest', tableRef('endpoints'))).toEqual(['dynamodb:Query']);
    // Of the organizations table (keys, wallets) the digest reads the recipients' digest index partition alone.
    expect(actionsOn('dailyDigest', tableRef('organizations'))).toEqual(['dynamodb:Query']);
    expect(conditionsOn('dailyDigest', tableRef('organizations'))).toEqual([{ 'ForAllValues:StringLike': { 'dynamodb:LeadingKeys': [DIGEST_INDEX_PK] }, Null: { 'dynamodb:LeadingKeys': 'false' } }]);
    // The fan-out counts lead notices against the cap: UpdateItem and GetItem, nothing else of the rate-limit table.
    expect(actionsOn('eventFanout', tableRef('rateWindows')).sort()).toEqual(['dynamodb:GetItem', 'dynamodb:UpdateItem']);
    expect(actionsOn('eventFanout', tableRef('endpoints'))).not.toContain('dynamodb:PutItem');
    // Only delivery (to sign) and the settings API (to rotate) may read whole endpoint items: the
    // fan-out's one statement is a Query projecting the routing fields, `secrets` not among them.
    const unconditionalReaders = (Object.keys(functions) as FunctionName[]).filter((name) => conditionsOn(name, tableRef('endpoints')).some((c) => c === undefined));
    expect(unconditionalReaders.sort()).toEqual(['settingsApi', 'webhookDelivery']);
    // Its other statement writes the hand-off marker's fields alone (UpdateItem, never a Put or a Delete).
    expect(conditionsOn('eventFanout', tableRef('endpoints'))).toEqual([{
      'ForAllValues:StringEquals': { 'dynamodb:Attributes': [...tables.endpoints.readableFields] },
      StringEquals: { 'dynamodb:Select': 'SPECIFIC_ATTRIBUTES' },
    }, {
      'ForAllValues:StringEquals': { 'dynamodb:Attributes': [...handOffMarkerFields] },
      // Nor does it return the item it writes (its signing secrets): no ALL_OLD or ALL_NEW.
      StringEqualsIfExists: { 'dynamodb:Select': 'SPECIFIC_ATTRIBUTES', 'dynamodb:ReturnValues': ['NONE', 'UPDATED_OLD', 'UPDATED_NEW'] },
    }]);
    expect(actionsOn('eventFanout', tableRef('endpoints')).sort()).toEqual(['dynamodb:Query', 'dynamodb:UpdateItem']);
    expect(tables.endpoints.readableFields).not.toContain('secrets');
    // The delivery side needs no organization data (API keys, CAPTCHA secrets): no grant on that table.
    for (const name of ['eventFanout', 'webhookDelivery', 'deliverySweeper'] as const) expect(actionsOn(name, tableRef('organizations'))).toEqual([]);
  });
});

describe('recovery', () => {
  it('retains the dead-letter and fan-out-failure queues and the bulk queue with the stack (the only copy of what failed, or of an import\'s share); the other working queues go with it', () => {
    const resources = template.findResources('AWS::SQS::Queue');
    for (const name of Object.keys(queues) as QueueName[]) {
      const parking = !('deadLetter' in queues[name]) || 'holdsOnlyCopy' in queues[name];
      expect({ name, policy: resources[queueRef(name)].DeletionPolicy }).toEqual({ name, policy: parking ? 'Retain' : 'Delete' });
    }
  });

  it('backs the durable tables up weekly and monthly with AWS Backup when the stage says so, kept and copied as the stage says; every table keeps its point-in-time window', () => {
    template.resourceCountIs('AWS::Backup::BackupPlan', 0);
    const withBackup = raisedTemplate();
    const copyVault = { 'Fn::Join': ['', ['arn:', { Ref: 'AWS::Partition' }, ':backup:eu-central-1:123456789012:backup-vault:crm-test-copy']] };
    // The raised stage's settings (28 and 180 days, 7 days of point-in-time recovery), not prod's.
    withBackup.hasResourceProperties('AWS::Backup::BackupPlan', {
      BackupPlan: {
        BackupPlanName: 'crm-test',
        BackupPlanRule: [
          Match.objectLike({ RuleName: 'Weekly', ScheduleExpression: 'cron(0 3 ? * SUN *)', Lifecycle: { DeleteAfterDays: 28 }, CopyActions: [{ DestinationBackupVaultArn: copyVault, Lifecycle: { DeleteAfterDays: 28 } }] }),
          Match.objectLike({ RuleName: 'Monthly', ScheduleExpression: 'cron(0 3 1 * ? *)', Lifecycle: { DeleteAfterDays: 180 }, CopyActions: [{ DestinationBackupVaultArn: copyVault, Lifecycle: { DeleteAfterDays: 180 } }] }),
        ],
      },
    });
    for (const props of Object.values(withBackup.findResources('AWS::DynamoDB::Table')).map((t) => t.Properties)) {
      expect(props.PointInTimeRecoverySpecification).toEqual({ PointInTimeRecoveryEnabled: true, RecoveryPeriodInDays: 7 });
    }
    withBackup.hasResource('AWS::Backup::BackupVault', { DeletionPolicy: 'Retain' });
    // Generated, not crm-<stage>: the retained vault would make a deploy after a stack deletion fail.
    const [vault] = Object.entries(withBackup.findResources('AWS::Backup::BackupVault'));
    expect(vault[1].Properties.BackupVaultName).not.toBe('crm-test');
    const outputs = withBackup.findOutputs('*');
    expect(outputs[outputKeys.backupVault].Value).toEqual({ 'Fn::GetAtt': [vault[0], 'BackupVaultName'] });
    // A role AWS Backup can restore with, its ARN an output for `aws backup start-restore-job`.
    const [restoreRoleId, restoreRole] = Object.entries(withBackup.findResources('AWS::IAM::Role'))
      .find(([, role]) => JSON.stringify(role.Properties.ManagedPolicyArns ?? []).includes('AWSBackupServiceRolePolicyForRestores'))!;
    expect(JSON.stringify(restoreRole.Properties.AssumeRolePolicyDocument)).toContain('backup.amazonaws.com');
    expect(outputs[outputKeys.backupRestoreRole].Value).toEqual({ 'Fn::GetAtt': [restoreRoleId, 'Arn'] });
    // Failed backup and copy jobs of that vault open a ticket.
    for (const metric of ['NumberOfBackupJobsFailed', 'NumberOfCopyJobsFailed']) {
      withBackup.hasResourceProperties('AWS::CloudWatch::Alarm', {
        Namespace: 'AWS/Backup', MetricName: metric, Dimensions: [{ Name: 'BackupVaultName', Value: { 'Fn::GetAtt': [vault[0], 'BackupVaultName'] } }],
        AlarmActions: [{ Ref: Match.stringLikeRegexp('Ticket') }],
      });
    }
    // Exactly the durable tables: organizations, endpoints, clients, work orders; none whose every item expires.
    const selections = Object.values(withBackup.findResources('AWS::Backup::BackupSelection'));
    expect(selections).toHaveLength(1);
    const selected = selections[0].Properties.BackupSelection.Resources.map((arn: { 'Fn::GetAtt': [string, string] }) => arn['Fn::GetAtt'][0]).sort();
    expect(selected).toEqual((['organizations', 'endpoints', 'clients', 'workOrders'] as TableName[]).map(tableRef).sort());
    for (const [name, spec] of Object.entries(tables) as [TableName, TableSpec][]) {
      expect({ name, selected: selected.includes(tableRef(name)) }).toEqual({ name, selected: !spec.everyItemExpires });
      // A table left out for its expiring items must have a TTL to expire them by.
      if (spec.everyItemExpires) expect({ name, ttl: spec.ttlAttribute }).toEqual({ name, ttl: expect.any(String) });
    }
    // A stage may keep one kind of point only, and must keep one.
    const monthlyOnly = templateOf(build({}, { backup: { weeklyRetentionDays: 0, monthlyRetentionDays: 365 } }).stack);
    monthlyOnly.hasResourceProperties('AWS::Backup::BackupPlan', { BackupPlan: { BackupPlanRule: [Match.objectLike({ RuleName: 'Monthly', Lifecycle: { DeleteAfterDays: 365 }, CopyActions: Match.absent() })] } });
    expect(() => build({}, { backup: { weeklyRetentionDays: 0, monthlyRetentionDays: 0 } })).toThrow(/keeps nothing/);
    expect(() => build({}, { pointInTimeRecoveryDays: 36 })).toThrow(/pointInTimeRecoveryDays 36/);
    expect(() => build({}, { backup: { weeklyRetentionDays: 35, monthlyRetentionDays: 365, copyToRegion: 'eu-west-1' } })).toThrow(/copyToRegion .* its own region/);
  });

  it('takes prod\'s backup retention from lib/stages.ts', () => {
    const rules = Object.values(prodTemplate().findResources('AWS::Backup::BackupPlan'))[0].Properties.BackupPlan.BackupPlanRule;
    const backup = stages.prod.backup!;
    expect(rules.map((r: { RuleName: string; Lifecycle: { DeleteAfterDays: number } }) => [r.RuleName, r.Lifecycle.DeleteAfterDays]))
      .toEqual([['Weekly', backup.weeklyRetentionDays], ['Monthly', backup.monthlyRetentionDays]]);
    // Monthly points (and their copies) go cold after the stage's days; weekly ones, kept 35 days, stay warm (cold keeps 90 at least).
    const [weekly, monthly] = rules as { Lifecycle: Record<string, number>; CopyActions: { Lifecycle: Record<string, number> }[] }[];
    expect(monthly.Lifecycle).toEqual({ DeleteAfterDays: 365, MoveToColdStorageAfterDays: backup.monthlyColdAfterDays });
    expect(monthly.CopyActions[0].Lifecycle).toEqual({ DeleteAfterDays: backup.copyRetentionDays, MoveToColdStorageAfterDays: backup.monthlyColdAfterDays });
    expect(weekly.Lifecycle.MoveToColdStorageAfterDays).toBeUndefined();
    expect(() => build({}, { backup: { weeklyRetentionDays: 35, monthlyRetentionDays: 100, monthlyColdAfterDays: 30 } })).toThrow(/at least monthlyColdAfterDays \+ 90 \(120\)/);
  });

  it('runs the sweeper one at a time (reserved concurrency 1: an overlapping run is refused, and not retried)', () => {
    expect(functionProps('deliverySweeper').ReservedConcurrentExecutions).toBe(1);
  });

  it('on every stage, a queue-fed function reserves nothing or at least its mappings\' maximum concurrency (+1 when it also runs on a schedule): its mappings are never throttled', () => {
    const checked: string[] = [];
    for (const [stage, built] of [...Object.keys(stages).map((name) => [name, name === 'prod' ? prod().stack : build({ stage: name }).stack] as const), ['test', stack] as const, ['raised', raised().stack] as const]) {
      const t = templateOf(built);
      const mappings = Object.values(t.findResources('AWS::Lambda::EventSourceMapping'));
      const rules = Object.values(t.findResources('AWS::Events::Rule'));
      for (const name of Object.keys(functions) as FunctionName[]) {
        const id = built.getLogicalId(built.functions[name].node.defaultChild as CfnFunction);
        const fed = mappings.filter((m) => m.Properties.FunctionName?.Ref === id && String(JSON.stringify(m.Properties.EventSourceArn)).includes('Queue'));
        if (!fed.length) continue;
        const scheduled = rules.some((r) => JSON.stringify(r.Properties.Targets ?? []).includes(`"${id}"`));
        const needed = fed.reduce((sum, m) => sum + Number(m.Properties.ScalingConfig?.MaximumConcurrency ?? Infinity), 0) + (scheduled ? 1 : 0);
        const reserved = t.findResources('AWS::Lambda::Function')[id].Properties.ReservedConcurrentExecutions as number | undefined;
        expect({ stage, name, reserved: reserved === undefined || reserved >= needed ? 'enough' : `${reserved} < ${needed}` }).toEqual({ stage, name, reserved: 'enough' });
        checked.push(`${stage} ${name}`);
      }
    }
    // The daily digest is among them: a schedule and the digest queue.
    expect(checked).toContain('prod dailyDigest');
  });
});

describe('observability', () => {
  it('sets a retention on every log group the stack causes: the functions\', API Gateway\'s access and execution logs, the WAF\'s', () => {
    const groups = template.findResources('AWS::Logs::LogGroup');
    for (const [id, group] of Object.entries(groups)) expect({ id, days: group.Properties.RetentionInDays }).toEqual({ id, days: 30 });
    // Every function writes to a group of the stack (not the implicit /aws/lambda one).
    for (const name of Object.keys(functions) as FunctionName[]) expect(Object.keys(groups)).toContain(functionProps(name).LoggingConfig.LogGroup.Ref);
    const names = Object.values(groups).map((g) => JSON.stringify(g.Properties.LogGroupName ?? ''));
    expect(names).toEqual(expect.arrayContaining([
      JSON.stringify({ 'Fn::Join': ['', ['API-Gateway-Execution-Logs_', { Ref: logicalId(stack.api) }, '/test']] }),
      JSON.stringify('aws-waf-logs-Crm-test'),
    ]));
    // Created before the stage, or API Gateway would create it first (outside the stack, kept for ever).
    const [stageId] = Object.keys(template.findResources('AWS::ApiGateway::Stage'));
    const executionId = Object.entries(groups).find(([, g]) => JSON.stringify(g.Properties.LogGroupName ?? '').includes('Execution'))![0];
    expect(template.toJSON().Resources[stageId].DependsOn).toContain(executionId);
  });

  it('logs the WAF\'s decisions with the headers that carry API keys redacted', () => {
    const [acl] = Object.keys(template.findResources('AWS::WAFv2::WebACL'));
    template.hasResourceProperties('AWS::WAFv2::LoggingConfiguration', {
      ResourceArn: { 'Fn::GetAtt': [acl, 'Arn'] },
      RedactedFields: [{ SingleHeader: { Name: 'x-api-key' } }, { SingleHeader: { Name: 'authorization' } }],
      // Blocked and counted requests only: allowed ones (IPs, user agents) are not kept.
      LoggingFilter: { DefaultBehavior: 'DROP', Filters: [{ Behavior: 'KEEP', Requirement: 'MEETS_ANY', Conditions: [{ ActionCondition: { Action: 'BLOCK' } }, { ActionCondition: { Action: 'COUNT' } }] }] },
    });
  });

  it('builds a dashboard from the topology: every function, queue and table has its row, and the alarms their states', () => {
    const [dashboard] = Object.values(template.findResources('AWS::CloudWatch::Dashboard'));
    expect(dashboard.Properties.DashboardName).toBe('crm-test');
    const body = JSON.stringify(dashboard.Properties.DashboardBody);
    for (const name of [...Object.keys(functions), ...Object.keys(queues), ...Object.keys(tables)]) expect(body).toContain(`${name}: `);
    for (const metric of ['ConcurrentExecutions', 'ApproximateAgeOfOldestMessage', '5XXError', 'IteratorAge', 'ThrottleEvents', 'DeliveriesThrottled']) expect(body).toContain(metric);
    // Each stream consumer's lag.
    for (const name of ['eventFanout', 'deliveryStatistics']) expect(body).toContain(`${name}: iterator age (max)`);
    for (const { alarm } of stack.monitoring.alarms) expect(body).toContain(`"${logicalId(alarm)}"`);
  });
});

describe('lead intake on the clients table, and preflight mocks', () => {
  it('grants lead intake writes, GetItem on clients and Query on the match index only: no Scan, no BatchGetItem', () => {
    const onClients = statementsOf('leadIntake').filter((s) => s.resources.includes(`"${tableRef('clients')}"`));
    const onIndex = onClients.filter((s) => s.resources.includes('/index/'));
    const onTable = onClients.filter((s) => !s.resources.includes('/index/'));
    expect(onTable.flatMap((s) => s.actions).sort()).toEqual(['dynamodb:ConditionCheckItem', 'dynamodb:GetItem', 'dynamodb:PutItem', 'dynamodb:UpdateItem']);
    expect(onIndex.map((s) => s.actions)).toEqual([['dynamodb:Query']]);
    expect(onIndex[0].resources).toContain('"/index/match"');
    for (const action of ['dynamodb:Scan', 'dynamodb:BatchGetItem']) expect(onClients.flatMap((s) => s.actions)).not.toContain(action);
  });

  it('converts a preflight\'s body to text for its mock, as the catch-alls do (binaryMediaTypes)', () => {
    const preflights = Object.values(template.findResources('AWS::ApiGateway::Method')).filter((m) => m.Properties.HttpMethod === 'OPTIONS');
    expect(preflights.length).toBeGreaterThan(0);
    for (const method of preflights) expect(method.Properties.Integration).toMatchObject({ Type: 'MOCK', ContentHandling: 'CONVERT_TO_TEXT' });
  });
});
