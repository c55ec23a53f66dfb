/**
 * The whole system on one machine, built from lib/topology.ts like the CDK stack: emulators,
 * tables and queues, the real handlers behind a local API Gateway, and pollers in place of
 * Lambda's event-source mappings.
 */
import { mkdirSync, writeFileSync, renameSync, rmSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL, fileURLToPath } from 'node:url';
import { DynamoDBStreamsClient } from '@aws-sdk/client-dynamodb-streams';
import { functions, tables, queues, settingsParameterEnvVar, settingsParameterName, type FunctionSpec, type TableName, type QueueName } from '../topology.js';
import { createDeps, type Deps } from '../../functions/core/platform/deps.js';
import { parseSettings, localStackMarkerEnvVar } from '../../functions/core/platform/settings.js';
import type { LocalStackInfo } from './stack-file.js';
import { startDynamoDbLocal, startSqsEmulator, localCredentials, emulatorEnvironment } from './emulators.js';
import { provisionTopology } from './provision.js';
import { startHttpServer, type HttpHandler } from './http-server.js';
import { startSsmStandIn } from './ssm-stand-in.js';
import { StreamPoller } from './stream-poller.js';
import { QueuePoller } from './queue-poller.js';
import { lambdaContext } from './lambda-context.js';
import { seedDemo } from './seed.js';

const REGION = 'us-east-1';
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

export interface LocalStackOptions {
  /** Folder for DynamoDB data, checkpoints and stack.json (default .local). */
  dir?: string;
  inMemory?: boolean;
  port?: number;
  dynamodbPort?: number;
  sqsPort?: number;
  /** Run DynamoDB Local on every interface when it cannot be isolated (default: CRM_ALLOW_EXPOSED_DYNAMODB=1). */
  exposeDynamoDb?: boolean;
  /** Settings over the defaults (local: true is always added), written to the SSM stand-in at start. */
  settings?: Record<string, unknown>;
  /** Create the demo organization and key. */
  seed?: boolean;
  log?: (line: string) => void;
}

export interface LocalStack {
  info: LocalStackInfo;
  deps: Deps;
  stackFile: string;
  stop(): Promise<void>;
}

type AnyHandler = (event: unknown, context: unknown) => Promise<unknown>;

async function loadHandler(spec: FunctionSpec): Promise<AnyHandler> {
  const module = await import(pathToFileURL(path.join(root, 'functions', spec.entry, 'handler.ts')).href);
  if (typeof module.handler !== 'function') throw new Error(`functions/${spec.entry}/handler.ts exports no handler`);
  return module.handler;
}

