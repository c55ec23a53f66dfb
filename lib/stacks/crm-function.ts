/**
 * The one Lambda function construct. It fixes what every function shares (Node 24 on arm64, an ESM
 * bundle with source maps, X-Ray, JSON logs in its own log group, the settings parameter) and
 * offers bindTable()/bindQueue(), which grant access AND set the env var naming the resource in one
 * call: permission and configuration never drift, and a function can never read a name it has no
 * grant for (functions/core/platform/deps.ts throws on names that are not set).
 */
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Duration, RemovalPolicy, Stack, Token, Validations } from 'aws-cdk-lib';
import type * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as iam from 'aws-cdk-lib/aws-iam';
import type * as kms from 'aws-cdk-lib/aws-kms';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import { NodejsFunction, OutputFormat, type ICommandHooks } from 'aws-cdk-lib/aws-lambda-nodejs';
import * as logs from 'aws-cdk-lib/aws-logs';
import type * as secretsmanager from 'aws-cdk-lib/aws-secretsmanager';
import type * as sqs from 'aws-cdk-lib/aws-sqs';
import * as ssm from 'aws-cdk-lib/aws-ssm';
import type { Construct } from 'constructs';
import { type FunctionSpec, type QueueAccess, type SecretSpec, type QueueSpec, type TableAccess, type TableGrant, type TableSpec } from '../topology.js';
import { serviceName, settingsParameterEnvVar } from '../../functions/core/platform/bindings.js';
import { settingsSnapshotEnvVar } from '../../functions/core/platform/config.js';

/** Every read the domain makes (TransactGetItems needs GetItem); never Scan. */
export const tableReadActions = ['dynamodb:GetItem', 'dynamodb:BatchGetItem', 'dynamodb:Query', 'dynamodb:ConditionCheckItem'];
/** Every write the domain makes (TransactWriteItems needs the ones it contains). */
export const tableWriteActions = ['dynamodb:PutItem', 'dynamodb:UpdateItem', 'dynamodb:DeleteItem', 'dynamodb:BatchWriteItem', 'dynamodb:ConditionCheckItem'];
/** Writes that change or add an item, never remove one (`readUpdate`). */
export const tableUpdateActions = ['dynamodb:PutItem', 'dynamodb:UpdateItem', 'dynamodb:ConditionCheckItem'];
export const queueSendActions = ['sqs:SendMessage'];
/** What Lambda's SQS event source mapping needs of the function's role (AWSLambdaSQSQueueExecutionRole). */
export const queueConsumeActions = ['sqs:ReceiveMessage', 'sqs:DeleteMessage', 'sqs:GetQueueAttributes'];

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

export interface CrmFunctionProps {
  spec: FunctionSpec;
  stage: string;
  /**
   * The stage's runtime settings (functions/core/platform/config.ts), a parameter of this stack: read
   * access is granted, and the document it is created with becomes the function's fallback snapshot.
   */
  settings: ssm.StringParameter;
  /** Days the function's log group keeps its lines (lib/stages.ts). */
  logRetentionDays: number;
  /** The key encrypting the log group (the stage's `logEncryptionKey`), or none. */
  logKey?: kms.IKey;
}

/**
 * The settings document the stack writes to SSM, as deployed: a cold container serves it when SSM
 * fails (throttled at 40 TPS by a scale-out) and nothing is cached yet.
 */
function deployedSettingsDocument(settings: ssm.StringParameter): string {
  const value = (settings.node.defaultChild as ssm.CfnParameter).value;
  if (Token.isUnresolved(value)) throw new Error('CrmFunction: the settings parameter needs a literal value to snapshot it');
  return value;
}

/** Bundling hooks copying `source` (relative to the project root) to `target` in the bundle folder. */
function copyAssets(source: string, target: string): ICommandHooks {
  return {
    beforeBundling: () => [],
    beforeInstall: () => [],
    afterBundling: (inputDir, outputDir) => [`cp -R "${path.join(inputDir, source)}" "${path.join(outputDir, target)}"`],
  };
}

