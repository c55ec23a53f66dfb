/**
 * The AWS deployment, looped from lib/topology.ts: DynamoDB tables (+ streams, TTL, PITR), SQS
 * queues (+ dead-letter redrive), the SSM settings parameter, the functions with their grants and
 * event sources, the REST API with its routes and CORS, alarms and outputs. Nothing about tables,
 * queues, functions or routes is written here that the topology does not say.
 */
import { ArnFormat, CfnOutput, Duration, RemovalPolicy, Size, Stack, Validations, type StackProps } from 'aws-cdk-lib';
import * as apigw from 'aws-cdk-lib/aws-apigateway';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import { SnsAction } from 'aws-cdk-lib/aws-cloudwatch-actions';
import * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as events from 'aws-cdk-lib/aws-events';
import { LambdaFunction } from 'aws-cdk-lib/aws-events-targets';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import { DynamoEventSource, SqsDlq, SqsEventSource } from 'aws-cdk-lib/aws-lambda-event-sources';
import * as logs from 'aws-cdk-lib/aws-logs';
import * as sns from 'aws-cdk-lib/aws-sns';
import { EmailSubscription } from 'aws-cdk-lib/aws-sns-subscriptions';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import * as secretsmanager from 'aws-cdk-lib/aws-secretsmanager';
import * as ssm from 'aws-cdk-lib/aws-ssm';
import * as wafv2 from 'aws-cdk-lib/aws-wafv2';
import type { Construct } from 'constructs';
import {
  catchAllAnswers, compressionMinBytes, cors, corsResponseHeaders, crossOrigin, edgeRules, functions, gatewayProblemBody, gatewayResponses, methodsOn, metricsNamespace,
  mockRequestContentTypes, mockRequestTemplate, edgeKeys, type EdgeKeySpec, type EdgeRuleSpec,
  outputKeys, queues, routes, secrets, hasParameterChild, type SecretName, type SecretSpec, serviceName, settingsParameterName, tables, apiMethodFor, catchAllThrottle,
  type EventSourceSpec, type GatewayAnswerSpec, type GatewayResponseType, type FunctionName, type FunctionSpec, type QueueName, type QueueSpec, type TableName, type TableSpec,
} from '../topology.js';
import { defaultSettings } from '../../functions/core/platform/settings.js';
import { CrmFunction } from './crm-function.js';

/** Ready deliveries the delivery function (10 batches of 10 at a time) should have taken within minutes. */
const deliveryBacklogThreshold = 100;
/** Delivery messages in flight: the attempts under way are ≤ 10 × maxConcurrency (500); SQS's ceiling is ~120,000. */
const deliveryInFlightThreshold = 5_000;
/** Webhook endpoints whose circuit opened in 15 minutes that page: one is a customer's receiver down; many at once is usually ours (egress, DNS, TLS). */
const circuitsOpenedThreshold = 10;
const entries = <K extends string, V>(o: Partial<Record<K, V>>) => Object.entries(o) as [K, V][];
// The topology's entries, seen through their general shapes.
const tableSpecs: Record<TableName, TableSpec> = tables;
const queueSpecs: Record<QueueName, QueueSpec> = queues;
const functionSpecs: Record<FunctionName, FunctionSpec> = functions;
const secretSpecs: Record<SecretName, SecretSpec> = secrets;
/** API Gateway header mappings take static values in single quotes. */
const quotedHeaders = (headers: Record<string, string>) => Object.fromEntries(Object.entries(headers).map(([k, v]) => [k, `'${v}'`]));
const keyType = (t: 'S' | 'N') => (t === 'S' ? dynamodb.AttributeType.STRING : dynamodb.AttributeType.NUMBER);

