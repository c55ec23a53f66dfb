/**
 * The dependencies every domain module takes as its first argument: AWS SDK clients, the physical
 * names of the topology's tables and queues, the stage's runtime configuration and a clock. Lambda handlers
 * get it per invocation from env (`lambdaDeps()`); the local stack, the CLI and tests build
 * it from the emulators' URLs (`createDeps()`). Domain code never reads process.env.
 */
import { dynamoClients, type DynamoDBClient, type DynamoDBDocumentClient } from './dynamo-store.js';
import { SQSClient } from '@aws-sdk/client-sqs';
import { tableEnvVars, type TableName, queueEnvVars, type QueueName } from './bindings.js';
import type { Tracer } from '@aws-lambda-powertools/tracer';
import { loadTracer } from './tracing.js';
import { loadConfig, type Config } from './config.js';

export interface Deps {
  dynamodb: DynamoDBClient;
  doc: DynamoDBDocumentClient;
  sqs: SQSClient;
  /** Physical table names by topology name. */
  tables: Record<TableName, string>;
  /** Queue URLs by topology name. */
  queues: Record<QueueName, string>;
  /** The stage's runtime configuration (functions/core/platform/config.ts). */
  config: Config;
  /** Milliseconds since the epoch; tests may pin it. */
  now: () => number;
}

/** Where the SDK clients connect: the emulators' URLs locally, AWS's defaults when absent. */
export interface ServiceUrls {
  region?: string;
  dynamodbEndpoint?: string;
  sqsEndpoint?: string;
}

/**
 * Without `region` the SDK resolves it as everywhere else (AWS_REGION, then the profile's config);
 * a caller that resolved it once (the CLI's AWS target) passes it so every client agrees.
 */
/** What the emulators are given: they accept any credentials, and the local stack and CLI need none configured. */
export const emulatorCredentials = { accessKeyId: 'local', secretAccessKey: 'local' };

/** With a `tracer` (Lambda only, tracing.ts) each SDK call is an X-Ray subsegment. */
export function createAwsClients(urls: ServiceUrls = {}, tracer?: Tracer): Pick<Deps, 'dynamodb' | 'doc' | 'sqs'> {
  const region = urls.region;
  const credentials = urls.dynamodbEndpoint ? emulatorCredentials : undefined;
  const capture = <C>(client: C): C => (tracer ? tracer.captureAWSv3Client(client) : client);
  const { dynamodb, doc } = dynamoClients({ region, endpoint: urls.dynamodbEndpoint, credentials }, capture);
  // An emulator's queue URLs name a host that does not resolve (sqs.<region>.localhost): keep
  // talking to the configured endpoint instead of the URL's host.
  const emulated = Boolean(urls.sqsEndpoint ?? process.env.AWS_ENDPOINT_URL_SQS);
  const sqs = capture(new SQSClient({ region, endpoint: urls.sqsEndpoint, credentials, ...(emulated ? { useQueueUrlAsEndpoint: false } : {}) }));
  return { dynamodb, doc, sqs };
}

export function createDeps(input: ServiceUrls & {
  tables: Record<TableName, string>;
  queues: Record<QueueName, string>;
  config: Config;
  now?: () => number;
}): Deps {
  return { ...createAwsClients(input), tables: input.tables, queues: input.queues, config: input.config, now: input.now ?? Date.now };
}

/**
 * Table names and queue URLs read from the env vars the stack binds next to each grant. A name the
 * function was not bound to throws on use, naming the missing binding.
 */
function namesFromEnv<K extends string>(envVars: Record<K, string>, what: string): Record<K, string> {
  const out = {} as Record<K, string>;
  for (const [name, envVar] of Object.entries(envVars) as [K, string][]) {
    Object.defineProperty(out, name, {
      enumerable: true,
      get() {
        const value = process.env[envVar];
        if (!value) throw new Error(`${envVar} is not set: this function is not bound to the ${name} ${what}`);
        return value;
      },
    });
  }
  return out;
}

let container: Promise<Omit<Deps, 'config' | 'now'>> | undefined;
/**
 * The deps of one invocation: SDK clients and names created once per container, the runtime configuration read per
 * invocation through its cache (functions/core/platform/config.ts), so a failed read never sticks to
 * the container and a changed parameter is picked up.
 */
export async function lambdaDeps(): Promise<Deps> {
  container ??= loadTracer().then((tracer) => ({ ...createAwsClients({}, tracer), tables: namesFromEnv(tableEnvVars, 'table'), queues: namesFromEnv(queueEnvVars, 'queue') }));
  return { ...(await container), config: await loadConfig(), now: Date.now };
}