export class CrmFunction extends NodejsFunction {
  constructor(scope: Construct, id: string, { spec, stage, settings, logRetentionDays, logKey }: CrmFunctionProps) {
    // An explicit log group (not the implicit /aws/lambda/<name> one) so retention is set and the
    // group is part of the stack.
    const logGroup = new logs.LogGroup(scope, `${id}Logs`, { retention: logRetentionDays as logs.RetentionDays, encryptionKey: logKey, removalPolicy: RemovalPolicy.DESTROY });
    // A role of our own: CDK's default one carries AWSLambdaBasicExecutionRole, which lets the
    // function write into any log group of the account. This one writes to its own group alone.
    const role = new iam.Role(scope, `${id}Role`, { assumedBy: new iam.ServicePrincipal('lambda.amazonaws.com'), description: `Execution role of ${id} (${stage})` });
    // The group's ARN ends in `:*`: its log streams, the resource of both actions (AWS's documented
    // policy for a function's own log group).
    role.addToPolicy(new iam.PolicyStatement({ actions: ['logs:CreateLogStream', 'logs:PutLogEvents'], resources: [logGroup.logGroupArn] }));
    super(scope, id, {
      role,
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
      projectRoot: root,
      depsLockFilePath: path.join(root, 'package-lock.json'),
      environment: {
        STAGE: stage,
        POWERTOOLS_SERVICE_NAME: serviceName,
        NODE_OPTIONS: '--enable-source-maps',
        [settingsParameterEnvVar]: settings.parameterName,
        [settingsSnapshotEnvVar]: deployedSettingsDocument(settings),
      },
      bundling: {
        format: OutputFormat.ESM,
        target: 'node24',
        minify: true,
        sourceMap: true,
        mainFields: ['module', 'main'],
        // ESM bundles still meet CommonJS dependencies that call require().
        banner: "import { createRequire } from 'node:module'; const require = createRequire(import.meta.url);",
        // The default externals stay: @aws-sdk/* comes from the Node 24 runtime's own SDK v3
        // (smaller bundles, faster cold starts; docs/decisions.md). Everything else is bundled.
        // Static files the function reads at run time go next to index.mjs, where its
        // import.meta.url-relative reads find them (a local shell command: no Docker, offline).
        ...(spec.assets ? { commandHooks: copyAssets(path.join('functions', spec.entry, spec.assets), spec.assets) } : {}),
      },
    });
    // GetParameter on this one parameter: grantRead would add GetParameters, GetParameterHistory
    // and DescribeParameters, which the functions never call.
    this.addToRolePolicy(new iam.PolicyStatement({ actions: ['ssm:GetParameter'], resources: [settings.parameterArn] }));

    const streams = spec.events.some((e) => e.kind === 'stream');
    // Findings on the role's policy are acknowledged on the role (a sibling of the function, not a child).
    Validations.of(role).acknowledge(
      {
        id: 'AwsSolutions-IAM5[Resource::*]',
        reason: 'X-Ray tracing (xray:PutTraceSegments, xray:PutTelemetryRecords) has no resource-level permissions'
          + (streams ? '; the DynamoDB stream event source needs dynamodb:ListStreams, which has none either.' : '.'),
      },
    );
  }

