/**
 * The AWS deployment, looped from lib/topology.ts and configured per stage by lib/stages.ts:
 * DynamoDB tables (+ streams, TTL, PITR, AWS Backup of the durable ones), SQS queues (+ dead-letter redrive), the SSM
 * settings parameter, the functions with their grants and event sources, the REST API and its WAF
 * (crm-api.ts), alarms (crm-alarms.ts), the dashboard (crm-dashboard.ts) and outputs. Nothing about
 * tables, queues, functions or routes is written here that the topology does not say.
 */
import { ArnFormat, CfnOutput, Duration, RemovalPolicy, Stack, Validations, type StackProps } from 'aws-cdk-lib';
import type * as apigw from 'aws-cdk-lib/aws-apigateway';
import * as backup from 'aws-cdk-lib/aws-backup';
import * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as events from 'aws-cdk-lib/aws-events';
import { LambdaFunction } from 'aws-cdk-lib/aws-events-targets';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import { DynamoEventSource } from 'aws-cdk-lib/aws-lambda-event-sources';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as kms from 'aws-cdk-lib/aws-kms';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import * as secretsmanager from 'aws-cdk-lib/aws-secretsmanager';
import * as ssm from 'aws-cdk-lib/aws-ssm';
import type { Construct } from 'constructs';
import { functions, outputKeys, queues, secrets, type SecretName, type SecretSpec, settingsParameterName, tables, type EventSourceSpec, type FunctionName, type FunctionSpec, type QueueName, type QueueSpec, type TableName, type TableSpec } from '../topology.js';
import type { BackupConfig, StageConfig } from '../stages.js';
import { defaultConfig } from '../../functions/core/platform/config.js';
import { CrmAlarms } from './crm-alarms.js';
import { CrmApi } from './crm-api.js';
import { CrmDashboard } from './crm-dashboard.js';
import { CrmFunction, queueSendActions } from './crm-function.js';
import { CrmMail } from './crm-mail.js';
import { mailerEnvVars } from '../../functions/core/platform/bindings.js';

const entries = <K extends string, V>(o: Partial<Record<K, V>>) => Object.entries(o) as [K, V][];
// The topology's entries, seen through their general shapes.
const tableSpecs: Record<TableName, TableSpec> = tables;
const queueSpecs: Record<QueueName, QueueSpec> = queues;
const functionSpecs: Record<FunctionName, FunctionSpec> = functions;
const secretSpecs: Record<SecretName, SecretSpec> = secrets;
const keyType = (t: 'S' | 'N') => (t === 'S' ? dynamodb.AttributeType.STRING : dynamodb.AttributeType.NUMBER);

type Concurrency = Pick<StageConfig, 'deliveryMaxConcurrency' | 'deliveryReservedConcurrency' | 'bulkReservedConcurrency'>;
/** An SQS event source's MaximumConcurrency: the topology's, or the stage's for the main delivery lane. */
const mappingConcurrency = (source: Extract<EventSourceSpec, { kind: 'queue' }>, config: Concurrency) =>
  source.queue === 'deliveryQueue' ? config.deliveryMaxConcurrency ?? source.maxConcurrency : source.maxConcurrency;

/** The queue-fed functions whose concurrency is reserved, with the stage setting that may change it. */
const queueFed = {
  webhookDelivery: { setting: 'deliveryReservedConcurrency', what: 'the delivery function' },
  bulkFanout: { setting: 'bulkReservedConcurrency', what: 'the bulk fan-out' },
} as const;

/** A queue-fed function's reserved concurrency: at least the sum of its mappings' (0: none reserved), as AWS advises for SQS event sources. */
export function reservedConcurrency(name: keyof typeof queueFed, config: Concurrency): number {
  const { setting, what } = queueFed[name];
  const mappings = functionSpecs[name].events.reduce((sum, source) => sum + (source.kind === 'queue' ? mappingConcurrency(source, config) : 0), 0);
  const reserved = config[setting] ?? mappings;
  if (reserved !== 0 && reserved < mappings) {
    throw new Error(`${setting} ${reserved} is below ${what}'s event sources' maximum concurrency (${mappings} in all): reserve at least that, or 0 for none (docs/capacity.md).`);
  }
  return reserved;
}

