/**
 * The AWS deployment, looped from lib/topology.ts: DynamoDB tables (+ streams, TTL, PITR), SQS
 * queues (+ dead-letter redrive), the SSM settings parameter, the functions with their grants and
 * event sources, the REST API with its routes and CORS, alarms and outputs. Nothing about tables,
 * queues, functions or routes is written here that the topology does not say.
 */
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { CfnOutput, Duration, RemovalPolicy, Stack, Validations, type StackProps } from 'aws-cdk-lib';
import * as apigw from 'aws-cdk-lib/aws-apigateway';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import { DynamoEventSource, SqsDlq, SqsEventSource } from 'aws-cdk-lib/aws-lambda-event-sources';
import { NodejsFunction, OutputFormat } from 'aws-cdk-lib/aws-lambda-nodejs';
import * as logs from 'aws-cdk-lib/aws-logs';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import * as ssm from 'aws-cdk-lib/aws-ssm';
import type { Construct } from 'constructs';
import {
  cors, functions, metricsNamespace, outputKeys, queues, routes, serviceName, settingsParameterEnvVar, settingsParameterName, tables,
  type FunctionName, type FunctionSpec, type QueueName, type QueueSpec, type TableName, type TableSpec,
} from '../topology.js';
import { defaultSettings } from '../../functions/core/settings.js';
import { bindQueue, bindTable } from './bindings.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const entries = <K extends string, V>(o: Partial<Record<K, V>>) => Object.entries(o) as [K, V][];
// The topology's entries, seen through their general shapes.
const tableSpecs: Record<TableName, TableSpec> = tables;
const queueSpecs: Record<QueueName, QueueSpec> = queues;
const functionSpecs: Record<FunctionName, FunctionSpec> = functions;
const keyType = (t: 'S' | 'N') => (t === 'S' ? dynamodb.AttributeType.STRING : dynamodb.AttributeType.NUMBER);

export interface CrmStackProps extends StackProps {
  stage: string;
}

export class CrmStack extends Stack {
  readonly tables = {} as Record<TableName, dynamodb.Table>;
  readonly queues = {} as Record<QueueName, sqs.Queue>;
  readonly functions = {} as Record<FunctionName, NodejsFunction>;
  readonly api: apigw.RestApi;
  /** Every alarm, for a team to attach its own actions (SNS, chat) to. */
  readonly alarms: cloudwatch.Alarm[];

  constructor(scope: Construct, id: string, props: CrmStackProps) {
    super(scope, id, props);
    const { stage } = props;

    for (const [name, spec] of entries(tableSpecs)) {
      this.tables[name] = new dynamodb.Table(this, `${name}Table`, {
        partitionKey: { name: spec.partitionKey.name, type: keyType(spec.partitionKey.type) },
        ...(spec.sortKey ? { sortKey: { name: spec.sortKey.name, type: keyType(spec.sortKey.type) } } : {}),
        billingMode: dynamodb.BillingMode.PAY_PER_REQUEST,
        pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true },
        encryption: dynamodb.TableEncryption.AWS_MANAGED,
        timeToLiveAttribute: spec.ttlAttribute,
        ...(spec.stream ? { stream: dynamodb.StreamViewType.NEW_AND_OLD_IMAGES } : {}),
        deletionProtection: stage === 'prod',
        removalPolicy: RemovalPolicy.RETAIN,
      });
      for (const index of spec.globalIndexes ?? []) {
        this.tables[name].addGlobalSecondaryIndex({
          indexName: index.name,
          partitionKey: { name: index.partitionKey.name, type: keyType(index.partitionKey.type) },
          ...(index.sortKey ? { sortKey: { name: index.sortKey.name, type: keyType(index.sortKey.type) } } : {}),
        });
      }
    }

    // Dead-letter queues first: a queue's redrive policy names one.
    const ordered = entries(queueSpecs).sort(([, a], [, b]) => Number(!!a.deadLetter) - Number(!!b.deadLetter));
    for (const [name, spec] of ordered) {
      const dead = spec.deadLetter;
      this.queues[name] = new sqs.Queue(this, `${name}Queue`, {
        visibilityTimeout: Duration.seconds(spec.visibilityTimeoutSeconds),
        retentionPeriod: Duration.days(spec.retentionDays),
        encryption: sqs.QueueEncryption.SQS_MANAGED,
        enforceSSL: true,
        ...(dead ? { deadLetterQueue: { queue: this.queues[dead.queue as QueueName], maxReceiveCount: dead.maxReceiveCount } } : {}),
      });
      if (!dead) {
        Validations.of(this.queues[name]).acknowledge({ id: 'AwsSolutions-SQS3', reason: 'This queue is itself a dead-letter / on-failure destination; messages here are parked for re-drive, not processed.' });
      }
    }

