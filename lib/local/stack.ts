/**
 * The whole system on one machine, built from lib/topology.ts like the CDK stack: emulators,
 * tables and queues, the real handlers behind a local API Gateway, and pollers in place of
 * Lambda's event-source mappings. `startLocalStack` reads as the steps it takes.
 */
import { mkdirSync, readFileSync, writeFileSync, renameSync, rmSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL, fileURLToPath } from 'node:url';
import { DynamoDBStreamsClient } from '@aws-sdk/client-dynamodb-streams';
import { functions, secretName, settingsParameterName, type FunctionSpec, type TableName, type QueueName, type SecretName } from '../topology.js';
import { createDeps, type Deps } from '../../functions/core/platform/deps.js';
import { parseConfig, type Config } from '../../functions/core/platform/config.js';
import type { LocalStackInfo } from './stack-file.js';
import { startDynamoDbLocal, startSqsEmulator, localCredentials } from './emulators.js';
import { journalMissingOverData } from './sqs-journal.js';
import { requeuePendingDeliveries } from './requeue-deliveries.js';
import { provisionTopology, type Provisioned } from './provision.js';
import { startHttpServer, wafRulesFor, type HttpHandler } from './http-server.js';
import { startSsmStandIn } from './ssm-stand-in.js';
import { ensureSecretFile, startSecretsStandIn } from './secrets-stand-in.js';
import { mintSessionToken, MAX_SESSION_TTL_SECONDS } from '../../functions/core/settings/session-token.js';
import { startEventSources, type AnyHandler } from './event-sources.js';
import { lambdaEnvironment, applyToProcessEnvironment } from './lambda-environment.js';
import { seedDemo } from './seed.js';
import { startMailCapture } from './mail-capture.js';
import { mailerEnvVars } from '../../functions/core/platform/bindings.js';

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
  /** Send notices to this SMTP server (CRM_SMTP_URL) instead of the local mail capture. */
  smtpUrl?: string;
  /**
   * How many clients share each address, for the WAF's per-address rules (their limits are
   * multiplied by it): 1, as deployed, unless one address stands for many callers (the test suite's
   * files all call from 127.0.0.1).
   */
  clientsPerAddress?: number;
  /** Period of the every-minute schedule sources (the due-index sweeper), in ms; default their rate (1 min). Tests compress it. */
  scheduleIntervalMs?: number;
  log?: (line: string) => void;
}

export interface LocalStack {
  info: LocalStackInfo;
  deps: Deps;
  stackFile: string;
  stop(): Promise<void>;
}

type Log = (line: string) => void;

/** What was started, stopped in reverse order (`last` ones after everything else). */
class Running {
  private readonly stops: (() => Promise<void>)[] = [];
  private readonly lastStops: (() => Promise<void>)[] = [];
  stopping = false;

  constructor(private readonly log: Log) {}

  add(stop: () => Promise<void>): void {
    this.stops.push(stop);
  }

  last(stop: () => Promise<void>): void {
    this.lastStops.push(stop);
  }

  readonly stopAll = async (): Promise<void> => {
    this.stopping = true;
    const all = [...this.stops.reverse(), ...this.lastStops.reverse()];
    this.stops.length = 0;
    this.lastStops.length = 0;
    for (const stop of all) await stop().catch((e) => this.log(`shutdown: ${(e as Error).message}`));
  };

  /** Logs a background error, unless it comes from stopping; to stderr even when quiet (`--quiet` silences the banner, not failures). */
  readonly onError = (where: string) => (error: unknown) =>
    this.stopping || console.error(`${where}: ${error instanceof Error ? error.stack ?? error.message : String(error)}`);
}

