/**
 * Where the CLI acts: the local stack when .local/stack.json exists (or --local), else the AWS stack
 * of --stage, found through its CloudFormation outputs with the standard credential chain.
 */
import { readFile } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { DynamoDBStreamsClient } from '@aws-sdk/client-dynamodb-streams';
import { createDeps, type Deps } from '../../functions/core/clients.js';
import { parseSettings } from '../../functions/core/settings.js';
import { tables, queues, outputKeys, stackName, type TableName, type QueueName } from '../topology.js';

/** What `npm start` writes to .local/stack.json (DESIGN §12), plus the physical names it created. */
export interface LocalStackInfo {
  apiUrl: string;
  dynamodbEndpoint: string;
  sqsEndpoint: string;
  region: string;
  demo?: { organizationId: string; apiKey: string };
  tables: Record<TableName, string>;
  queues: Record<QueueName, string>;
  settings: unknown;
}

export const localDir = (cwd = process.cwd()) => path.join(cwd, '.local');
export const stackFile = (cwd = process.cwd()) => path.join(localDir(cwd), 'stack.json');

export interface TargetOptions { local?: boolean; stage?: string; stackFile?: string }

export interface Target {
  kind: 'local' | 'aws';
  deps: Deps;
  /** For reading stream records back (replaying failed fan-out batches). */
  streams: DynamoDBStreamsClient;
  apiUrl?: string;
  describe: string;
}

export async function resolveTarget(options: TargetOptions): Promise<Target> {
  const file = options.stackFile ?? process.env.CRM_STACK_FILE ?? stackFile();
  if (options.local || (!options.stage && existsSync(file))) {
    if (!existsSync(file)) throw new Error(`No local stack: ${file} does not exist. Start it with \`npm start\`.`);
    const info = JSON.parse(await readFile(file, 'utf8')) as LocalStackInfo;
    return {
      kind: 'local',
      apiUrl: info.apiUrl,
      describe: `local stack at ${info.apiUrl}`,
      streams: new DynamoDBStreamsClient({ region: info.region, endpoint: info.dynamodbEndpoint, credentials: { accessKeyId: 'local', secretAccessKey: 'local' } }),
      deps: createDeps({
        region: info.region,
        dynamodbEndpoint: info.dynamodbEndpoint,
        sqsEndpoint: info.sqsEndpoint,
        tables: info.tables,
        queues: info.queues,
        settings: parseSettings(info.settings),
      }),
    };
  }
  const stage = options.stage ?? 'dev';
  return awsTarget(stage);
}

async function awsTarget(stage: string): Promise<Target> {
  const { CloudFormationClient, DescribeStacksCommand } = await import('@aws-sdk/client-cloudformation');
  const cfn = new CloudFormationClient({});
  const name = stackName(stage);
  const out = await cfn.send(new DescribeStacksCommand({ StackName: name })).catch((e: Error) => {
    throw new Error(`Cannot read stack ${name} (${e.name}: ${e.message}). Deploy it with \`npx cdk deploy -c stage=${stage}\` or pass --local.`);
  });
  const outputs = Object.fromEntries((out.Stacks?.[0]?.Outputs ?? []).map((o) => [o.OutputKey, o.OutputValue]));
  const pick = (key: string) => {
    const v = outputs[key];
    if (!v) throw new Error(`Stack ${name} has no output ${key}; redeploy it.`);
    return v;
  };
  const tableNames = Object.fromEntries(Object.keys(tables).map((t) => [t, pick(outputKeys.table(t as TableName))])) as Record<TableName, string>;
  const queueUrls = Object.fromEntries(Object.keys(queues).map((q) => [q, pick(outputKeys.queue(q as QueueName))])) as Record<QueueName, string>;
  const { getParameter } = await import('@aws-lambda-powertools/parameters/ssm');
  const settings = await getParameter(pick(outputKeys.settingsParameter), { transform: 'json' });
  return {
    kind: 'aws',
    apiUrl: outputs[outputKeys.apiUrl],
    describe: `AWS stack ${name}`,
    streams: new DynamoDBStreamsClient({}),
    deps: createDeps({ tables: tableNames, queues: queueUrls, settings: parseSettings(settings) }),
  };
}