    // Runtime settings of the stage (no secrets): edited in SSM, read by the functions (cached 5 min).
    const settings = new ssm.StringParameter(this, 'Settings', {
      parameterName: settingsParameterName(stage),
      description: `Runtime settings of the CRM integration API (${stage}); see functions/core/settings.ts`,
      stringValue: JSON.stringify({ ...defaultSettings, stage }),
    });

    for (const [name, spec] of entries(functionSpecs)) {
      const logGroup = new logs.LogGroup(this, `${name}Logs`, { retention: logs.RetentionDays.ONE_MONTH, removalPolicy: RemovalPolicy.DESTROY });
      const fn = new NodejsFunction(this, `${name}Function`, {
        entry: path.join(root, 'functions', spec.entry, 'handler.ts'),
        handler: 'handler',
        description: spec.description,
        runtime: lambda.Runtime.NODEJS_24_X,
        architecture: lambda.Architecture.ARM_64,
        memorySize: spec.memoryMb,
        timeout: Duration.seconds(spec.timeoutSeconds),
        tracing: lambda.Tracing.ACTIVE,
        logGroup,
        loggingFormat: lambda.LoggingFormat.JSON,
        depsLockFilePath: path.join(root, 'package-lock.json'),
        projectRoot: root,
        environment: {
          STAGE: stage,
          POWERTOOLS_SERVICE_NAME: serviceName,
          NODE_OPTIONS: '--enable-source-maps',
          [settingsParameterEnvVar]: settings.parameterName,
        },
        bundling: {
          format: OutputFormat.ESM,
          target: 'node24',
          minify: true,
          sourceMap: true,
          // ESM bundles still meet CommonJS dependencies that call require().
          banner: "import { createRequire } from 'node:module'; const require = createRequire(import.meta.url);",
          mainFields: ['module', 'main'],
          // The default: @aws-sdk/* is left to the Node 24 runtime's own SDK v3 (smaller bundles,
          // faster cold starts); everything else is bundled and tree-shaken.
        },
      });
      settings.grantRead(fn);
      for (const [table, access] of entries(spec.tables)) bindTable(fn, this.tables[table], tableSpecs[table], access);
      for (const [queue, access] of entries(spec.queues)) bindQueue(fn, this.queues[queue], queueSpecs[queue], access);
      for (const source of spec.events) {
        if (source.kind === 'stream') {
          fn.addEventSource(new DynamoEventSource(this.tables[source.table], {
            startingPosition: lambda.StartingPosition.TRIM_HORIZON,
            batchSize: source.batchSize,
            retryAttempts: source.maxRetries,
            bisectBatchOnError: source.bisectOnError,
            reportBatchItemFailures: true,
            onFailure: new SqsDlq(this.queues[source.onFailure]),
          }));
        } else {
          fn.addEventSource(new SqsEventSource(this.queues[source.queue], {
            batchSize: source.batchSize,
            reportBatchItemFailures: true,
            maxConcurrency: source.maxConcurrency,
          }));
        }
      }
      this.functions[name] = fn;
    }

    const accessLogs = new logs.LogGroup(this, 'ApiAccessLogs', { retention: logs.RetentionDays.THREE_MONTHS, removalPolicy: RemovalPolicy.DESTROY });
    this.api = new apigw.RestApi(this, 'Api', {
      restApiName: `crm-integration-${stage}`,
      description: 'CRM integration API: lead intake',
      endpointTypes: [apigw.EndpointType.REGIONAL],
      cloudWatchRole: true,
      deployOptions: {
        stageName: stage,
        // A backstop behind the per-key limiter, not the limiter itself.
        throttlingRateLimit: 200,
        throttlingBurstLimit: 400,
        tracingEnabled: true,
        loggingLevel: apigw.MethodLoggingLevel.ERROR,
        accessLogDestination: new apigw.LogGroupLogDestination(accessLogs),
        accessLogFormat: apigw.AccessLogFormat.jsonWithStandardFields(),
      },
      defaultCorsPreflightOptions: {
        allowOrigins: cors.allowOrigins,
        allowHeaders: cors.allowHeaders,
        allowMethods: [...new Set(routes.map((r) => r.method)), 'OPTIONS'],
        maxAge: Duration.seconds(cors.maxAgeSeconds),
      },
    });
    this.api.node.tryRemoveChild('Endpoint'); // replaced by the ApiUrl output below
    // Error responses API Gateway produces itself (4xx/5xx before the function) also carry CORS.
    for (const type of [apigw.ResponseType.DEFAULT_4XX, apigw.ResponseType.DEFAULT_5XX]) {
      this.api.addGatewayResponse(`Cors${type.responseType}`, {
        type,
        responseHeaders: {
          'Access-Control-Allow-Origin': `'${cors.allowOrigins.join(',')}'`,
          'Access-Control-Expose-Headers': `'${cors.exposeHeaders.join(',')}'`,
        },
      });
    }
    // The function validates bodies against its zod schemas (422 with per-field errors); the
    // gateway validator has no models to check, so it only rejects nothing the function accepts.
    const requestValidator = new apigw.RequestValidator(this, 'RequestValidator', { restApi: this.api, validateRequestBody: true, validateRequestParameters: true });
    const integrations = new Map<FunctionName, apigw.LambdaIntegration>();
    for (const route of routes) {
      const resource = this.api.root.resourceForPath(route.path);
      if (!integrations.has(route.function)) integrations.set(route.function, new apigw.LambdaIntegration(this.functions[route.function]));
      resource.addMethod(route.method, integrations.get(route.function), { requestValidator });
    }