export interface CrmStackProps extends StackProps {
  stage: string;
  /** The stage's settings from lib/stages.ts (checked by lib/stacks/app.ts resolveStage). */
  config: StageConfig;
}

export class CrmStack extends Stack {
  readonly tables = {} as Record<TableName, dynamodb.Table>;
  readonly queues = {} as Record<QueueName, sqs.Queue>;
  readonly functions = {} as Record<FunctionName, CrmFunction>;
  readonly secrets = {} as Record<SecretName, secretsmanager.Secret>;
  readonly settings: ssm.StringParameter;
  readonly api: apigw.RestApi;
  readonly monitoring: CrmAlarms;
  readonly backupPlan?: backup.BackupPlan;

  constructor(scope: Construct, id: string, props: CrmStackProps) {
    super(scope, id, props);
    const { stage, config } = props;

    for (const [name, spec] of entries(tableSpecs)) this.tables[name] = this.table(name, spec, stage, config.pointInTimeRecoveryDays ?? 35);

    // Dead-letter queues first: a queue's redrive policy names one.
    const ordered = entries(queueSpecs).sort(([, a], [, b]) => Number(!!a.deadLetter) - Number(!!b.deadLetter));
    for (const [name, spec] of ordered) this.queues[name] = this.queue(name, spec);

    // Runtime settings of the stage (no secrets): edited in SSM, read by the functions (cached 5 min).
    this.settings = new ssm.StringParameter(this, 'Settings', {
      parameterName: settingsParameterName(stage),
      description: `Runtime configuration of the CRM integration API (${stage}); see functions/core/platform/config.ts`,
      stringValue: JSON.stringify({ ...defaultConfig, stage, ...(config.notices ? { noticeSender: config.notices.sender } : {}) }),
    });

    for (const [name, spec] of entries(secretSpecs)) this.secrets[name] = this.secret(name, spec, stage);

    const logKey = config.logEncryptionKey ? this.logKey(stage) : undefined;
    for (const [name, spec] of entries(functionSpecs)) {
      const fn = new CrmFunction(this, `${name}Function`, { spec, stage, settings: this.settings, logRetentionDays: config.logRetentionDays, logKey });
      for (const [secret] of entries(spec.secrets ?? {})) fn.bindSecret(this.secrets[secret], secretSpecs[secret]);
      for (const [table, access] of entries(spec.tables)) fn.bindTable(this.tables[table], tableSpecs[table], access);
      for (const [queue, access] of entries(spec.queues)) fn.bindQueue(this.queues[queue], queueSpecs[queue], access);
      for (const source of spec.events) {
        if (source.kind === 'schedule') {
          new events.Rule(this, `${name}Schedule`, { schedule: events.Schedule.rate(Duration.minutes(source.rateMinutes)), targets: [new LambdaFunction(fn, { retryAttempts: 0 })] });
          // No Lambda retries of a failed run either (2 by default): the next period's run redoes its
          // work, and a retry would overlap it (two sweeps sending the same parked deliveries).
          fn.configureAsyncInvoke({ retryAttempts: 0, maxEventAge: Duration.seconds(source.rateMinutes * 60) });
          // One run at a time (the sweeper): a run still going when the next is due makes the next one
          // wait (and expire after a period) instead of sweeping the same parked deliveries alongside
          // it. Not a scheduled function that also consumes a queue (the daily digest): its mapping
          // would be throttled by the reservation.
          const oneAtATime = source.oneAtATime ? config.sweeperReservedConcurrency ?? 1 : 0;
          if (oneAtATime > 0) (fn.node.defaultChild as lambda.CfnFunction).reservedConcurrentExecutions = oneAtATime;
        } else {
          fn.addEventSource(this.eventSource(source, config));
        }
      }
      this.functions[name] = fn;
    }
    // Lead intake keeps its headroom whatever deliveries do (docs/capacity.md).
    if (config.leadIntakeReservedConcurrency > 0) this.reserve('leadIntake', config.leadIntakeReservedConcurrency);
    for (const name of Object.keys(queueFed) as (keyof typeof queueFed)[]) {
      const reserved = reservedConcurrency(name, config);
      if (reserved > 0) this.reserve(name, reserved);
    }

    // 'Default' adds nothing to its children's logical ids: the API keeps its id (and URL) across this split.
    this.api = new CrmApi(this, 'Default', { stage, functions: this.functions, logRetention: config.logRetentionDays as number, logKey }).api;
    this.monitoring = new CrmAlarms(this, 'Monitoring', { stage, alarmEmail: config.alarmEmail, pagerEndpoint: config.pagerEndpoint, tables: this.tables, queues: this.queues, functions: this.functions, api: this.api });
    new CrmDashboard(this, 'Observability', { stage, tables: this.tables, queues: this.queues, functions: this.functions, api: this.api, alarms: this.monitoring.alarms.map((a) => a.alarm) });
    if (config.backup) this.backupPlan = this.backupTables(stage, config.backup);

    // The base URL without a trailing slash, like the local stack's apiUrl: clients append /api/...
    const apiUrl = `https://${this.api.restApiId}.execute-api.${this.region}.${this.urlSuffix}/${this.api.deploymentStage.stageName}`;
    new CfnOutput(this, outputKeys.apiUrl, { value: apiUrl, description: 'Base URL of the API' });
    // Notices by e-mail: SES with a configuration set; the links in them open this API's pages.
    const senders = entries(functionSpecs).filter(([, spec]) => spec.sendsMail).map(([name]) => this.functions[name]);
    for (const fn of senders) fn.addEnvironment(mailerEnvVars.publicApiUrl, config.notices?.linkBaseUrl ?? apiUrl);
    new CrmMail(this, 'Mail', { sender: config.notices?.sender ?? defaultConfig.noticeSender, senders, feedbackQueue: this.queues.mailFeedbackQueue });
    for (const [name, table] of entries(this.tables)) new CfnOutput(this, outputKeys.table(name), { value: table.tableName });
    for (const [name, queue] of entries(this.queues)) new CfnOutput(this, outputKeys.queue(name), { value: queue.queueUrl });
    new CfnOutput(this, outputKeys.settingsParameter, { value: this.settings.parameterName });
    // The secrets' ARNs, never their values (`crm settings-link --stage` reads the value with GetSecretValue).
    for (const [name, secret] of entries(this.secrets)) new CfnOutput(this, outputKeys.secret(name), { value: secret.secretArn });
    this.requireSourceAccount();
  }

