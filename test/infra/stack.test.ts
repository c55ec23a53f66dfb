/**
 * The synthesized CloudFormation template (bundling skipped): what the topology promises is there,
 * each function can do exactly what its job needs and no more, and cdk-nag passes.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, it, expect, beforeAll, afterAll, jest } from '@jest/globals';
import type { AppProps } from 'aws-cdk-lib';
import { Match, Template } from 'aws-cdk-lib/assertions';
import type { CfnRole } from 'aws-cdk-lib/aws-iam';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import { buildApp } from '../../lib/stacks/app.js';
import type { CrmStack } from '../../lib/stacks/crm-stack.js';
import { cors, functions, outputKeys, queues, tables, type FunctionName, type QueueName, type TableName } from '../../lib/topology.js';

const outdirs: string[] = [];
/** Builds the app as `cdk synth` does, minus esbuild, into a scratch directory. */
function build(context: Record<string, unknown> = {}): ReturnType<typeof buildApp> & { outdir: string } {
  const outdir = mkdtempSync(path.join(tmpdir(), 'crm-infra-'));
  outdirs.push(outdir);
  const props: AppProps = { outdir, context: { 'aws:cdk:bundling-stacks': [], stage: 'test', ...context } };
  return { ...buildApp(props), outdir };
}

interface ValidationReport { pluginReports: { pluginName: string; violations: { ruleName: string }[] }[] }

let stack: CrmStack;
let template: Template;
let synthError: unknown;
let report: ValidationReport;

