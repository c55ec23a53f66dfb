import type { ChildProcess } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';

export default async function globalTeardown(): Promise<void> {
  const child = (globalThis as Record<string, unknown>).__crmLocalStack as ChildProcess | undefined;
  if (child && child.exitCode === null) {
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
    await exited;
    clearTimeout(timer);
  }
  // A 429 the front door answered on its own is otherwise invisible in a failed run's output.
  const log = process.env.CRM_STACK_LOG;
  const refusals = log && existsSync(log) ? readFileSync(log, 'utf8').split('\n').filter((line) => line.startsWith('front door: ')) : [];
  if (refusals.length) console.warn(`The shared test stack's front door answered 429 itself:\n${refusals.slice(0, 20).join('\n')}`);
}