  /**
   * Every permission letting an AWS service invoke a function names this account as the source
   * (Control Tower CT.LAMBDA.PR.2, docs/deploy.md): API Gateway's SourceArn is a Fn::Join that a
   * static check cannot read, and a service acting for another account can never invoke.
   */
  private requireSourceAccount(): void {
    for (const permission of this.node.findAll().filter((c): c is lambda.CfnPermission => c instanceof lambda.CfnPermission)) {
      if (typeof permission.principal === 'string' && permission.principal.endsWith('.amazonaws.com')) permission.sourceAccount ??= this.account;
    }
  }

  /**
   * The key of the log groups (the stage's `logEncryptionKey`): rotated yearly, retained (logs kept a
   * year stay readable after the stack is gone), usable by CloudWatch Logs of this region for this
   * account's log groups alone (AWS's documented key policy for encrypted log groups).
   */
  private logKey(stage: string): kms.Key {
    const key = new kms.Key(this, 'LogsKey', {
      description: `Encrypts the CRM integration API's log groups (${stage})`,
      enableKeyRotation: true,
      removalPolicy: RemovalPolicy.RETAIN,
    });
    key.addToResourcePolicy(new iam.PolicyStatement({
      principals: [new iam.ServicePrincipal(`logs.${this.region}.amazonaws.com`)],
      actions: ['kms:Encrypt*', 'kms:Decrypt*', 'kms:ReEncrypt*', 'kms:GenerateDataKey*', 'kms:Describe*'],
      resources: ['*'],
      conditions: { ArnLike: { 'kms:EncryptionContext:aws:logs:arn': this.formatArn({ service: 'logs', resource: 'log-group', resourceName: '*', arnFormat: ArnFormat.COLON_RESOURCE_NAME }) } },
    }));
    // Grants on the key only for AWS resources, made by AWS services (Control Tower CT.KMS.PR.3).
    key.addToResourcePolicy(new iam.PolicyStatement({
      effect: iam.Effect.DENY,
      principals: [new iam.AnyPrincipal()],
      actions: ['kms:CreateGrant'],
      resources: ['*'],
      conditions: { BoolIfExists: { 'kms:GrantIsForAWSResource': 'false', 'aws:PrincipalIsAWSService': 'false' } },
    }));
    return key;
  }