export async function startLocalStack(options: LocalStackOptions = {}): Promise<LocalStack> {
  const log = options.log ?? (() => undefined);
  const dir = path.resolve(options.dir ?? '.local');
  // Owner-only: it holds the demo API key, the tables (signing secrets) and the bridge's socket.
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const running = new Running(log);
  try {
    const emulators = await startEmulators(options, dir, running);
    const mail = await startMail(options, running);
    const settings = parseConfig({ ...options.settings, stage: 'local', local: true, noticeSmtpUrl: mail.smtpUrl });
    const standIn = await startSettingsStandIn(settings, running);
    log(`DynamoDB Local on ${emulators.dynamodb}${emulators.isolated ? ' (in a private network namespace)' : ''}, SQS (fauxqs) on ${emulators.sqs}, SSM stand-in on ${standIn.endpoint}`);
    const secretsManager = await startSecretStore(dir, settings.stage, running);

    const { deps, provisioned } = await provision(emulators, settings);
    if (emulators.requeuePending) log(`No SQS journal yet over existing tables: ${await requeuePendingDeliveries(deps)} pending deliveries queued again (once)`);
    applyToProcessEnvironment(lambdaEnvironment({
      region: REGION,
      endpoints: { dynamodb: emulators.dynamodb, sqs: emulators.sqs, ssm: standIn.endpoint },
      tables: provisioned.tables,
      queues: provisioned.queues,
      settingsParameter: standIn.parameter,
      secretsManager,
    }));
    const handlers = await loadHandlers();
    const streams = new DynamoDBStreamsClient({ region: REGION, endpoint: emulators.dynamodb, credentials: localCredentials });
    // A sweep re-queues what falls due within dueSweepLookaheadSeconds: a shorter look-ahead (tests) runs the timer that often.
    const period = options.scheduleIntervalMs ?? (settings.dueSweepLookaheadSeconds < 60 ? Math.max(200, settings.dueSweepLookaheadSeconds * 1000) : undefined);
    // Only the sweeper's minute is compressed: an hourly schedule (the daily digest) keeps its hour.
    const scheduleIntervalMs = period === undefined ? undefined : (rateMinutes: number) => (rateMinutes <= 1 ? period : rateMinutes * 60_000);
    running.add(startEventSources({ handlers, provisioned, streams, sqs: deps.sqs, dir, onError: running.onError, scheduleIntervalMs }).stop);

    const http = await startHttpServer({
      port: options.port ?? 3000,
      handlers: handlers as Record<string, HttpHandler>,
      onError: running.onError('http'),
      wafRules: wafRulesFor(options.clientsPerAddress ?? 1),
      // Said even when quiet: a 429 nobody's limit explains is the first thing to look for.
      onRefused: (reason) => console.error(`front door: ${reason}`),
    });
    running.add(() => http.close());
    // The links in notices (confirm, unsubscribe) open this API's pages; on AWS the stack sets it.
    process.env[mailerEnvVars.publicApiUrl] = http.url;

    const seeded = options.seed === false ? undefined : await seedDemo(deps, { dir });
    // A settings link for the demo organization (docs/settings.md), signed like the CRM app would.
    const demo = seeded && {
      ...seeded,
      settingsUrl: `${http.url}/settings#token=${await mintSessionToken(readFileSync(secretsManager.files.settingsToken, 'utf8').trim(), { organizationId: seeded.organizationId, userId: 'demo-admin', ttlSeconds: MAX_SESSION_TTL_SECONDS })}`,
    };
    const info: LocalStackInfo = {
      apiUrl: http.url,
      dynamodbEndpoint: emulators.dynamodb,
      dynamodbIsolated: emulators.isolated,
      sqsEndpoint: emulators.sqs,
      ssmEndpoint: standIn.endpoint,
      settingsParameter: standIn.parameter,
      secretsEndpoint: secretsManager.endpoint,
      secrets: secretsManager.names,
      region: REGION,
      ...(demo ? { demo } : {}),
      mail,
      tables: provisioned.tables,
      queues: provisioned.queues,
      settings,
    };
    const stackFile = writeStackFile(dir, info);
    running.last(async () => rmSync(stackFile, { force: true }));
    return { info, deps, stackFile, stop: running.stopAll };
  } catch (error) {
    await running.stopAll();
    throw error;
  }
}

/** DynamoDB Local (persisted under `dir` unless in memory) and the SQS emulator. */
async function startEmulators(options: LocalStackOptions, dir: string, running: Running): Promise<{ dynamodb: string; isolated: boolean; sqs: string; requeuePending: boolean }> {
  const journal = path.join(dir, 'sqs-journal.jsonl');
  const requeuePending = !options.inMemory && journalMissingOverData(journal, path.join(dir, 'dynamodb'));
  const dynamo = await startDynamoDbLocal({ port: options.dynamodbPort, inMemory: options.inMemory, dbPath: path.join(dir, 'dynamodb'), socketDir: dir, allowExposed: options.exposeDynamoDb });
  running.add(() => dynamo.stop());
  // Durable like SQS when the tables are (sqs-journal.ts): a killed stack loses no message.
  const sqs = await startSqsEmulator({ port: options.sqsPort, journal: options.inMemory ? undefined : journal });
  running.add(() => sqs.stop());
  return { dynamodb: dynamo.endpoint, isolated: dynamo.isolated, sqs: sqs.endpoint, requeuePending };
}