/** An SQS event source's MaximumConcurrency: the topology's, or the deploy's for the main delivery lane. */
const mappingConcurrency = (source: Extract<EventSourceSpec, { kind: 'queue' }>, props: Pick<CrmStackProps, 'deliveryMaxConcurrency'>) =>
  source.queue === 'deliveryQueue' ? props.deliveryMaxConcurrency ?? source.maxConcurrency : source.maxConcurrency;

/** The delivery function's reserved concurrency: at least the sum of its mappings' (0: none reserved). */
export function deliveryReservedConcurrency(props: Pick<CrmStackProps, 'deliveryMaxConcurrency' | 'deliveryReservedConcurrency'>): number {
  const mappings = functions.webhookDelivery.events.reduce((sum, source) => sum + (source.kind === 'queue' ? mappingConcurrency(source, props) : 0), 0);
  const reserved = props.deliveryReservedConcurrency ?? mappings;
  if (reserved !== 0 && reserved < mappings) {
    throw new Error(`deliveryReservedConcurrency ${reserved} is below the delivery function's event sources' maximum concurrency (${mappings} in all): reserve at least that, or 0 for none (docs/capacity.md).`);
  }
  return reserved;
}

export interface CrmStackProps extends StackProps {
  stage: string;
  /** Subscribed to the alarm topic when given (`-c alarmEmail=ops@example.com`). */
  alarmEmail?: string;
  /** The delivery function's maximum concurrency (`-c deliveryMaxConcurrency=N`); default: the topology's, sized in docs/capacity.md. */
  deliveryMaxConcurrency?: number;
  /**
   * Concurrency reserved for lead intake (`-c leadIntakeReservedConcurrency=N`, 0 for none): deliveries
   * and everything else in the account can never take it (it is also lead intake's ceiling). Default 100;
   * an account whose concurrency limit is below ~200 (new accounts start at 10) must lower it (docs/capacity.md).
   */
  leadIntakeReservedConcurrency?: number;
  /**
   * Concurrency reserved for the delivery function (`-c deliveryReservedConcurrency=N`, 0 for
   * none). Default, and the least accepted otherwise: the sum of its event-source mappings'
   * MaximumConcurrency, as AWS advises for SQS event sources, so that other functions cannot
   * starve it into throttling the batches it receives (docs/capacity.md "Delivery concurrency").
   */
  deliveryReservedConcurrency?: number;
}