    this.alarms = [
      this.queueNotEmptyAlarm('DeliveryDlqDepth', 'deliveryDlq',
        'Webhook deliveries exhausted their retries and wait in the dead-letter queue: inspect with `crm deliveries list --status failed`, then `crm deliveries redrive`.'),
      this.queueNotEmptyAlarm('FanoutFailures', 'fanoutFailures',
        'Stream batches the fan-out gave up on: events may be missing. Fix the cause, then `crm events replay-failures` (within 24 h, the stream retention).'),
      new cloudwatch.Alarm(this, 'DeliveryFailureRate', {
        alarmDescription: 'More than 25% of webhook delivery attempts failed over 15 minutes.',
        metric: new cloudwatch.MathExpression({
          expression: 'IF(attempts > 0, 100 * failures / attempts, 0)',
          usingMetrics: {
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
        alarmDescription: `The ${name} function is failing (unhandled errors).`,
        metric: fn.metricErrors({ period: Duration.minutes(5) }),
        threshold: 5,
        evaluationPeriods: 1,
        treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
      })),
    ];

    new CfnOutput(this, outputKeys.apiUrl, { value: this.api.urlForPath('/api/webhook/leads').replace(/\/api\/webhook\/leads$/, ''), description: 'Base URL of the API' });
    for (const [name, table] of entries(this.tables)) new CfnOutput(this, outputKeys.table(name), { value: table.tableName });
    for (const [name, queue] of entries(this.queues)) new CfnOutput(this, outputKeys.queue(name), { value: queue.queueUrl });
    new CfnOutput(this, outputKeys.settingsParameter, { value: settings.parameterName });

    this.acknowledge();
  }

  /** Alarms as soon as a parking queue holds anything. */
  private queueNotEmptyAlarm(id: string, queue: QueueName, description: string): cloudwatch.Alarm {
    return new cloudwatch.Alarm(this, id, {
      alarmDescription: description,
      metric: this.queues[queue].metricApproximateNumberOfMessagesVisible({ period: Duration.minutes(5) }),
      threshold: 1,
      evaluationPeriods: 1,
      comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
      treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
    });
  }

  /** cdk-nag findings we accept, each with its reason. */
  private acknowledge(): void {
    const ack = (id: string, reason: string) => Validations.of(this).acknowledge({ id, reason });
    ack('AwsSolutions-APIG4', 'The lead endpoint authenticates organization API keys in the function (hashed lookup, constant-time compare); API Gateway authorizers cannot see our key store. OPTIONS preflights are open by design.');
    ack('AwsSolutions-COG4', 'Callers are web forms and automation tools holding an organization API key, not Cognito users.');
    ack('AwsSolutions-APIG3', 'No WAF in the default deployment: per-key rate limiting in the function plus stage throttling; teams can attach a WebACL to the stage.');
    ack('AwsSolutions-IAM5[Resource::*]', 'X-Ray tracing (xray:PutTraceSegments, PutTelemetryRecords) has no resource-level permissions; the DynamoDB stream event source needs dynamodb:ListStreams on *.');
    for (const [name, table] of entries(this.tables)) {
      if (!tableSpecs[name].globalIndexes?.length) continue;
      const logicalId = this.getLogicalId(table.node.defaultChild as dynamodb.CfnTable);
      ack(`AwsSolutions-IAM5[Resource::<${logicalId}.Arn>/index/*]`, `Queries on the ${name} table's own indexes (${tableSpecs[name].globalIndexes!.map((i) => i.name).join(', ')}); scoped to that table.`);
    }
    ack('AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole]', 'CDK attaches the basic execution role; the functions log to their own explicit log groups.');
    ack('AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AmazonAPIGatewayPushToCloudWatchLogs]', 'The account-level role API Gateway needs to write execution logs; AWS-managed and scoped to logs.');
  }
}