beforeAll(() => {
  const built = build();
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

/** Every IAM statement attached to a function's role, its resources rendered as one string. */
function statementsOf(name: FunctionName): { actions: string[]; resources: string }[] {
  const roleId = stack.getLogicalId(stack.functions[name].role!.node.defaultChild as CfnRole);
  return Object.values(template.findResources('AWS::IAM::Policy'))
    .filter((policy) => JSON.stringify(policy.Properties.Roles) === JSON.stringify([{ Ref: roleId }]))
    .flatMap((policy) => (policy.Properties.PolicyDocument.Statement as { Action: string | string[]; Resource: unknown }[]))
    .map((s) => ({ actions: ([] as string[]).concat(s.Action), resources: JSON.stringify(s.Resource) }));
}
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
      expect(props.PointInTimeRecoverySpecification).toEqual({ PointInTimeRecoveryEnabled: true });
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
      RedrivePolicy: { deadLetterTargetArn: { 'Fn::GetAtt': [queueRef('deliveryDlq'), 'Arn'] }, maxReceiveCount: 5 },
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
        BatchSize: 100,
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
      ScalingConfig: { MaximumConcurrency: 10 },
    });
    template.resourceCountIs('AWS::Lambda::EventSourceMapping', 3);
  });

  it('lets lead intake write clients but never send to a queue or touch deliveries', () => {
    expect(actionsOn('leadIntake', tableRef('clients'))).toContain('dynamodb:PutItem');
    expect(actionsOn('leadIntake', tableRef('clients'))).not.toContain('dynamodb:GetItem');
    expect(actionsOn('leadIntake', tableRef('deliveries'))).toEqual([]);
    expect(allActions('leadIntake')).not.toContain('sqs:SendMessage');
    expect(allActions('leadIntake').filter((a) => a.startsWith('sqs:'))).toEqual([]);
  });

  it('lets the fan-out read the streams and organizations and queue deliveries, but never write clients', () => {
    for (const table of ['clients', 'workOrders'] as const) {
      expect(actionsOn('eventFanout', tableRef(table)).filter((a) => !streamReadActions.includes(a))).toEqual([]);
    }
    expect(actionsOn('eventFanout', tableRef('organizations'))).toContain('dynamodb:Query');
    expect(actionsOn('eventFanout', tableRef('organizations'))).not.toContain('dynamodb:PutItem');
    expect(actionsOn('eventFanout', tableRef('deliveries'))).toEqual(expect.arrayContaining(['dynamodb:PutItem', 'dynamodb:Query']));
    expect(actionsOn('eventFanout', queueRef('deliveryQueue'))).toContain('sqs:SendMessage');
    expect(actionsOn('eventFanout', queueRef('deliveryQueue'))).not.toContain('sqs:DeleteMessage');
  });

  it('lets delivery consume and re-time its queue, but never touch the clients table or send elsewhere', () => {
    expect(actionsOn('webhookDelivery', queueRef('deliveryQueue'))).toEqual(
      expect.arrayContaining(['sqs:ReceiveMessage', 'sqs:ChangeMessageVisibility', 'sqs:DeleteMessage']),
    );
    expect(actionsOn('webhookDelivery', tableRef('clients'))).toEqual([]);
    expect(actionsOn('webhookDelivery', tableRef('workOrders'))).toEqual([]);
    expect(allActions('webhookDelivery')).not.toContain('sqs:SendMessage');
  });

  it('names exactly the bound tables and queues in env vars, and points every function at the settings parameter it may read', () => {
    for (const [name, spec] of Object.entries(functions) as [FunctionName, (typeof functions)[FunctionName]][]) {
      const env = functionProps(name).Environment.Variables as Record<string, unknown>;
      const bound = [
        ...Object.keys(spec.tables).map((t) => tables[t as TableName].envVar),
        ...Object.keys(spec.queues).map((q) => queues[q as QueueName].envVar),
      ];
      expect(Object.keys(env).sort()).toEqual([...bound, 'NODE_OPTIONS', 'POWERTOOLS_SERVICE_NAME', 'SETTINGS_PARAMETER', 'STAGE'].sort());
      expect(env.SETTINGS_PARAMETER).toEqual({ Ref: logicalId(stack.settings) });
      expect(allActions(name)).toContain('ssm:GetParameter');
    }
    const parameter = template.findResources('AWS::SSM::Parameter')[logicalId(stack.settings)].Properties;
    expect(parameter).toMatchObject({ Name: '/crm/test/settings', Type: 'String' });
    expect(JSON.parse(parameter.Value)).toMatchObject({ stage: 'test', local: false, defaultRateLimitPerMinute: 100 });
  });

  it('serves GET and POST /api/webhook/leads on a regional API with throttling, JSON access logs and tracing', () => {
    template.hasResourceProperties('AWS::ApiGateway::RestApi', { EndpointConfiguration: { Types: ['REGIONAL'] } });
    template.hasResourceProperties('AWS::ApiGateway::Stage', {
      StageName: 'test',
      TracingEnabled: true,
      AccessLogSetting: { DestinationArn: Match.anyValue(), Format: Match.stringLikeRegexp('^\\{.*"requestId"') },
      MethodSettings: Match.arrayWith([Match.objectLike({ ThrottlingRateLimit: 200, ThrottlingBurstLimit: 400 })]),
    });
    for (const method of ['GET', 'POST']) {
      template.hasResourceProperties('AWS::ApiGateway::Method', {
        HttpMethod: method,
        AuthorizationType: 'NONE',
        Integration: Match.objectLike({ Type: 'AWS_PROXY', IntegrationHttpMethod: 'POST' }),
      });
    }
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

  it('alarms on dead-letter depth, fan-out failures, the delivery failure rate and function errors, all notifying a TLS-only topic', () => {
    template.hasResourceProperties('AWS::CloudWatch::Alarm', {
      MetricName: 'ApproximateNumberOfMessagesVisible',
      Dimensions: [{ Name: 'QueueName', Value: { 'Fn::GetAtt': [queueRef('deliveryDlq'), 'QueueName'] } }],
      Threshold: 1,
      ComparisonOperator: 'GreaterThanOrEqualToThreshold',
    });
    template.hasResourceProperties('AWS::CloudWatch::Alarm', { Dimensions: [{ Name: 'QueueName', Value: { 'Fn::GetAtt': [queueRef('fanoutFailures'), 'QueueName'] } }] });
    template.hasResourceProperties('AWS::CloudWatch::Alarm', { Metrics: Match.arrayWith([Match.objectLike({ Expression: Match.stringLikeRegexp('failures / attempts') })]) });
    template.hasResourceProperties('AWS::CloudWatch::Alarm', {
      MetricName: 'Errors',
      Dimensions: [{ Name: 'FunctionName', Value: { Ref: logicalId(stack.functions.webhookDelivery) } }],
    });
    const topicRef = { Ref: logicalId(stack.alarmTopic) };
    template.allResourcesProperties('AWS::CloudWatch::Alarm', { AlarmActions: [topicRef] });
    template.hasResourceProperties('AWS::SNS::TopicPolicy', {
      Topics: [topicRef],
      PolicyDocument: { Statement: Match.arrayWith([Match.objectLike({ Effect: 'Deny', Condition: { Bool: { 'aws:SecureTransport': 'false' } } })]) },
    });
    template.resourceCountIs('AWS::SNS::Subscription', 0);
  });

  it('outputs the API URL, every table name and queue URL and the settings parameter, and nothing secret', () => {
    const outputs = template.findOutputs('*');
    const expected = [
      outputKeys.apiUrl, outputKeys.settingsParameter,
      ...Object.keys(tables).map((t) => outputKeys.table(t as TableName)),
      ...Object.keys(queues).map((q) => outputKeys.queue(q as QueueName)),
    ];
    expect(Object.keys(outputs).sort()).toEqual(expected.sort());
    expect(JSON.stringify(outputs)).not.toMatch(/crm_live_|whsec_|secret|password|token|AKIA/i);
    // The base URL, no trailing slash (like the local stack's apiUrl): https://<api>.execute-api.<region>.<suffix>/<stage>
    template.hasOutput(outputKeys.apiUrl, {
      Value: { 'Fn::Join': ['', ['https://', { Ref: logicalId(stack.api) }, '.execute-api.', { Ref: 'AWS::Region' }, '.', { Ref: 'AWS::URLSuffix' }, '/', { Ref: Match.anyValue() }]] },
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

  it('subscribes the alarm mailbox given with -c alarmEmail', () => {
    const withEmail = build({ alarmEmail: 'ops@example.com' });
    Template.fromStack(withEmail.stack).hasResourceProperties('AWS::SNS::Subscription', { Protocol: 'email', Endpoint: 'ops@example.com' });
  });
});
