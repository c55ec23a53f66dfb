/**
 * The AWS deployment, looped from lib/topology.ts: DynamoDB tables (+ streams, TTL, PITR), SQS
 * queues (+ dead-letter redrive), the SSM settings parameter, the functions with their grants and
 * event sources, the REST API with its routes and CORS, alarms and outputs. Nothing about tables,
 * queues, functions or routes is written here that the topology does not say.
 */
import { CfnOutput, Duration, RemovalPolicy, Stack, Validations, type StackProps } from 'aws-cdk-lib';
import * as apigw from 'aws-cdk-lib/aws-apigateway';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import { SnsAction } from 'aws-cdk-lib/aws-cloudwatch-actions';
import * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import { DynamoEventSource, SqsDlq, SqsEventSource } from 'aws-cdk-lib/aws-lambda-event-sources';
import * as logs from 'aws-cdk-lib/aws-logs';
import * as sns from 'aws-cdk-lib/aws-sns';
import { EmailSubscription } from 'aws-cdk-lib/aws-sns-subscriptions';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import * as ssm from 'aws-cdk-lib/aws-ssm';
import type { Construct } from 'constructs';
import {
  cors, functions, metricsNamespace, outputKeys, queues, routes, serviceName, settingsParameterName, tables,
  type EventSourceSpec, type FunctionName, type FunctionSpec, type QueueName, type QueueSpec, type TableName, type TableSpec,
} from '../topology.js';
import { defaultSettings } from '../../functions/core/settings.js';
import { CrmFunction } from './crm-function.js';

const entries = <K extends string, V>(o: Partial<Record<K, V>>) => Object.entries(o) as [K, V][];
// The topology's entries, seen through their general shapes.
const tableSpecs: Record<TableName, TableSpec> = tables;
const queueSpecs: Record<QueueName, QueueSpec> = queues;
const functionSpecs: Record<FunctionName, FunctionSpec> = functions;
const keyType = (t: 'S' | 'N') => (t === 'S' ? dynamodb.AttributeType.STRING : dynamodb.AttributeType.NUMBER);

export interface CrmStackProps extends StackProps {
  stage: string;
  /** Subscribed to the alarm topic when given (`-c alarmEmail=ops@example.com`). */
  alarmEmail?: string;
}

export class CrmStack extends Stack {
  readonly tables = {} as Record<TableName, dynamodb.Table>;
  readonly queues = {} as Record<QueueName, sqs.Queue>;
  readonly functions = {} as Record<FunctionName, CrmFunction>;
  readonly settings: ssm.StringParameter;
  readonly api: apigw.RestApi;
  /** Every alarm notifies this topic; subscribe a mailbox, a pager or a chat bridge to it. */
  readonly alarmTopic: sns.Topic;
  readonly alarms: cloudwatch.Alarm[];

  constructor(scope: Construct, id: string, props: CrmStackProps) {
    super(scope, id, props);
    const { stage } = props;

    for (const [name, spec] of entries(tableSpecs)) this.tables[name] = this.table(name, spec, stage);

    // Dead-letter queues first: a queue's redrive policy names one.
    const ordered = entries(queueSpecs).sort(([, a], [, b]) => Number(!!a.deadLetter) - Number(!!b.deadLetter));
    for (const [name, spec] of ordered) this.queues[name] = this.queue(name, spec);

    // Runtime settings of the stage (no secrets): edited in SSM, read by the functions (cached 5 min).
    this.settings = new ssm.StringParameter(this, 'Settings', {
      parameterName: settingsParameterName(stage),
      description: `Runtime settings of the CRM integration API (${stage}); see functions/core/settings.ts`,
      stringValue: JSON.stringify({ ...defaultSettings, stage }),
    });

    for (const [name, spec] of entries(functionSpecs)) {
      const fn = new CrmFunction(this, `${name}Function`, { spec, stage, settings: this.settings });
      for (const [table, access] of entries(spec.tables)) fn.bindTable(this.tables[table], tableSpecs[table], access);
      for (const [queue, access] of entries(spec.queues)) fn.bindQueue(this.queues[queue], queueSpecs[queue], access);
      for (const source of spec.events) fn.addEventSource(this.eventSource(source));
      this.functions[name] = fn;
    }

    this.api = this.restApi(stage);

    this.alarmTopic = new sns.Topic(this, 'Alarms', { topicName: `crm-${stage}-alarms`, displayName: `CRM integration API (${stage}) alarms`, enforceSSL: true });
    Validations.of(this.alarmTopic).acknowledge({
      id: 'AwsSolutions-SNS2',
      reason: 'Alarm notifications carry alarm names and states, no customer data; CloudWatch cannot publish to a topic encrypted with the AWS-managed SNS key, and a customer-managed key for this alone is not worth its cost.',
    });
    if (props.alarmEmail) this.alarmTopic.addSubscription(new EmailSubscription(props.alarmEmail));
    this.alarms = this.createAlarms();
    for (const alarm of this.alarms) alarm.addAlarmAction(new SnsAction(this.alarmTopic));

    // The base URL without a trailing slash, like the local stack's apiUrl: clients append /api/...
    new CfnOutput(this, outputKeys.apiUrl, {
      value: `https://${this.api.restApiId}.execute-api.${this.region}.${this.urlSuffix}/${this.api.deploymentStage.stageName}`,
      description: 'Base URL of the API',
    });
    for (const [name, table] of entries(this.tables)) new CfnOutput(this, outputKeys.table(name), { value: table.tableName });
    for (const [name, queue] of entries(this.queues)) new CfnOutput(this, outputKeys.queue(name), { value: queue.queueUrl });
    new CfnOutput(this, outputKeys.settingsParameter, { value: this.settings.parameterName });
  }

