/**
 * Where the CLI acts: the local stack when .local/stack.json exists (or --local), else the AWS stack
 * of --stage, found through its CloudFormation outputs with the standard credential chain.
 */
import { existsSync } from 'node:fs';
import { DynamoDBStreamsClient } from '@aws-sdk/client-dynamodb-streams';
import { createDeps, emulatorCredentials, type Deps } from '../../functions/core/platform/deps.js';
import { parseConfig, readConfigParameter, asDeployed, type Config } from '../../functions/core/platform/config.js';
import { plainSmtpProblem } from '../../functions/core/notify/smtp-url.js';
import { stages } from '../stages.js';
import { tables, queues, outputKeys, stackName, type TableName, type QueueName, type SecretName } from '../topology.js';
import { defaultStackFile, depsFromStackFile, readStackFile } from '../local/stack-file.js';

/**
 * A deployed stage's settings as `crm` applies them: platform/config.ts asDeployed, and a warning
 * when noticeSmtpUrl is one the mailer refuses (notify/smtp-url.ts; it needs nodemailer, which the
 * functions' shared config leaves to the mailer's bundle).
 */
export function asDeployedStage(settings: Config, where: string, warn: (message: string) => void): Config {
  const out = asDeployed(settings, where, warn);
  const smtp = plainSmtpProblem(out.noticeSmtpUrl, out.local);
  if (smtp) warn(`settings: ${smtp} (${where})`);
  return out;
}

export interface TargetOptions { local?: boolean; stage?: string; stackFile?: string }

export interface Target {
  kind: 'local' | 'aws';
  deps: Deps;
  /** For reading stream records back (replaying failed fan-out batches). */
  streams: DynamoDBStreamsClient;
  apiUrl?: string;
  describe: string;
  /** A secret of the topology, read from Secrets Manager (the local stack's stand-in, or the stage's secret). */
  readSecret(name: SecretName): Promise<string>;
}

/** GetSecretValue once, through a client made for the call. */
async function getSecret(config: { region: string; endpoint?: string; credentials?: { accessKeyId: string; secretAccessKey: string } }, secretId: string | undefined, name: string): Promise<string> {
  if (!secretId) throw new Error(`The stack has no ${name} secret; restart or redeploy it.`);
  const { SecretsManagerClient, GetSecretValueCommand } = await import('@aws-sdk/client-secrets-manager');
  const client = new SecretsManagerClient(config);
  try {
    const out = await client.send(new GetSecretValueCommand({ SecretId: secretId }));
    if (!out.SecretString) throw new Error(`Secret ${secretId} has no value.`);
    return out.SecretString;
  } finally {
    client.destroy();
  }
}

export async function resolveTarget(options: TargetOptions): Promise<Target> {
  const file = options.stackFile ?? process.env.CRM_STACK_FILE ?? defaultStackFile();
  if (options.local || (!options.stage && existsSync(file))) {
    if (!existsSync(file)) throw new Error(`No local stack: ${file} does not exist. Start it with \`npm start\`.`);
    const info = readStackFile(file);
    const credentials = emulatorCredentials;
    // The stand-in holds the current settings (they may have changed since start); stack.json the initial ones.
    const settings = info.ssmEndpoint && info.settingsParameter
      ? await readSettings({ region: info.region, endpoint: info.ssmEndpoint, credentials }, info.settingsParameter).catch(() => parseConfig(info.settings))
      : parseConfig(info.settings);
    return {
      kind: 'local',
      apiUrl: info.apiUrl,
      describe: `local stack at ${info.apiUrl}`,
      streams: new DynamoDBStreamsClient({ region: info.region, endpoint: info.dynamodbEndpoint, credentials }),
      deps: depsFromStackFile(info, settings),
      readSecret: (name) => getSecret({ region: info.region, endpoint: info.secretsEndpoint, credentials }, info.secrets?.[name], name),
    };
  }
  const stage = options.stage ?? 'dev';
  return awsTarget(stage);
}

async function readSettings(config: { region: string; endpoint?: string; credentials?: { accessKeyId: string; secretAccessKey: string } }, name: string): Promise<Config> {
  const { SSMClient } = await import('@aws-sdk/client-ssm');
  const ssm = new SSMClient(config);
  try {
    return parseConfig(JSON.parse(await readConfigParameter(ssm, name)));
  } finally {
    ssm.destroy();
  }
}

/**
 * The region every client of the AWS target uses, resolved once the way the SDK does (AWS_REGION,
 * else the region of AWS_PROFILE's config section): CloudFormation, SSM, DynamoDB and SQS must agree.
 */
async function awsRegion(client: { config: { region: () => Promise<string> } }): Promise<string> {
  const region = await client.config.region().catch(() => undefined);
  if (!region) throw new Error('No AWS region: set AWS_REGION, or a region in the profile named by AWS_PROFILE (~/.aws/config).');
  return region;
}

async function awsTarget(stage: string): Promise<Target> {
  const { CloudFormationClient, DescribeStacksCommand } = await import('@aws-sdk/client-cloudformation');
  // The stage's own region (lib/stages.ts) wins over AWS_REGION and the profile: the stack lives there.
  const stageRegion = stages[stage]?.region;
  const cfn = new CloudFormationClient(stageRegion ? { region: stageRegion } : {});
  const region = stageRegion ?? await awsRegion(cfn);
  const name = stackName(stage);
  const out = await cfn.send(new DescribeStacksCommand({ StackName: name })).catch((e: Error) => {
    throw new Error(`Cannot read stack ${name} in ${region} (${e.name}: ${e.message}). Deploy it with \`npx cdk deploy -c stage=${stage}\` or pass --local.`);
  });
  const outputs = Object.fromEntries((out.Stacks?.[0]?.Outputs ?? []).map((o) => [o.OutputKey, o.OutputValue]));
  const pick = (key: string) => {
    const v = outputs[key];
    if (!v) throw new Error(`Stack ${name} has no output ${key}; redeploy it.`);
    return v;
  };
  const tableNames = Object.fromEntries(Object.keys(tables).map((t) => [t, pick(outputKeys.table(t as TableName))])) as Record<TableName, string>;
  const queueUrls = Object.fromEntries(Object.keys(queues).map((q) => [q, pick(outputKeys.queue(q as QueueName))])) as Record<QueueName, string>;
  // A deployed stage never runs in local mode nor opens loopback/metadata, whatever its parameter says.
  const settings = asDeployedStage(await readSettings({ region }, pick(outputKeys.settingsParameter)), `stage ${stage} on AWS`, (m) => console.error(`warning: ${m}`));
  return {
    kind: 'aws',
    apiUrl: outputs[outputKeys.apiUrl],
    describe: `AWS stack ${name} (${region})`,
    streams: new DynamoDBStreamsClient({ region }),
    deps: createDeps({ region, tables: tableNames, queues: queueUrls, config: settings }),
    readSecret: (secret) => getSecret({ region }, outputs[outputKeys.secret(secret)], secret),
  };
}