  /**
   * Grants `access` to the table (and its indexes) and sets its env var. Explicit lists: CDK's
   * grantReadData adds Scan (only the local stack scans) and DescribeTable, which no function calls.
   * Transactions need the actions they contain, nothing else.
   */
  bindTable(table: dynamodb.Table, spec: TableSpec, access: TableAccess): this {
    if (isGrantList(access)) {
      for (const grant of access) this.bindTable(table, spec, grant);
      return this;
    }
    if (typeof access === 'object') {
      // Exactly the actions named, on the table itself and the one index named: no `index/*` wildcard.
      const conditions = { ...(access.attributes ? attributeConditions(access.actions, access.attributes) : {}), ...(access.leadingKeys ? partitionConditions(access.leadingKeys) : {}) };
      this.addToRolePolicy(new iam.PolicyStatement({ actions: [...access.actions], resources: [table.tableArn], ...(Object.keys(conditions).length ? { conditions } : {}) }));
      if (access.attributes) for (const deny of wholeItemDenials(access.actions, table.tableArn)) this.addToRolePolicy(deny);
      if (access.index) this.addToRolePolicy(new iam.PolicyStatement({ actions: [...access.index.actions], resources: [`${table.tableArn}/index/${access.index.name}`] }));
      this.addEnvironment(spec.envVar, table.tableName);
      return this;
    }
    if (access === 'readFields') return this.bindTableFields(table, spec);
    const writes = access === 'read' ? [] : access === 'readUpdate' ? tableUpdateActions : tableWriteActions;
    const actions = [...(access === 'write' ? [] : tableReadActions), ...writes];
    const indexes = spec.globalIndexes?.length && access !== 'write' ? [`${table.tableArn}/index/*`] : [];
    this.addToRolePolicy(new iam.PolicyStatement({ actions: [...new Set(actions)], resources: [table.tableArn, ...indexes] }));
    this.addEnvironment(spec.envVar, table.tableName);
    if (indexes.length) {
      const logicalId = Stack.of(table).getLogicalId(table.node.defaultChild as dynamodb.CfnTable);
      Validations.of(this.role!).acknowledge({
        id: `AwsSolutions-IAM5[Resource::<${logicalId}.Arn>/index/*]`,
        reason: `Queries on the table's own indexes (${spec.globalIndexes!.map((i) => i.name).join(', ')}); scoped to that one table.`,
      });
    }
    return this;
  }

  /**
   * Query alone, and only projecting the table's readable fields: `dynamodb:Select` must be
   * SPECIFIC_ATTRIBUTES (StringEquals, not IfExists: a request without it would read whole items)
   * and every attribute asked for must be listed.
   */
  private bindTableFields(table: dynamodb.Table, spec: TableSpec): this {
    if (!spec.readableFields?.length) throw new Error(`${spec.envVar}: a readFields grant needs the table's readableFields`);
    this.addToRolePolicy(new iam.PolicyStatement({
      actions: ['dynamodb:Query'], resources: [table.tableArn],
      conditions: projecting(spec.readableFields, 'StringEquals'),
    }));
    this.addEnvironment(spec.envVar, table.tableName);
    return this;
  }

  /** Grants GetSecretValue on this one secret (grantRead would add DescribeSecret) and sets the env var holding its ARN. */
  bindSecret(secret: secretsmanager.ISecret, spec: SecretSpec): this {
    this.addToRolePolicy(new iam.PolicyStatement({ actions: ['secretsmanager:GetSecretValue'], resources: [secret.secretArn] }));
    this.addEnvironment(spec.envVar, secret.secretArn);
    return this;
  }

  /**
   * Grants sending and/or consuming on the queue and sets the env var holding its URL. Sending is
   * SendMessage alone (batches included); consuming is what an SQS event source mapping uses.
   */
  bindQueue(queue: sqs.IQueue, spec: QueueSpec, access: QueueAccess): this {
    const actions = [
      ...(access === 'consume' || access === 'consumeWithBackoff' ? [] : queueSendActions), ...(access === 'send' ? [] : queueConsumeActions),
      ...(access === 'consumeWithBackoff' ? ['sqs:ChangeMessageVisibility'] : []),
    ];
    this.addToRolePolicy(new iam.PolicyStatement({ actions, resources: [queue.queueArn] }));
    this.addEnvironment(spec.envVar, queue.queueUrl);
    return this;
  }
}

/**
 * IAM conditions letting a read project `attributes` alone: every attribute asked for is listed, and
 * `dynamodb:Select` is SPECIFIC_ATTRIBUTES. A Query always carries Select (`StringEquals`: without it,
 * it would read whole items). GetItem has no Select parameter: AWS's documented policy for attribute
 * reads by GetItem uses `StringEqualsIfExists` (IAM User Guide, "Amazon DynamoDB: Allows access to
 * specific attributes").
 */