  private table(name: TableName, spec: TableSpec, stage: string): dynamodb.Table {
    const key = (k: { name: string; type: 'S' | 'N' }) => ({ name: k.name, type: keyType(k.type) });
    const table = new dynamodb.Table(this, `${name}Table`, {
      partitionKey: key(spec.partitionKey),
      sortKey: spec.sortKey && key(spec.sortKey),
      billingMode: dynamodb.BillingMode.PAY_PER_REQUEST,
      pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true },
      encryption: dynamodb.TableEncryption.AWS_MANAGED,
      timeToLiveAttribute: spec.ttlAttribute,
      stream: spec.stream && dynamodb.StreamViewType[spec.stream],
      // Data outlives the stack: deleting it leaves the tables behind (and prod refuses to delete).
      removalPolicy: RemovalPolicy.RETAIN,
      deletionProtection: stage === 'prod',
    });
    for (const index of spec.globalIndexes ?? []) {
      table.addGlobalSecondaryIndex({ indexName: index.name, partitionKey: key(index.partitionKey), sortKey: index.sortKey && key(index.sortKey) });
    }
    return table;
  }

  private queue(name: QueueName, spec: QueueSpec): sqs.Queue {
    const dead = spec.deadLetter;
    const queue = new sqs.Queue(this, `${name}Queue`, {
      visibilityTimeout: Duration.seconds(spec.visibilityTimeoutSeconds),
      retentionPeriod: Duration.days(spec.retentionDays),
      encryption: sqs.QueueEncryption.SQS_MANAGED,
      enforceSSL: true,
      deadLetterQueue: dead && { queue: this.queues[dead.queue as QueueName], maxReceiveCount: dead.maxReceiveCount },
    });
    if (!dead) {
      Validations.of(queue).acknowledge({
        id: 'AwsSolutions-SQS3',
        reason: 'This queue is itself a dead-letter / on-failure destination: messages here are parked for inspection and re-drive, not processed.',
      });
    }
    return queue;
  }

  private eventSource(source: EventSourceSpec): lambda.IEventSource {
    if (source.kind === 'stream') {
      return new DynamoEventSource(this.tables[source.table], {
        startingPosition: lambda.StartingPosition.TRIM_HORIZON,
        batchSize: source.batchSize,
        retryAttempts: source.maxRetries,
        bisectBatchOnError: source.bisectOnError,
        reportBatchItemFailures: true,
        onFailure: new SqsDlq(this.queues[source.onFailure]),
      });
    }
    return new SqsEventSource(this.queues[source.queue], {
      batchSize: source.batchSize,
      reportBatchItemFailures: true,
      maxConcurrency: source.maxConcurrency,
    });
  }

  private restApi(stage: string): apigw.RestApi {
    const accessLogs = new logs.LogGroup(this, 'ApiAccessLogs', { retention: logs.RetentionDays.THREE_MONTHS, removalPolicy: RemovalPolicy.DESTROY });
    const api = new apigw.RestApi(this, 'Api', {
      restApiName: `crm-integration-${stage}`,
      description: 'CRM integration API: lead intake',
      endpointTypes: [apigw.EndpointType.REGIONAL],
      // Execution logs (errors only) need the account-level CloudWatch role.
      cloudWatchRole: true,
      deployOptions: {
        stageName: stage,
        // A backstop behind the per-key limiter in the function, not the limiter itself.
        throttlingRateLimit: 200,
        throttlingBurstLimit: 400,
        tracingEnabled: true,
        loggingLevel: apigw.MethodLoggingLevel.ERROR,
        accessLogDestination: new apigw.LogGroupLogDestination(accessLogs),
        accessLogFormat: apigw.AccessLogFormat.jsonWithStandardFields(),
      },
      // Preflights are answered by API Gateway itself, without a key. Expose-Headers is not a
      // preflight header: the function sets it on every real response (and the gateway responses below).
      defaultCorsPreflightOptions: {
        allowOrigins: cors.allowOrigins,
        allowHeaders: cors.allowHeaders,
        allowMethods: [...new Set(routes.map((r) => r.method)), 'OPTIONS'],
        maxAge: Duration.seconds(cors.maxAgeSeconds),
      },
    });
    api.node.tryRemoveChild('Endpoint'); // the default output; replaced by ApiUrl (outputKeys)
    // Errors API Gateway answers itself (throttling, unknown route, 5xx before the function) carry CORS too,
    // so a browser form can read them.
    for (const type of [apigw.ResponseType.DEFAULT_4XX, apigw.ResponseType.DEFAULT_5XX]) {
      api.addGatewayResponse(`Cors${type.responseType}`, {
        type,
        responseHeaders: {
          'Access-Control-Allow-Origin': `'${cors.allowOrigins.join(',')}'`,
          'Access-Control-Expose-Headers': `'${cors.exposeHeaders.join(',')}'`,
        },
      });
    }
    const integrations = new Map<FunctionName, apigw.LambdaIntegration>();
    for (const route of routes) {
      if (!integrations.has(route.function)) integrations.set(route.function, new apigw.LambdaIntegration(this.functions[route.function]));
      api.root.resourceForPath(route.path).addMethod(route.method, integrations.get(route.function));
    }

    Validations.of(api).acknowledge(
      { id: 'AwsSolutions-APIG2', reason: 'The function validates every body (zod) and answers 422 problem+json with per-field errors (DESIGN §6-7); a gateway validator would answer a different 400 shape first.' },
      { id: 'AwsSolutions-APIG4', reason: 'Callers authenticate with organization API keys, checked in the function (hashed lookup, constant-time compare); an authorizer cannot reach that key store. CORS preflights are open by design.' },
      { id: 'AwsSolutions-COG4', reason: 'Callers are web forms and automation tools holding an organization API key, not Cognito users.' },
      { id: 'AwsSolutions-APIG3', reason: 'No WAF in the default deployment: per-key rate limiting in the function plus stage throttling. A team can associate a WebACL with the stage.' },
      { id: 'AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AmazonAPIGatewayPushToCloudWatchLogs]', reason: 'The AWS-managed role API Gateway needs to write execution logs (logs only).' },
    );
    return api;
  }

  private createAlarms(): cloudwatch.Alarm[] {
    return [
      this.queueNotEmptyAlarm('DeliveryDlqDepth', 'deliveryDlq',
        'Webhook deliveries exhausted their retries and wait in the dead-letter queue: inspect with `crm deliveries list --status failed`, then `crm deliveries redrive`.'),
      this.queueNotEmptyAlarm('FanoutFailures', 'fanoutFailures',
        'Stream batches the fan-out gave up on: events may be missing. Fix the cause, then `crm events replay-failures` (within 24 h, the stream retention).'),
      new cloudwatch.Alarm(this, 'DeliveryFailureRate', {
        alarmDescription: 'More than 25% of webhook delivery attempts failed over 15 minutes.',
        metric: new cloudwatch.MathExpression({
          expression: 'IF(attempts > 0, 100 * failures / attempts, 0)',
          usingMetrics: {
            // Emitted by functions/core/delivery/deliver.ts through Powertools (dimension `service`).
            attempts: new cloudwatch.Metric({ namespace: metricsNamespace, metricName: 'DeliveryAttempts', dimensionsMap: { service: serviceName }, statistic: 'Sum' }),
            failures: new cloudwatch.Metric({ namespace: metricsNamespace, metricName: 'DeliveryFailures', dimensionsMap: { service: serviceName }, statistic: 'Sum' }),
          },
          period: Duration.minutes(15),
        }),
        threshold: 25,
        evaluationPeriods: 1,
        comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
        treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
      }),
      ...entries(this.functions).map(([name, fn]) => new cloudwatch.Alarm(this, `${name}Errors`, {
        alarmDescription: `The ${name} function is failing (unhandled errors or timeouts): see its log group.`,
        metric: fn.metricErrors({ period: Duration.minutes(5) }),
        threshold: 5,
        evaluationPeriods: 1,
        comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
        treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
      })),
    ];
  }

  /** Alarms as soon as a parking queue holds anything. */
  private queueNotEmptyAlarm(id: string, queue: QueueName, description: string): cloudwatch.Alarm {
    return new cloudwatch.Alarm(this, id, {
      alarmDescription: description,
      metric: this.queues[queue].metricApproximateNumberOfMessagesVisible({ period: Duration.minutes(5), statistic: 'Maximum' }),
      threshold: 1,
      evaluationPeriods: 1,
      comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
      treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
    });
  }
}
