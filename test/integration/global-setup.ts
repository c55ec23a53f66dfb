/**
 * Starts one local stack for the whole integration suite, as a child process running the real
 * `bin/local.ts` (in-memory DynamoDB Local, fauxqs, free ports), with timings compressed so retry
 * and cache behaviour is observable in seconds. Its output goes to test-artifacts/local-stack.log.
 */
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, openSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

export const testSettings = {
  retryScheduleSeconds: [1, 1, 1, 1],
  retryJitter: 0,
  // Waits over 2 s leave the queue for the due index; the sweeper runs every second (docs/architecture.md#retries-and-dead-letters).
  queueDelayMaxSeconds: 2,
  dueSweepLookaheadSeconds: 1,
  keyCacheTtlSeconds: 1,
  deliveryTimeoutMs: 1500,
  // An endpoint's circuit opens for 1 s (doubling to 2 s), not 30 s: tests that fail an endpoint five times and re-drive wait seconds (docs/architecture.md#fair-delivery).
  circuitOpenSeconds: 1,
  circuitMaxOpenSeconds: 2,
  // Handlers re-read the settings parameter after this age (production: 300 s).
  settingsMaxAgeSeconds: 1,
};

export default async function globalSetup(): Promise<void> {
  const dir = mkdtempSync(path.join(tmpdir(), 'crm-test-stack-'));
  const artifacts = path.resolve('test-artifacts');
  mkdirSync(artifacts, { recursive: true });
  const logFile = path.join(artifacts, 'local-stack.log');
  const out = openSync(logFile, 'w');
  const child = spawn(
    process.execPath,
    // Every test file calls from 127.0.0.1: the WAF's per-address limits count them as the many
    // clients they stand for (the rules themselves are tested at their deployed values in
    // local/http-gateway.test.ts).
    ['--no-warnings', '--import', 'tsx', 'bin/local.ts', '--in-memory', '--port', '0', '--dir', dir, '--quiet', '--clients-per-address', '20'],
    { stdio: ['ignore', out, out], env: { ...process.env, NODE_OPTIONS: '', CRM_SETTINGS: JSON.stringify(testSettings) } },
  );
  (globalThis as Record<string, unknown>).__crmLocalStack = child;

  // Not waited for here: test files that need no stack (unit, infra, artifact) run while it starts,
  // and testStack() (support/stack.ts) waits for its stack file.
  const stackFile = path.join(dir, 'stack.json');
  process.env.CRM_STACK_FILE = stackFile;
  process.env.CRM_STACK_PID = String(child.pid);
  process.env.CRM_STACK_LOG = logFile;
  writeFileSync(path.join(artifacts, 'stack-file'), stackFile);
}