  private reserve(name: FunctionName, concurrency: number): void {
    (this.functions[name].node.defaultChild as lambda.CfnFunction).reservedConcurrentExecutions = concurrency;
  }

  /**
   * AWS Backup of the durable tables (not `everyItemExpires`: an expiring table's items are gone
   * before a weekly point would be needed, and point-in-time recovery covers its window): a weekly
   * and a monthly restore point, each kept as the stage says, copied to a vault in `copyToRegion`
   * when configured (a region-wide outage or a deleted account resource cannot take both).
   * Restores: docs/operations.md. What it costs: docs/capacity.md "Cost".
   */
  private backupTables(stage: string, config: BackupConfig): backup.BackupPlan {
    // A generated name: the vault is retained, so a fixed name would make the next deploy after a
    // stack deletion fail with AlreadyExists. Its name is an output (BackupVaultName).
    const vault = new backup.BackupVault(this, 'BackupVault', { removalPolicy: RemovalPolicy.RETAIN });
    new CfnOutput(this, outputKeys.backupVault, { value: vault.backupVaultName, description: 'The AWS Backup vault of the weekly and monthly table backups' });
    // What `aws backup start-restore-job --iam-role-arn` takes (docs/operations.md "Restore").
    const restoreRole = new iam.Role(this, 'BackupRestoreRole', {
      assumedBy: new iam.ServicePrincipal('backup.amazonaws.com'),
      description: 'Assumed by AWS Backup to restore a table backup into a new table',
      managedPolicies: [iam.ManagedPolicy.fromAwsManagedPolicyName('service-role/AWSBackupServiceRolePolicyForRestores')],
    });
    Validations.of(restoreRole).acknowledge({
      id: 'AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AWSBackupServiceRolePolicyForRestores]',
      reason: 'The role AWS Backup assumes to restore a backup: AWS\'s own policy for that service, kept current by AWS.',
    });
    new CfnOutput(this, outputKeys.backupRestoreRole, { value: restoreRole.roleArn, description: 'The role to pass to aws backup start-restore-job' });
    this.monitoring.watchBackups(vault.backupVaultName);
    const copyVault = config.copyToRegion && backup.BackupVault.fromBackupVaultArn(this, 'BackupCopyVault', this.formatArn({
      service: 'backup', region: config.copyToRegion, resource: 'backup-vault', resourceName: `crm-${stage}-copy`, arnFormat: ArnFormat.COLON_RESOURCE_NAME,
    }));
    const plan = new backup.BackupPlan(this, 'BackupPlan', { backupPlanName: `crm-${stage}`, backupVault: vault });
    const cold = config.monthlyColdAfterDays;
    // Cold storage bills 90 days at least: a point deleted sooner would cost more than kept warm (AWS Backup refuses it too).
    if (cold !== undefined && config.monthlyRetentionDays < cold + 90) {
      throw new Error(`monthlyRetentionDays ${config.monthlyRetentionDays} must be at least monthlyColdAfterDays + 90 (${cold + 90}): cold storage keeps a point 90 days (docs/operations.md "Backups")`);
    }
    const rules = [
      { ruleName: 'Weekly', days: config.weeklyRetentionDays, schedule: events.Schedule.cron({ minute: '0', hour: '3', weekDay: 'SUN' }) },
      { ruleName: 'Monthly', days: config.monthlyRetentionDays, coldAfter: cold, schedule: events.Schedule.cron({ minute: '0', hour: '3', day: '1' }) },
    ];
    const lifecycleOf = (days: number, coldAfter: number | undefined) =>
      ({ deleteAfter: Duration.days(days), ...(coldAfter !== undefined && days >= coldAfter + 90 ? { moveToColdStorageAfter: Duration.days(coldAfter) } : {}) });
    for (const { ruleName, days, coldAfter, schedule } of rules.filter((r) => r.days > 0)) {
      // The second region's copies are for losing a region: kept `copyRetentionDays` at most (the recent past), the points themselves as long as the rule says.
      const copyDays = Math.min(days, config.copyRetentionDays ?? days);
      plan.addRule(new backup.BackupPlanRule({
        ruleName, scheduleExpression: schedule, ...lifecycleOf(days, coldAfter),
        copyActions: copyVault ? [{ destinationBackupVault: copyVault, ...lifecycleOf(copyDays, coldAfter) }] : undefined,
      }));
    }
    const durable = entries(tableSpecs).filter(([, spec]) => !spec.everyItemExpires).map(([name]) => this.tables[name]);
    const selection = plan.addSelection('Tables', { resources: durable.map((t) => backup.BackupResource.fromDynamoDbTable(t)) });
    Validations.of(selection).acknowledge({
      id: 'AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AWSBackupServiceRolePolicyForBackup]',
      reason: 'The role AWS Backup assumes to back up the selected tables: AWS\'s own policy for that service, kept current by AWS.',
    });
    return plan;
  }