/**
 * The conditions of a grant on attributes. A Query or Scan must carry Select SPECIFIC_ATTRIBUTES
 * (`StringEquals`: one without it names no attribute, matches ForAllValues vacuously and reads whole
 * items); GetItem has no Select to require (`StringEqualsIfExists`). A grant mixing the two would
 * get the weaker condition for its Query: refused at synth, to be split into two grants.
 */
export function attributeConditions(actions: readonly string[], attributes: readonly string[]) {
  const reads: string[] = actions.filter((a) => a === 'dynamodb:Query' || a === 'dynamodb:Scan');
  if (reads.length && reads.length !== actions.length) {
    throw new Error(`an attribute grant mixes ${reads.join(', ')} with ${actions.filter((a) => !reads.includes(a)).join(', ')}: split it into one grant per kind`);
  }
  const conditions: Record<string, Record<string, unknown>> = projecting(attributes, reads.length ? 'StringEquals' : 'StringEqualsIfExists');
  // A write on attributes may not ask ReturnValues ALL_OLD or ALL_NEW (the whole item: a wallet, a
  // key's hash, a signing secret). Absent, ReturnValues is NONE. Not covered, by this or any IAM key:
  // ReturnValuesOnConditionCheckFailure ALL_OLD, which returns the whole item when the write's
  // condition fails; the code never asks it (docs/decisions.md "Signing secrets: a table of their own": the residual risk).
  if (actions.some((a) => writesReturningItems.includes(a))) {
    conditions.StringEqualsIfExists = { ...conditions.StringEqualsIfExists, 'dynamodb:ReturnValues': ['NONE', 'UPDATED_OLD', 'UPDATED_NEW'] };
  }
  return conditions;
}
const writesReturningItems = ['dynamodb:PutItem', 'dynamodb:UpdateItem', 'dynamodb:DeleteItem'];

/**
 * IAM conditions limiting a grant to items whose partition key matches `patterns`. `Null: false`
 * because `ForAllValues` matches a request naming no key vacuously; every item action names one.
 */
export function partitionConditions(patterns: readonly string[]) {
  return {
    'ForAllValues:StringLike': { 'dynamodb:LeadingKeys': [...patterns] },
    Null: { 'dynamodb:LeadingKeys': 'false' },
  };
}

/**
 * Explicit Denies beside a grant on attributes, so that no reading of the Allow's conditions can
 * return a whole item: a request naming no attribute (a GetItem without ProjectionExpression puts no
 * `dynamodb:Attributes` in the request context, which `ForAllValues` matches vacuously), or one whose
 * `dynamodb:Select` is present and not SPECIFIC_ATTRIBUTES. A Deny wins over every Allow of the role
 * on the table for those actions (docs/decisions.md "A whole item is denied explicitly").
 */
export function wholeItemDenials(actions: readonly string[], tableArn: string): iam.PolicyStatement[] {
  const deny = (conditions: Record<string, unknown>) => new iam.PolicyStatement({ effect: iam.Effect.DENY, actions: [...actions], resources: [tableArn], conditions });
  return [
    deny({ Null: { 'dynamodb:Attributes': 'true' } }),
    deny({ Null: { 'dynamodb:Select': 'false' }, StringNotEquals: { 'dynamodb:Select': 'SPECIFIC_ATTRIBUTES' } }),
  ];
}

function projecting(attributes: readonly string[], select: 'StringEquals' | 'StringEqualsIfExists') {
  return {
    'ForAllValues:StringEquals': { 'dynamodb:Attributes': [...attributes] },
    [select]: { 'dynamodb:Select': 'SPECIFIC_ATTRIBUTES' },
  };
}

const isGrantList = (access: TableAccess): access is readonly TableGrant[] => Array.isArray(access);