/**
 * Where notices are sent: CRM_SMTP_URL (or the settings' noticeSmtpUrl) when given, else the local
 * mail capture, started here, whose page and API show what was sent (docs/local-stack.md "Mail").
 */
async function startMail(options: LocalStackOptions, running: Running): Promise<{ smtpUrl: string; inboxUrl?: string }> {
  const given = options.smtpUrl ?? (options.settings?.noticeSmtpUrl as string | undefined);
  if (given) return { smtpUrl: given };
  const capture = await startMailCapture({ onError: running.onError('mail capture') });
  running.add(() => capture.stop());
  return { smtpUrl: capture.smtpUrl, inboxUrl: capture.inboxUrl };
}

/** Settings live in an SSM parameter as on AWS; the handlers read (and re-read) them from there. */
async function startSettingsStandIn(settings: Config, running: Running): Promise<{ endpoint: string; parameter: string }> {
  const parameter = settingsParameterName(settings.stage);
  const ssm = await startSsmStandIn({ parameters: { [parameter]: JSON.stringify(settings) } });
  running.add(() => ssm.stop());
  return { endpoint: ssm.endpoint, parameter };
}

/**
 * The topology's secrets, each a generated file under `dir` (mode 0600, kept across restarts),
 * served by the Secrets Manager stand-in under the name the stack gives it on AWS.
 */
async function startSecretStore(dir: string, stage: string, running: Running): Promise<{ endpoint: string; names: Record<SecretName, string>; files: Record<SecretName, string> }> {
  const files = {
    settingsToken: ensureSecretFile(path.join(dir, 'settings-token.secret')),
    noticeLinks: ensureSecretFile(path.join(dir, 'notice-links.secret')),
  } satisfies Record<SecretName, string>;
  const names = Object.fromEntries(Object.keys(files).map((name) => [name, secretName(stage, name as SecretName)])) as Record<SecretName, string>;
  const standIn = await startSecretsStandIn({ secrets: Object.fromEntries(Object.entries(files).map(([name, file]) => [names[name as SecretName], file])) });
  running.add(() => standIn.stop());
  return { endpoint: standIn.endpoint, names, files };
}

/** The topology's tables and queues, and the deps the local stack itself uses (requeue, seed). */
async function provision(emulators: { dynamodb: string; sqs: string }, settings: Config): Promise<{ deps: Deps; provisioned: Provisioned }> {
  const deps = createDeps({ region: REGION, dynamodbEndpoint: emulators.dynamodb, sqsEndpoint: emulators.sqs, tables: {} as Record<TableName, string>, queues: {} as Record<QueueName, string>, config: settings });
  const provisioned = await provisionTopology(deps.dynamodb, deps.sqs);
  Object.assign(deps.tables, provisioned.tables);
  Object.assign(deps.queues, provisioned.queues);
  return { deps, provisioned };
}

/** Each function's real handler module, by the topology's entry folder. */
async function loadHandlers(): Promise<Record<string, AnyHandler>> {
  const handlers: Record<string, AnyHandler> = {};
  for (const [name, spec] of Object.entries(functions) as [string, FunctionSpec][]) {
    const module = await import(pathToFileURL(path.join(root, 'functions', spec.entry, 'handler.ts')).href);
    if (typeof module.handler !== 'function') throw new Error(`functions/${spec.entry}/handler.ts exports no handler`);
    handlers[name] = module.handler;
  }
  return handlers;
}

/** `<dir>/stack.json` for the CLI and tests, written whole (tmp + rename). */
function writeStackFile(dir: string, info: LocalStackInfo): string {
  const stackFile = path.join(dir, 'stack.json');
  const tmp = `${stackFile}.tmp`;
  // Created owner-only (it holds the demo API key): never readable by others, not even briefly.
  rmSync(tmp, { force: true }); // a left-over tmp would keep its old mode
  writeFileSync(tmp, JSON.stringify(info, null, 2) + '\n', { mode: 0o600 });
  renameSync(tmp, stackFile);
  return stackFile;
}
