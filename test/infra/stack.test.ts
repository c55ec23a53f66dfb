/**
 * The synthesized CloudFormation template (bundling skipped): what the topology promises is there,
 * each function can do exactly what its issue needs and no more, and cdk-nag passes.
 */
import { describe, it, expect, beforeAll } from '@jest/globals';
import type { App } from 'aws-cdk-lib';
import { Match, Template } from 'aws-cdk-lib/assertions';
import { buildApp } from '../../lib/stacks/app.js';
import { functions, outputKeys, queues, tables, type FunctionName } from '../../lib/topology.js';
import type { CrmStack } from '../../lib/stacks/crm-stack.js';

let app: App;
let stack: CrmStack;
let template: Template;

beforeAll(() => {
  ({ app, stack } = buildApp({ context: { 'aws:cdk:bundling-stacks': [], stage: 'test' } }));
  template = Template.fromStack(stack);
});

type Statement = { Action: string | string[]; Resource: unknown; Effect: string };

/** Every IAM statement attached to a function's role, with resources rendered as strings. */
function statementsOf(name: FunctionName): { actions: string[]; resources: string }[] {
  const fnLogicalId = stack.getLogicalId(stack.functions[name].node.defaultChild as never);
  const fn = template.findResources('AWS::Lambda::Function')[fnLogicalId];
  const roleRef = JSON.stringify(fn.Properties.Role);
  const policies = Object.values(template.findResources('AWS::IAM::Policy')).filter((p) => JSON.stringify(p.Properties.Roles).includes(roleRef.match(/"([A-Za-z0-9]+Role[A-Za-z0-9]*)"/)![1]));
  return policies.flatMap((p) => (p.Properties.PolicyDocument.Statement as Statement[]).map((s) => ({
    actions: ([] as string[]).concat(s.Action),
    resources: JSON.stringify(s.Resource),
  })));
}

const tableRef = (name: keyof typeof tables) => stack.getLogicalId(stack.tables[name].node.defaultChild as never);
const queueRef = (name: keyof typeof queues) => stack.getLogicalId(stack.queues[name].node.defaultChild as never);
const actionsOn = (name: FunctionName, logicalId: string) =>
  statementsOf(name).filter((s) => s.resources.includes(logicalId)).flatMap((s) => s.actions);

