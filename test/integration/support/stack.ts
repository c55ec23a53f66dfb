/**
 * Access to the suite's local stack (started by global-setup.ts): its stack file, deps for reading
 * tables back, HTTP to its API, and the `crm` CLI run as a child process against it.
 */
import { existsSync, readFileSync } from 'node:fs';
import { execFile } from 'node:child_process';
import path from 'node:path';
import type { Deps } from '../../../functions/core/platform/deps.js';
import { queryAll } from '../../../functions/core/platform/dynamo-store.js';
import { depsFromStackFile, readStackFile, type LocalStackInfo } from '../../../lib/local/stack-file.js';
import { createOrganization, type NewOrganization } from '../../../functions/core/tenancy/organizations.js';
import { createApiKey } from '../../../functions/core/tenancy/api-keys.js';

export interface TestStack {
  info: LocalStackInfo;
  deps: Deps;
  stackFile: string;
  api(pathname: string, init?: RequestInit): Promise<Response>;
}

let cached: TestStack | undefined;

export async function testStack(): Promise<TestStack> {
  if (cached) return cached;
  const stackFile = process.env.CRM_STACK_FILE ?? readFileSync(path.resolve('test-artifacts/stack-file'), 'utf8').trim();
  await started(stackFile);
  const info = readStackFile(stackFile);
  process.env.AWS_ACCESS_KEY_ID ??= 'local';
  process.env.AWS_SECRET_ACCESS_KEY ??= 'local';
  const deps = depsFromStackFile(info);
  cached = { info, deps, stackFile, api: (pathname, init) => fetch(info.apiUrl + pathname, init) };
  return cached;
}

/**
 * Waits for the stack global-setup.ts started (it does not wait, so files that need no stack run
 * meanwhile): its stack file appears once every emulator and handler is up.
 */
async function started(stackFile: string): Promise<void> {
  const pid = Number(process.env.CRM_STACK_PID);
  const alive = () => {
    try {
      return !pid || (process.kill(pid, 0), true);
    } catch {
      return false;
    }
  };
  const deadline = Date.now() + 120_000;
  while (!existsSync(stackFile)) {
    if (!alive() || Date.now() > deadline) {
      const log = process.env.CRM_STACK_LOG && existsSync(process.env.CRM_STACK_LOG) ? readFileSync(process.env.CRM_STACK_LOG, 'utf8').slice(-4_000) : '';
      throw new Error(`The test local stack did not start${alive() ? ' within 120 s' : ''}:\n${log}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** Deps whose document client is their own, so a test can watch, mock or delay its calls. */
export async function ownDeps(): Promise<Deps> {
  const { info, deps } = await testStack();
  return { ...deps, doc: depsFromStackFile(info, deps.config).doc };
}

export interface CliResult { code: number; stdout: string; stderr: string; json<T = unknown>(): T }

/** Runs `crm <args> [--json]` against the test stack. */
export async function runCli(args: string[], options: { json?: boolean; /** Another stack file (e.g. the test stack's with a queue of the test's own). */ stackFile?: string; /** More environment variables for the CLI. */ env?: Record<string, string> } = {}): Promise<CliResult> {
  const stackFile = options.stackFile ?? (await testStack()).stackFile;
  const argv = ['--no-warnings', 'bin/crm.mjs', ...(options.json === false ? [] : ['--json']), ...args];
  return new Promise((resolve) => {
    execFile(process.execPath, argv, { env: { ...process.env, ...options.env, NODE_OPTIONS: '', CRM_STACK_FILE: stackFile }, timeout: 60_000 }, (error, stdout, stderr) => {
      const code = error ? (typeof error.code === 'number' ? error.code : 1) : 0;
      resolve({ code, stdout, stderr, json: () => JSON.parse(stdout) });
    });
  });
}

/**
 * Polls `check` until it returns a value (not undefined/false) or the deadline passes. The default
 * deadline is generous (a loaded machine is slow; a met condition returns at once): pass a shorter
 * one only where the time itself is the behaviour under test.
 */
export async function eventually<T>(check: () => Promise<T | undefined | false>, { timeoutMs = 60_000, intervalMs = 100, what = 'condition' } = {}): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const value = await check();
      if (value !== undefined && value !== false) return value as T;
    } catch (error) {
      last = error;
    }
    if (Date.now() > deadline) throw new Error(`Timed out after ${timeoutMs} ms waiting for ${what}${last ? `: ${(last as Error).message}` : ''}`);
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}

export interface Tenant { organizationId: string; key: string; keyId: string }

/** A fresh organization with one API key, created through the domain code the CLI uses. */
export async function newTenant(input: Partial<NewOrganization> = {}): Promise<Tenant> {
  const { deps } = await testStack();
  const org = await createOrganization(deps, { name: 'Test Plumbing', ...input });
  const { key, record } = await createApiKey(deps, org.id, 'test');
  return { organizationId: org.id, key, keyId: record.keyId };
}

/** POSTs a JSON lead with the tenant's key; `body` may be a raw string. */
export async function postLead(key: string, body: unknown, headers: Record<string, string> = {}): Promise<Response> {
  const { api } = await testStack();
  return api('/api/webhook/leads', {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', 'X-API-Key': key, ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
}

/** Every item stored under an organization's partition in a table. */
export async function itemsOf(table: 'clients' | 'organizations' | 'endpoints' | 'requestLog', organizationId: string, skPrefix = ''): Promise<Record<string, unknown>[]> {
  const { deps } = await testStack();
  return queryAll(deps, {
    TableName: deps.tables[table],
    KeyConditionExpression: skPrefix ? 'pk = :pk AND begins_with(sk, :sk)' : 'pk = :pk',
    ExpressionAttributeValues: { ':pk': `ORG#${organizationId}`, ...(skPrefix ? { ':sk': skPrefix } : {}) },
    ConsistentRead: true,
  });
}
