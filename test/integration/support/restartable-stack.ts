/**
 * A local stack of a test's own, kept on disk in `dir`, that the test stops (SIGTERM, as Ctrl-C)
 * and starts again midway: what a restart of `npm start` does to events in flight.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, rmSync } from 'node:fs';
import path from 'node:path';
import type { Deps } from '../../../functions/core/platform/deps.js';
import { depsFromStackFile, readStackFile, type LocalStackInfo } from '../../../lib/local/stack-file.js';
import { eventually } from './stack.js';

export class RestartableStack {
  private child?: ChildProcess;

  /** `settings`: the settings document the stack starts with (CRM_SETTINGS); `env`: more environment variables (CRM_SMTP_URL). */
  constructor(readonly dir: string, private readonly settings: object, private readonly env: Record<string, string> = {}) {}

  get stackFile(): string {
    return path.join(this.dir, 'stack.json');
  }

  async start(): Promise<{ info: LocalStackInfo; deps: Deps }> {
    rmSync(this.stackFile, { force: true });
    this.child = spawn(process.execPath, ['--no-warnings', '--import', 'tsx', 'bin/local.ts', '--port', '0', '--dir', this.dir, '--quiet'], {
      stdio: 'ignore', env: { ...process.env, ...this.env, NODE_OPTIONS: '', CRM_SETTINGS: JSON.stringify(this.settings) },
    });
    await eventually(async () => existsSync(this.stackFile), { what: 'the stack to start', timeoutMs: 120_000 });
    const info = readStackFile(this.stackFile);
    return { info, deps: depsFromStackFile(info) };
  }

  /** `SIGKILL`: no chance to finish a batch or write a checkpoint, as a crashed machine. */
  async stop(signal: 'SIGTERM' | 'SIGKILL' = 'SIGTERM'): Promise<void> {
    const child = this.child;
    if (!child || child.exitCode !== null) return;
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill(signal);
    await exited;
  }
}