describe('the CDK stack', () => {
  it('has one on-demand, point-in-time-recoverable table per topology table, with its TTL and streams', () => {
    template.resourceCountIs('AWS::DynamoDB::Table', Object.keys(tables).length);
    for (const [name, spec] of Object.entries(tables) as [keyof typeof tables, (typeof tables)[keyof typeof tables]][]) {
      const props = template.findResources('AWS::DynamoDB::Table')[tableRef(name)].Properties;
      expect(props.BillingMode).toBe('PAY_PER_REQUEST');
      expect(props.PointInTimeRecoverySpecification).toEqual({ PointInTimeRecoveryEnabled: true });
      expect(props.TimeToLiveSpecification).toEqual('ttlAttribute' in spec ? { AttributeName: spec.ttlAttribute, Enabled: true } : undefined);
      expect(props.StreamSpecification?.StreamViewType).toBe('stream' in spec ? 'NEW_AND_OLD_IMAGES' : undefined);
    }
  });

  it('sends deliveries to the dead-letter queue after 5 receives, and every queue requires TLS', () => {
    template.hasResourceProperties('AWS::SQS::Queue', {
      VisibilityTimeout: 180,
      RedrivePolicy: { deadLetterTargetArn: { 'Fn::GetAtt': [queueRef('deliveryDlq'), 'Arn'] }, maxReceiveCount: 5 },
    });
    template.resourceCountIs('AWS::SQS::QueuePolicy', Object.keys(queues).length);
    template.allResourcesProperties('AWS::SQS::QueuePolicy', {
      PolicyDocument: { Statement: Match.arrayWith([Match.objectLike({ Effect: 'Deny', Condition: { Bool: { 'aws:SecureTransport': 'false' } } })]) },
    });
  });

  it('runs every function on Node 24, arm64, with X-Ray and its own log group', () => {
    template.resourceCountIs('AWS::Lambda::Function', Object.keys(functions).length);
    template.allResourcesProperties('AWS::Lambda::Function', {
      Runtime: 'nodejs24.x', Architectures: ['arm64'], TracingConfig: { Mode: 'Active' }, LoggingConfig: Match.objectLike({ LogGroup: Match.anyValue() }),
    });
  });

  it('wires both streams to the fan-out with partial batch responses, bisect, bounded retries and an on-failure queue', () => {
    for (const table of ['clients', 'workOrders'] as const) {
      template.hasResourceProperties('AWS::Lambda::EventSourceMapping', {
        EventSourceArn: { 'Fn::GetAtt': [tableRef(table), 'StreamArn'] },
        FunctionResponseTypes: ['ReportBatchItemFailures'],
        BisectBatchOnFunctionError: true,
        MaximumRetryAttempts: 10,
        StartingPosition: 'TRIM_HORIZON',
        DestinationConfig: { OnFailure: { Destination: { 'Fn::GetAtt': [queueRef('fanoutFailures'), 'Arn'] } } },
      });
    }
    template.hasResourceProperties('AWS::Lambda::EventSourceMapping', {
      EventSourceArn: { 'Fn::GetAtt': [queueRef('deliveryQueue'), 'Arn'] },
      FunctionResponseTypes: ['ReportBatchItemFailures'],
      BatchSize: 10,
    });
  });

  it('grants each function only what the topology lists', () => {
    // Lead intake writes clients but cannot read them back or touch queues or deliveries.
    expect(actionsOn('leadIntake', tableRef('clients'))).not.toContain('dynamodb:GetItem');
    expect(actionsOn('leadIntake', tableRef('clients'))).toContain('dynamodb:PutItem');
    expect(actionsOn('leadIntake', tableRef('deliveries'))).toEqual([]);
    expect(statementsOf('leadIntake').flatMap((s) => s.actions).some((a) => a.startsWith('sqs:'))).toBe(false);
    // The fan-out reads the organizations table (endpoints), never writes it or the clients table.
    expect(actionsOn('eventFanout', tableRef('organizations'))).not.toContain('dynamodb:PutItem');
    expect(actionsOn('eventFanout', tableRef('clients')).filter((a) => !a.startsWith('dynamodb:GetRecords') && !a.startsWith('dynamodb:GetShardIterator') && !a.startsWith('dynamodb:DescribeStream') && a !== 'dynamodb:ListStreams')).toEqual([]);
    expect(actionsOn('eventFanout', queueRef('deliveryQueue'))).toContain('sqs:SendMessage');
    expect(actionsOn('eventFanout', queueRef('deliveryQueue'))).not.toContain('sqs:DeleteMessage');
    // Delivery consumes its queue and never touches the clients table.
    expect(actionsOn('webhookDelivery', queueRef('deliveryQueue'))).toContain('sqs:ChangeMessageVisibility');
    expect(actionsOn('webhookDelivery', tableRef('clients'))).toEqual([]);
  });

  it('names every bound resource in an env var and reads settings from SSM', () => {
    const fn = template.findResources('AWS::Lambda::Function')[stack.getLogicalId(stack.functions.leadIntake.node.defaultChild as never)];
    const env = fn.Properties.Environment.Variables as Record<string, unknown>;
    expect(Object.keys(env).sort()).toEqual(
      ['CLIENTS_TABLE', 'IDEMPOTENCY_TABLE', 'NODE_OPTIONS', 'ORGANIZATIONS_TABLE', 'POWERTOOLS_SERVICE_NAME', 'RATE_WINDOWS_TABLE', 'REQUEST_LOG_TABLE', 'SETTINGS_PARAMETER', 'STAGE'],
    );
    template.hasResourceProperties('AWS::SSM::Parameter', { Name: '/crm/test/settings', Type: 'String' });
  });

  it('serves GET and POST /api/webhook/leads on a regional API with throttling, access logs and a CORS preflight', () => {
    template.hasResourceProperties('AWS::ApiGateway::RestApi', { EndpointConfiguration: { Types: ['REGIONAL'] } });
    template.hasResourceProperties('AWS::ApiGateway::Stage', {
      StageName: 'test',
      AccessLogSetting: Match.objectLike({ DestinationArn: Match.anyValue() }),
      MethodSettings: Match.arrayWith([Match.objectLike({ ThrottlingRateLimit: 200, ThrottlingBurstLimit: 400 })]),
    });
    for (const method of ['GET', 'POST']) template.hasResourceProperties('AWS::ApiGateway::Method', { HttpMethod: method, AuthorizationType: 'NONE' });
    template.hasResourceProperties('AWS::ApiGateway::Method', {
      HttpMethod: 'OPTIONS',
      Integration: Match.objectLike({
        IntegrationResponses: [Match.objectLike({
          ResponseParameters: Match.objectLike({
            'method.response.header.Access-Control-Allow-Headers': "'Content-Type,X-API-Key,Authorization,Idempotency-Key'",
            'method.response.header.Access-Control-Allow-Origin': "'*'",
          }),
        })],
      }),
    });
    template.hasResourceProperties('AWS::ApiGateway::GatewayResponse', {
      ResponseType: 'DEFAULT_4XX',
      ResponseParameters: Match.objectLike({ 'gatewayresponse.header.Access-Control-Expose-Headers': Match.stringLikeRegexp('Retry-After') }),
    });
  });

  it('alarms on dead-letter depth, fan-out failures and the delivery failure rate', () => {
    template.hasResourceProperties('AWS::CloudWatch::Alarm', {
      MetricName: 'ApproximateNumberOfMessagesVisible',
      Dimensions: [{ Name: 'QueueName', Value: { 'Fn::GetAtt': [queueRef('deliveryDlq'), 'QueueName'] } }],
      Threshold: 1,
    });
    template.hasResourceProperties('AWS::CloudWatch::Alarm', { Dimensions: [{ Name: 'QueueName', Value: { 'Fn::GetAtt': [queueRef('fanoutFailures'), 'QueueName'] } }] });
    template.hasResourceProperties('AWS::CloudWatch::Alarm', { Metrics: Match.arrayWith([Match.objectLike({ Expression: Match.stringLikeRegexp('failures / attempts') })]) });
  });

  it('outputs the API URL, queue URLs and table names, and nothing secret', () => {
    const outputs = template.findOutputs('*');
    const expected = [outputKeys.apiUrl, outputKeys.settingsParameter, ...Object.keys(tables).map((t) => outputKeys.table(t as keyof typeof tables)), ...Object.keys(queues).map((q) => outputKeys.queue(q as keyof typeof queues))];
    expect(Object.keys(outputs).sort()).toEqual(expected.sort());
    expect(JSON.stringify(outputs)).not.toMatch(/crm_live_|whsec_|secret|password/i);
  });

  it('passes cdk-nag AwsSolutions with no unacknowledged finding (synth throws "Validation failed" otherwise)', () => {
    expect(() => app.synth()).not.toThrow();
  });
});