export async function startLocalStack(options: LocalStackOptions = {}): Promise<LocalStack> {
  const log = options.log ?? (() => undefined);
  const dir = path.resolve(options.dir ?? '.local');
  // Owner-only: it holds the demo API key, the tables (signing secrets) and the bridge's socket.
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const cleanups: (() => Promise<void>)[] = [];
  let stopping = false;
  const stopAll = async () => {
    stopping = true;
    for (const cleanup of cleanups.reverse()) await cleanup().catch((e) => log(`shutdown: ${(e as Error).message}`));
    cleanups.length = 0;
  };
  try {
    const dynamo = await startDynamoDbLocal({ port: options.dynamodbPort, inMemory: options.inMemory, dbPath: path.join(dir, 'dynamodb'), socketDir: dir, allowExposed: options.exposeDynamoDb });
    cleanups.push(() => dynamo.stop());
    const sqsEmulator = await startSqsEmulator({ port: options.sqsPort });
    cleanups.push(() => sqsEmulator.stop());
    // Settings live in an SSM parameter as on AWS; the handlers read (and re-read) them from there.
    const settings = parseSettings({ ...options.settings, stage: 'local', local: true });
    const settingsParameter = settingsParameterName(settings.stage);
    const ssm = await startSsmStandIn({ parameters: { [settingsParameter]: JSON.stringify(settings) } });
    cleanups.push(() => ssm.stop());
    log(`DynamoDB Local on ${dynamo.endpoint}${dynamo.isolated ? ' (in a private network namespace)' : ''}, SQS (fauxqs) on ${sqsEmulator.endpoint}, SSM stand-in on ${ssm.endpoint}`);

    // Handlers read the same variables as on Lambda: names bound by the topology, endpoints by the SDK.
    delete process.env.CRM_SETTINGS; // an input of the stand-in only: the handlers must read SSM
    Object.assign(process.env, {
      ...emulatorEnvironment(REGION, { dynamodb: dynamo.endpoint, sqs: sqsEmulator.endpoint, ssm: ssm.endpoint }),
      [settingsParameterEnvVar]: settingsParameter,
      [localStackMarkerEnvVar]: '1',
      POWERTOOLS_METRICS_DISABLED: 'true',
    });
    const deps = createDeps({ region: REGION, dynamodbEndpoint: dynamo.endpoint, sqsEndpoint: sqsEmulator.endpoint, tables: {} as Record<TableName, string>, queues: {} as Record<QueueName, string>, settings });
    const provisioned = await provisionTopology(deps.dynamodb, deps.sqs);
    Object.assign(deps.tables, provisioned.tables);
    Object.assign(deps.queues, provisioned.queues);
    for (const [name, spec] of Object.entries(tables)) process.env[spec.envVar] = provisioned.tables[name as TableName];
    for (const [name, spec] of Object.entries(queues)) process.env[spec.envVar] = provisioned.queues[name as QueueName];

    const handlers: Record<string, AnyHandler> = {};
    for (const [name, spec] of Object.entries(functions) as [string, FunctionSpec][]) handlers[name] = await loadHandler(spec);

    const onError = (where: string) => (error: unknown) => stopping || log(`${where}: ${error instanceof Error ? error.stack ?? error.message : String(error)}`);
    const streams = new DynamoDBStreamsClient({ region: REGION, endpoint: dynamo.endpoint, credentials: localCredentials });
    const pollers: { stop(): Promise<void> }[] = [];
    for (const [name, spec] of Object.entries(functions) as [string, FunctionSpec][]) {
      const invoke = (event: unknown) => handlers[name](event, lambdaContext(name, spec.timeoutSeconds));
      for (const source of spec.events) {
        if (source.kind === 'stream') {
          const poller = new StreamPoller({
            streams,
            streamArn: provisioned.streams[source.table]!,
            handler: invoke as never,
            batchSize: source.batchSize,
            maxRetries: source.maxRetries,
            bisectOnError: source.bisectOnError,
            onFailure: { sqs: deps.sqs, queueUrl: provisioned.queues[source.onFailure] },
            checkpointFile: path.join(dir, `checkpoint-${name}-${source.table}.json`),
            onError: onError(`${name} (${source.table} stream)`),
          });
          poller.start();
          pollers.push(poller);
        } else {
          const poller = new QueuePoller({
            sqs: deps.sqs,
            queueUrl: provisioned.queues[source.queue],
            queueArn: provisioned.queueArns[source.queue],
            handler: invoke as never,
            batchSize: source.batchSize,
            concurrency: Math.min(source.maxConcurrency, 4),
            onError: onError(`${name} (${source.queue} queue)`),
          });
          poller.start();
          pollers.push(poller);
        }
      }
    }
    cleanups.push(async () => void (await Promise.all(pollers.map((p) => p.stop()))));

    // Deliveries still pending when the stack stopped (fauxqs keeps no messages) are queued again.
    const redriveModule = '../../functions/core/delivery/redrive.js'; // lands with the delivery work
    const resume = await import(redriveModule).catch(() => undefined);
    if (resume && 'resumePendingDeliveries' in resume) {
      const count = await (resume.resumePendingDeliveries as (d: Deps) => Promise<number>)(deps);
      if (count > 0) log(`resumed ${count} pending deliveries`);
    }

    const http = await startHttpServer({ port: options.port ?? 3000, handlers: handlers as Record<string, HttpHandler>, onError: onError('http') });
    cleanups.push(() => http.close());

    const demo = options.seed === false ? undefined : await seedDemo(deps, { dir });
    const info: LocalStackInfo = {
      apiUrl: http.url,
      dynamodbEndpoint: dynamo.endpoint,
      dynamodbIsolated: dynamo.isolated,
      sqsEndpoint: sqsEmulator.endpoint,
      ssmEndpoint: ssm.endpoint,
      settingsParameter,
      region: REGION,
      ...(demo ? { demo } : {}),
      tables: provisioned.tables,
      queues: provisioned.queues,
      settings,
    };
    const stackFile = path.join(dir, 'stack.json');
    const tmp = `${stackFile}.tmp`;
    // Created owner-only (it holds the demo API key): never readable by others, not even briefly.
    rmSync(tmp, { force: true }); // a left-over tmp would keep its old mode
    writeFileSync(tmp, JSON.stringify(info, null, 2) + '\n', { mode: 0o600 });
    renameSync(tmp, stackFile);
    cleanups.unshift(async () => rmSync(stackFile, { force: true }));
    return { info, deps, stackFile, stop: stopAll };
  } catch (error) {
    await stopAll();
    throw error;
  }
}