  /** A table as the topology describes it; point-in-time recovery on every one, reaching back `recoveryDays`. */
  private table(name: TableName, spec: TableSpec, stage: string, recoveryDays: number): dynamodb.Table {
    const key = (k: { name: string; type: 'S' | 'N' }) => ({ name: k.name, type: keyType(k.type) });
    const table = new dynamodb.Table(this, `${name}Table`, {
      partitionKey: key(spec.partitionKey),
      sortKey: spec.sortKey && key(spec.sortKey),
      billingMode: dynamodb.BillingMode.PAY_PER_REQUEST,
      pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true, recoveryPeriodInDays: recoveryDays },
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
      // A parking queue holds the only copy of what failed (the bulk queue, of an import's share): it outlives the stack, like the tables.
      removalPolicy: dead && !spec.holdsOnlyCopy ? RemovalPolicy.DESTROY : RemovalPolicy.RETAIN,
    });
    if (!dead) {
      Validations.of(queue).acknowledge({
        id: 'AwsSolutions-SQS3',
        reason: 'This queue is itself a dead-letter / on-failure destination: messages here are parked for inspection and redelivery, not processed.',
      });
    }
    return queue;
  }

  private eventSource(source: Exclude<EventSourceSpec, { kind: 'schedule' }>, config: Concurrency): lambda.IEventSource {
    if (source.kind === 'stream') {
      return new DynamoEventSource(this.tables[source.table], {
        startingPosition: lambda.StartingPosition.TRIM_HORIZON,
        batchSize: source.batchSize,
        parallelizationFactor: source.parallelizationFactor,
        retryAttempts: source.maxRetries,
        bisectBatchOnError: source.bisectOnError,
        reportBatchItemFailures: true,
        ...(source.batchingWindowSeconds ? { maxBatchingWindow: Duration.seconds(source.batchingWindowSeconds) } : {}),
        ...(source.filter ? { filters: [lambda.FilterCriteria.filter(source.filter)] } : {}),
        // Lambda needs SendMessage alone for an on-failure destination (SqsDlq would add GetQueueAttributes and GetQueueUrl).
        ...(source.onFailure ? { onFailure: { bind: (_mapping: unknown, fn: lambda.IFunction) => {
          const queue = this.queues[source.onFailure!];
          fn.addToRolePolicy(new iam.PolicyStatement({ actions: queueSendActions, resources: [queue.queueArn] }));
          return { destination: queue.queueArn };
        } } } : {}),
      });
    }
    // The mapping is made here, not with SqsEventSource, which would also grant ChangeMessageVisibility
    // and GetQueueUrl: the function's role has what the mapping uses (bindQueue 'consume').
    return { bind: (fn: lambda.IFunction) => void fn.addEventSourceMapping(`${source.queue}Source`, {
      eventSourceArn: this.queues[source.queue].queueArn,
      batchSize: source.batchSize,
      reportBatchItemFailures: true,
      maxConcurrency: mappingConcurrency(source, config),
    }) };
  }
}