export class CrmStack extends Stack {
  readonly tables = {} as Record<TableName, dynamodb.Table>;
  readonly queues = {} as Record<QueueName, sqs.Queue>;
  readonly functions = {} as Record<FunctionName, CrmFunction>;
  readonly secrets = {} as Record<SecretName, secretsmanager.Secret>;
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
      description: `Runtime settings of the CRM integration API (${stage}); see functions/core/platform/settings.ts`,
      stringValue: JSON.stringify({ ...defaultSettings, stage }),
    });

    for (const [name, spec] of entries(secretSpecs)) this.secrets[name] = this.secret(name, spec, stage);

    for (const [name, spec] of entries(functionSpecs)) {
      const fn = new CrmFunction(this, `${name}Function`, { spec, stage, settings: this.settings });
      for (const [secret] of entries(spec.secrets ?? {})) fn.bindSecret(this.secrets[secret], secretSpecs[secret]);
      for (const [table, access] of entries(spec.tables)) fn.bindTable(this.tables[table], tableSpecs[table], access);
      for (const [queue, access] of entries(spec.queues)) fn.bindQueue(this.queues[queue], queueSpecs[queue], access);
      for (const source of spec.events) {
        if (source.kind === 'schedule') {
          new events.Rule(this, `${name}Schedule`, { schedule: events.Schedule.rate(Duration.minutes(source.rateMinutes)), targets: [new LambdaFunction(fn, { retryAttempts: 0 })] });
          // No Lambda retries of a failed run either (2 by default): the next period's run redoes its
          // work, and a retry would overlap it (two sweeps sending the same parked deliveries).
          fn.configureAsyncInvoke({ retryAttempts: 0, maxEventAge: Duration.seconds(source.rateMinutes * 60) });
        } else {
          fn.addEventSource(this.eventSource(source, props));
        }
      }
      this.functions[name] = fn;
    }
    // Lead intake keeps its headroom whatever deliveries do (docs/capacity.md).
    const reserved = props.leadIntakeReservedConcurrency ?? 100;
    if (reserved > 0) (this.functions.leadIntake.node.defaultChild as lambda.CfnFunction).reservedConcurrentExecutions = reserved;
    const deliveryReserved = deliveryReservedConcurrency(props);
    if (deliveryReserved > 0) (this.functions.webhookDelivery.node.defaultChild as lambda.CfnFunction).reservedConcurrentExecutions = deliveryReserved;

    this.api = this.restApi(stage);

    this.alarmTopic = new sns.Topic(this, 'Alarms', { topicName: `crm-${stage}-alarms`, displayName: `CRM integration API (${stage}) alarms`, enforceSSL: true });
    Validations.of(this.alarmTopic).acknowledge({
      id: 'AwsSolutions-SNS2',
      reason: 'Alarm notifications carry alarm names and states, no customer data; CloudWatch cannot publish to a topic encrypted with the AWS-managed SNS key, and a customer-managed key for this alone is not worth its cost.',
    });
    // enforceSSL writes a topic policy holding only its Deny, and a topic policy replaces SNS's
    // default one: without this Allow, no alarm could publish (they would fail silently).
    this.alarmTopic.addToResourcePolicy(new iam.PolicyStatement({
      sid: 'AllowCloudWatchAlarms',
      principals: [new iam.ServicePrincipal('cloudwatch.amazonaws.com')],
      actions: ['sns:Publish'],
      resources: [this.alarmTopic.topicArn],
      conditions: {
        StringEquals: { 'aws:SourceAccount': this.account },
        ArnLike: { 'aws:SourceArn': this.formatArn({ service: 'cloudwatch', resource: 'alarm', resourceName: '*', arnFormat: ArnFormat.COLON_RESOURCE_NAME }) },
      },
    }));
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
    // The secrets' ARNs, never their values (`crm settings-link --stage` reads the value with GetSecretValue).
    for (const [name, secret] of entries(this.secrets)) new CfnOutput(this, outputKeys.secret(name), { value: secret.secretArn });
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
      table.addGlobalSecondaryIndex({
        indexName: index.name, partitionKey: key(index.partitionKey), sortKey: index.sortKey && key(index.sortKey),
        projectionType: index.projection === 'KEYS_ONLY' ? dynamodb.ProjectionType.KEYS_ONLY : dynamodb.ProjectionType.ALL,
      });
    }
    return table;
  }

  /**
   * A secret generated by Secrets Manager at creation: its value is never in the template, the
   * outputs or the functions' environment (they get its ARN and read it, cached). Deleted with the
   * stack: it signs only short-lived tokens, so a new stack's new secret costs nothing but new links.
   */
  private secret(name: SecretName, spec: SecretSpec, stage: string): secretsmanager.Secret {
    const secret = new secretsmanager.Secret(this, `${name}Secret`, {
      description: `${spec.description} (${stage})`,
      generateSecretString: { passwordLength: 64, excludePunctuation: true, includeSpace: false },
      removalPolicy: RemovalPolicy.DESTROY,
    });
    Validations.of(secret).acknowledge({
      id: 'AwsSolutions-SMG4',
      reason: 'Rotated by hand (put-secret-value, docs/settings.md): the functions re-read it within 5 minutes and the tokens it signs live at most 1 hour, so a rotation Lambda would add moving parts for no gain.',
    });
    return secret;
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

  private eventSource(source: Exclude<EventSourceSpec, { kind: 'schedule' }>, props: CrmStackProps): lambda.IEventSource {
    if (source.kind === 'stream') {
      return new DynamoEventSource(this.tables[source.table], {
        startingPosition: lambda.StartingPosition.TRIM_HORIZON,
        batchSize: source.batchSize,
        parallelizationFactor: source.parallelizationFactor,
        retryAttempts: source.maxRetries,
        bisectBatchOnError: source.bisectOnError,
        reportBatchItemFailures: true,
        onFailure: new SqsDlq(this.queues[source.onFailure]),
      });
    }
    return new SqsEventSource(this.queues[source.queue], {
      batchSize: source.batchSize,
      reportBatchItemFailures: true,
      maxConcurrency: mappingConcurrency(source, props),
    });
  }

  private restApi(stage: string): apigw.RestApi {
    const accessLogs = new logs.LogGroup(this, 'ApiAccessLogs', { retention: logs.RetentionDays.THREE_MONTHS, removalPolicy: RemovalPolicy.DESTROY });
    const api = new apigw.RestApi(this, 'Api', {
      restApiName: `crm-integration-${stage}`,
      description: 'CRM integration API: lead intake',
      endpointTypes: [apigw.EndpointType.REGIONAL],
      // gzip/deflate of larger answers (the settings page's assets): lib/topology.ts compressionMinBytes.
      minCompressionSize: Size.bytes(compressionMinBytes),
      // Execution logs (errors only) need the account-level CloudWatch role.
      cloudWatchRole: true,
      deployOptions: {
        stageName: stage,
        // API Gateway throttles per method: the stage default is the catch-all mocks' low bucket,
        // each lead method and preflight gets the capacity-sized one (docs/capacity.md).
        throttlingRateLimit: catchAllThrottle.rateLimit,
        throttlingBurstLimit: catchAllThrottle.burstLimit,
        methodOptions: Object.fromEntries([...new Set(routes.map((r) => r.path))].flatMap((path) => [...methodsOn(path), ...(crossOrigin(path) ? ['OPTIONS'] : [])].map((method) => {
          const { throttle } = apiMethodFor(path, method);
          // A method's own entry replaces the stage default entirely: repeat the logging level.
          return [`${path}/${method}`, { throttlingRateLimit: throttle.rateLimit, throttlingBurstLimit: throttle.burstLimit, loggingLevel: apigw.MethodLoggingLevel.ERROR }];
        }))),
        tracingEnabled: true,
        loggingLevel: apigw.MethodLoggingLevel.ERROR,
        accessLogDestination: new apigw.LogGroupLogDestination(accessLogs),
        accessLogFormat: apigw.AccessLogFormat.jsonWithStandardFields(),
      },
    });
    api.node.tryRemoveChild('Endpoint'); // the default output; replaced by ApiUrl (outputKeys)

    // Errors API Gateway answers itself: problem+json like the function's, with CORS so a browser
    // form can read them (lib/topology.ts; the local server answers the same).
    for (const [type, spec] of entries<GatewayResponseType, GatewayAnswerSpec>(gatewayResponses)) {
      api.addGatewayResponse(`Gateway${type}`, {
        type: apigw.ResponseType.of(type),
        statusCode: spec.status === undefined ? undefined : String(spec.status),
        responseHeaders: quotedHeaders({ 'Content-Type': 'application/problem+json', ...corsResponseHeaders, ...spec.headers }),
        templates: { 'application/json': gatewayProblemBody(spec, '$context.requestId', { json: '$context.error.messageString' }) },
      });
    }

    const integrations = new Map<FunctionName, apigw.LambdaIntegration>();
    for (const route of routes) {
      // No test-invoke permissions: each method would add a second statement to the function's
      // resource policy (20 KB at most), and the settings function serves some twenty methods.
      if (!integrations.has(route.function)) integrations.set(route.function, new apigw.LambdaIntegration(this.functions[route.function], { allowTestInvoke: false }));
      api.root.resourceForPath(route.path).addMethod(route.method, integrations.get(route.function));
    }
    // Catch-alls, so no request ever meets API Gateway's 403 "Missing Authentication Token":
    // ANY on a route's path answers 405, ANY elsewhere and {proxy+} under every path 404.
    for (const resource of [api.root, ...api.root.node.findAll().filter((c): c is apigw.Resource => c instanceof apigw.Resource)]) {
      const allowed = methodsOn(resource.path);
      if (allowed.length > 0) {
        resource.addMethod('ANY', ...this.answerWithoutFunction(catchAllAnswers.methodNotAllowed(allowed)));
        // Preflights are answered by API Gateway itself, without a key. Expose-Headers is not a
        // preflight header: it is on every real answer. Same-origin routes (settings) have none.
        if (crossOrigin(resource.path)) resource.addCorsPreflight({
          allowOrigins: cors.allowOrigins,
          allowHeaders: cors.allowHeaders,
          allowMethods: [...allowed, 'OPTIONS'],
          maxAge: Duration.seconds(cors.maxAgeSeconds),
        });
      } else {
        resource.addMethod('ANY', ...this.answerWithoutFunction(catchAllAnswers.notFound));
      }
      // API Gateway allows one variable child: where a route has a path parameter here (`{id}`), it takes the proxy's place.
      if (!hasParameterChild(resource.path)) resource.addResource('{proxy+}').addMethod('ANY', ...this.answerWithoutFunction(catchAllAnswers.notFound));
    }
    this.webAcl(api.deploymentStage);

    Validations.of(api).acknowledge(
      { id: 'AwsSolutions-APIG2', reason: 'The function validates every body (zod) and answers 422 problem+json with per-field errors (DESIGN §6-7); a gateway validator would answer a different 400 shape first.' },
      { id: 'AwsSolutions-APIG4', reason: 'Callers authenticate with organization API keys, checked in the function (hashed lookup, constant-time compare); an authorizer cannot reach that key store. The settings API checks its session tokens (JWT) in its function, the settings page is static. CORS preflights and the catch-all 404/405 answers are open by design.' },
      { id: 'AwsSolutions-COG4', reason: 'Callers are web forms and automation tools holding an organization API key, not Cognito users.' },
      { id: 'AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AmazonAPIGatewayPushToCloudWatchLogs]', reason: 'The AWS-managed role API Gateway needs to write execution logs (logs only).' },
    );
    return api;
  }

  /**
   * A MOCK integration answering `spec` as problem+json: no function runs (no Lambda cost). Its
   * request templates cover the usual content types (a mock fed a raw body fails with a 500); any
   * other type gets the UNSUPPORTED_MEDIA_TYPE gateway response (passthrough NEVER).
   */
  private answerWithoutFunction(spec: GatewayAnswerSpec): [apigw.MockIntegration, apigw.MethodOptions] {
    const headers = { 'Content-Type': "'application/problem+json'", 'X-Request-Id': 'context.requestId', ...quotedHeaders({ ...corsResponseHeaders, ...spec.headers }) };
    const statusCode = String(spec.status);
    return [
      new apigw.MockIntegration({
        passthroughBehavior: apigw.PassthroughBehavior.NEVER,
        requestTemplates: Object.fromEntries(mockRequestContentTypes.map((type) => [type, mockRequestTemplate])),
        integrationResponses: [{
          statusCode,
          responseParameters: Object.fromEntries(Object.entries(headers).map(([k, v]) => [`method.response.header.${k}`, v])),
          responseTemplates: { 'application/json': gatewayProblemBody(spec, '$context.requestId') },
        }],
      }),
      { methodResponses: [{ statusCode, responseParameters: Object.fromEntries(Object.keys(headers).map((k) => [`method.response.header.${k}`, true])) }] },
    ];
  }

  /**
   * The WAF in front of the stage (`edgeRules`): rate-based rules per address, per well-formed API
   * key and per address for requests without one, so one caller's flood is blocked before it spends
   * a method's throttle bucket that every organization shares (docs/capacity.md). Blocks answer the
   * WAF_FILTERED gateway response.
   */
  private webAcl(stage: apigw.Stage): wafv2.CfnWebACL {
    // No sampled requests: they would show callers' API keys (headers) in the console.
    const visibility = (metricName: string) => ({ cloudWatchMetricsEnabled: true, sampledRequestsEnabled: false, metricName });
    const transforms = (types: string[]) => (types.length ? types : ['NONE']).map((type, priority) => ({ priority, type }));
    const anyOf = (statements: wafv2.CfnWebACL.StatementProperty[]) => (statements.length === 1 ? statements[0] : { orStatement: { statements } });
    const allOf = (statements: wafv2.CfnWebACL.StatementProperty[]) => (statements.length === 1 ? statements[0] : { andStatement: { statements } });
    const not = (statement: wafv2.CfnWebACL.StatementProperty) => ({ notStatement: { statement } });
    // An absent header matches no regex, so "well-formed" also means "present".
    const wellFormed = (key: EdgeKeySpec): wafv2.CfnWebACL.StatementProperty => ({
      regexMatchStatement: { fieldToMatch: { singleHeader: { Name: key.header } } /* an untyped L1 field: CloudFormation's casing */, regexString: key.pattern, textTransformations: transforms(['LOWERCASE']) },
    });
    const isMethod = (method: string): wafv2.CfnWebACL.StatementProperty => ({
      byteMatchStatement: { fieldToMatch: { method: {} }, positionalConstraint: 'EXACTLY', searchString: method, textTransformations: transforms([]) },
    });
    const statement = (rule: EdgeRuleSpec): wafv2.CfnWebACL.StatementProperty => {
      const scope = [
        ...('header' in rule.key ? [wellFormed(rule.key.header)] : []),
        ...(rule.withoutKey ? [not(anyOf(Object.values(edgeKeys).map(wellFormed)))] : []),
        ...(rule.exceptMethods ? [not(anyOf(rule.exceptMethods.map(isMethod)))] : []),
      ];
      return {
        rateBasedStatement: {
          limit: rule.limit,
          evaluationWindowSec: rule.windowSeconds,
          ...('header' in rule.key
            ? { aggregateKeyType: 'CUSTOM_KEYS', customKeys: [{ header: { name: rule.key.header.header, textTransformations: transforms(rule.key.transforms) } }] }
            : { aggregateKeyType: 'IP' }),
          ...(scope.length ? { scopeDownStatement: allOf(scope) } : {}),
        },
      };
    };
    const acl = new wafv2.CfnWebACL(this, 'ApiWebAcl', {
      scope: 'REGIONAL',
      defaultAction: { allow: {} },
      visibilityConfig: visibility(`${this.stackName}-api`),
      rules: edgeRules.map((rule, priority) => ({
        name: rule.name,
        priority,
        action: { block: {} },
        visibilityConfig: visibility(`${this.stackName}-${rule.name}`),
        statement: statement(rule),
      })),
    });
    new wafv2.CfnWebACLAssociation(this, 'ApiWebAclAssociation', { resourceArn: stage.stageArn, webAclArn: acl.attrArn });
    return acl;
  }

  private createAlarms(): cloudwatch.Alarm[] {
    const fiveMinutes = Duration.minutes(5);
    const stage = this.api.deploymentStage;
    return [
      this.queueNotEmptyAlarm('DeliveryDlqDepth', 'deliveryDlq',
        'Webhook deliveries exhausted their retries and wait in the dead-letter queue: inspect with `crm deliveries list --status failed`, then `crm deliveries redrive`.'),
      this.queueNotEmptyAlarm('FanoutFailures', 'fanoutFailures',
        'Stream batches the fan-out gave up on: events may be missing. Fix the cause, then `crm events replay-failures` (within 24 h, the stream retention).'),
      this.alarm('DeliveryFailureRate', 'More than 25% of webhook delivery attempts failed over 15 minutes.',
        new cloudwatch.MathExpression({
          expression: 'IF(attempts > 0, 100 * failures / attempts, 0)',
          usingMetrics: { attempts: this.serviceMetric('DeliveryAttempts'), failures: this.serviceMetric('DeliveryFailures') },
          period: Duration.minutes(15),
        }), { threshold: 25, above: true }),
      // Visible = ready and not taken.
      this.alarm('DeliveryQueueBacklog', `Over ${deliveryBacklogThreshold} webhook deliveries have waited ready but unconsumed for 15 minutes: the delivery function is not keeping up or not consuming.`,
        this.queues.deliveryQueue.metricApproximateNumberOfMessagesVisible({ period: fiveMinutes, statistic: 'Maximum' }), { threshold: deliveryBacklogThreshold, above: true, periods: 3 }),
      // Retries never wait in flight (DESIGN §16): in flight are only the attempts under way (at most
      // maxConcurrency × 10) and crashed ones awaiting their visibility time-out. SQS stops handing
      // out messages at ~120,000 in flight, for every organization.
      this.alarm('DeliveryInFlight', `Over ${deliveryInFlightThreshold} delivery messages have been in flight for 15 minutes (SQS stalls the whole queue at ~120,000): attempts are crashing or hanging.`,
        this.queues.deliveryQueue.metricApproximateNumberOfMessagesNotVisible({ period: fiveMinutes, statistic: 'Maximum' }), { threshold: deliveryInFlightThreshold, above: true, periods: 3 }),
      // A message waits at most 15 min delayed, then is taken within seconds: older means stuck.
      this.alarm('DeliveryOldestMessageAge', 'The oldest delivery message is over 30 minutes old: deliveries are not being consumed (or keep crashing).',
        this.queues.deliveryQueue.metricApproximateAgeOfOldestMessage({ period: fiveMinutes, statistic: 'Maximum' }), { threshold: 30 * 60, above: true }),
      // The slow lane has a small concurrency of its own: its backlog grows unseen by the main lane's alarms.
      this.alarm('DeliverySlowLaneOldestMessageAge', 'The oldest slow-lane delivery message is over 30 minutes old: the slow lane (failing, hanging or slow endpoints) is not keeping up or not consuming. Healthy endpoints are not affected.',
        this.queues.deliverySlowQueue.metricApproximateAgeOfOldestMessage({ period: fiveMinutes, statistic: 'Maximum' }), { threshold: 30 * 60, above: true }),
      this.alarm('DueSweepLag', 'Parked webhook retries are re-queued more than 5 minutes late: the delivery sweeper is failing, throttled or capped (see its log group).',
        this.serviceMetric('DueSweepLagSeconds', fiveMinutes).with({ statistic: 'Maximum' }), { threshold: 300, above: true }),
      // A sweeper that does not run at all publishes no lag: missing invocations are the alarm here.
      new cloudwatch.Alarm(this, 'DueSweepNotRunning', {
        alarmDescription: 'The delivery sweeper has not run for 15 minutes (its schedule rule disabled or its invoke permission gone): parked webhook retries are not being re-queued.',
        metric: this.functions.deliverySweeper.metricInvocations({ period: Duration.minutes(15), statistic: 'Sum' }),
        threshold: 1, evaluationPeriods: 1,
        comparisonOperator: cloudwatch.ComparisonOperator.LESS_THAN_THRESHOLD,
        treatMissingData: cloudwatch.TreatMissingData.BREACHING,
      }),
      this.alarm('FanoutIteratorAge', 'The fan-out is more than 5 minutes behind the table streams: events are late (records older than 24 h are lost).',
        this.functions.eventFanout.metric('IteratorAge', { period: fiveMinutes, statistic: 'Maximum' }), { threshold: 5 * 60_000, above: true }),
      this.alarm('Api5xx', 'The API answered 5 or more 5xx in 5 minutes (function errors, 502/504 from the gateway).',
        stage.metricServerError({ period: fiveMinutes, statistic: 'Sum' }), { threshold: 5 }),
      this.alarm('ApiLatency', 'The API\'s p99 latency was over 3 s for 15 minutes.',
        stage.metricLatency({ period: fiveMinutes, statistic: 'p99' }), { threshold: 3000, above: true, periods: 3 }),
      this.alarm('RateLimitFailOpen', 'The rate limiter could not reach its table and admitted requests unchecked (rateLimitFailMode "open").',
        this.serviceMetric('RateLimitFailOpen', fiveMinutes), { threshold: 1 }),
      this.alarm('CircuitsOpened', `${circuitsOpenedThreshold} or more webhook endpoints' circuits opened in 15 minutes (their deliveries are re-scheduled, not attempted): check the delivery function's egress, DNS and TLS before blaming receivers; \`crm webhooks list\` shows each endpoint's circuit.`,
        this.serviceMetric('CircuitOpened'), { threshold: circuitsOpenedThreshold }),
      this.alarm('DeliveryOutcomesUnwritten', 'Webhooks were delivered but their outcome could not be recorded (the deliveries table refused both the batch write and the per-record updates): their messages are received again and sent twice (same webhook-id). See the delivery function\'s log.',
        this.serviceMetric('DeliveryOutcomesUnwritten', fiveMinutes), { threshold: 1 }),
      this.alarm('TenantMismatch', 'A stream record\'s organization attribute disagreed with its partition key: it was dropped, not delivered. Inspect the item the fan-out logged.',
        this.serviceMetric('TenantMismatch', fiveMinutes), { threshold: 1 }),
      this.alarm('CaptchaUnavailable', 'A CAPTCHA could not be verified (provider down or slow, or an organization\'s secret rejected): publishable-key leads were refused with 503 (fail closed). See lead intake\'s log.',
        this.serviceMetric('CaptchaUnavailable', fiveMinutes), { threshold: 1 }),
      ...entries(this.functions).flatMap(([name, fn]) => [
        this.alarm(`${name}Errors`, `The ${name} function is failing (unhandled errors or timeouts): see its log group.`,
          fn.metricErrors({ period: fiveMinutes }), { threshold: 5 }),
        this.alarm(`${name}Throttles`, `The ${name} function was refused concurrency: the account's Lambda concurrency is exhausted (docs/capacity.md).`,
          fn.metricThrottles({ period: fiveMinutes }), { threshold: 1 }),
      ]),
    ];
  }

  /** A Powertools metric of the functions (namespace and `service` dimension shared with them). */
  private serviceMetric(metricName: string, period = Duration.minutes(15)): cloudwatch.Metric {
    return new cloudwatch.Metric({ namespace: metricsNamespace, metricName, dimensionsMap: { service: serviceName }, statistic: 'Sum', period });
  }

  /** An alarm on one period (unless `periods`), missing data = fine; `threshold` reached fires, or exceeded with `above`. */
  private alarm(id: string, description: string, metric: cloudwatch.IMetric, opts: { threshold: number; above?: boolean; periods?: number }): cloudwatch.Alarm {
    return new cloudwatch.Alarm(this, id, {
      alarmDescription: description,
      metric,
      threshold: opts.threshold,
      evaluationPeriods: opts.periods ?? 1,
      comparisonOperator: opts.above ? cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD : cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
      treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
    });
  }

  /** Alarms as soon as a parking queue holds anything. */
  private queueNotEmptyAlarm(id: string, queue: QueueName, description: string): cloudwatch.Alarm {
    return this.alarm(id, description, this.queues[queue].metricApproximateNumberOfMessagesVisible({ period: Duration.minutes(5), statistic: 'Maximum' }), { threshold: 1 });
  }
}
