/**
 * Runs the deployable artifact: the bundles and template `cdk synth` writes. Each function's bundle
 * is copied to a task folder outside the project whose only resolvable packages are the ones the
 * Lambda Node.js runtime ships (lambda-runtime-packages.json), and is run in a child process by
 * bootstrap.mjs with exactly the environment the template gives the function, its references
 * resolved to the local stack's names. Shared by test/artifact and bench/coldstart.ts.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, readFileSync, readdirSync, realpathSync, symlinkSync } from 'node:fs';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { functions, outputKeys, queues, stackName, tables, type FunctionName, type QueueName, type TableName } from '../../lib/topology.js';

export const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const here = path.join(root, 'test', 'artifact');

export interface RuntimePackages { runtime: string; provided: string[]; sdkVersion: string; source: string[]; checked: string; notes: string[] }
export const runtimePackages: RuntimePackages = JSON.parse(readFileSync(path.join(here, 'lambda-runtime-packages.json'), 'utf8'));

/** `npx cdk synth` into `outdir`, bundling included, as a deploy would (the template validator is skipped: test/infra covers the template). */
export async function synthesize(outdir: string, stage = 'dev'): Promise<void> {
  const child = spawn('npx', ['cdk', 'synth', '-q', '-c', `stage=${stage}`, '-o', outdir], {
    cwd: root,
    env: { ...process.env, NODE_OPTIONS: '', CDK_VALIDATION: 'false' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.on('data', (c) => (output += c));
  child.stderr.on('data', (c) => (output += c));
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
  if (code !== 0) throw new Error(`cdk synth failed (${code}):\n${output}`);
}

type Value = string | number | boolean | { Ref: string } | Record<string, unknown>;
interface Resource { Type: string; Properties: Record<string, unknown>; Metadata?: Record<string, unknown> }
export interface Template { Resources: Record<string, Resource>; Outputs: Record<string, { Value: Value }> }

export interface SynthesizedFunction {
  /** Topology name (leadIntake, eventFanout, webhookDelivery). */
  name: FunctionName;
  logicalId: string;
  /** The bundle folder cdk synth wrote (index.mjs + source map). */
  assetDir: string;
  handler: string;
  runtime: string;
  timeoutSeconds: number;
  memoryMb: number;
  /** Environment.Variables as the template has them (Refs unresolved). */
  environment: Record<string, Value>;
}

export function readTemplate(cdkOut: string, stage = 'dev'): Template {
  return JSON.parse(readFileSync(path.join(cdkOut, `${stackName(stage)}.template.json`), 'utf8'));
}

/** Every Lambda function of the template with its bundle; the CDK path names the topology entry. */
export function synthesizedFunctions(cdkOut: string, template: Template): SynthesizedFunction[] {
  return Object.entries(template.Resources)
    .filter(([, r]) => r.Type === 'AWS::Lambda::Function' && r.Metadata?.['aws:asset:path'])
    .map(([logicalId, r]) => {
      const cdkPath = String(r.Metadata!['aws:cdk:path']);
      const name = (Object.keys(functions) as FunctionName[]).find((n) => cdkPath.includes(`/${n}Function/`));
      if (!name) throw new Error(`${cdkPath} is not a function of lib/topology.ts`);
      const p = r.Properties;
      return {
        name,
        logicalId,
        assetDir: path.join(cdkOut, String(r.Metadata!['aws:asset:path'])),
        handler: String(p.Handler),
        runtime: String(p.Runtime),
        timeoutSeconds: Number(p.Timeout),
        memoryMb: Number(p.MemorySize),
        environment: ((p.Environment as { Variables?: Record<string, Value> })?.Variables) ?? {},
      };
    });
}

export interface LocalNames { tables: Record<TableName, string>; queues: Record<QueueName, string> }

/**
 * The function's environment with every CloudFormation Ref replaced by what it names on the local
 * stack: a table's name, a queue's URL, the settings parameter's name. Anything else fails, so a new
 * kind of reference cannot slip through unresolved.
 */
export function resolveEnvironment(template: Template, environment: Record<string, Value>, local: LocalNames): Record<string, string> {
  const byOutput = new Map<string, string>();
  for (const name of Object.keys(tables) as TableName[]) byOutput.set(outputKeys.table(name), local.tables[name]);
  for (const name of Object.keys(queues) as QueueName[]) byOutput.set(outputKeys.queue(name), local.queues[name]);
  const resolveRef = (id: string): string => {
    const resource = template.Resources[id];
    if (resource?.Type === 'AWS::SSM::Parameter') return String(resource.Properties.Name);
    const output = Object.entries(template.Outputs).find(([, o]) => (o.Value as { Ref?: string }).Ref === id)?.[0];
    const value = output ? byOutput.get(output) : undefined;
    if (value === undefined) throw new Error(`Cannot resolve Ref ${id} (${resource?.Type ?? 'unknown'}) to a local resource`);
    return value;
  };
  return Object.fromEntries(Object.entries(environment).map(([key, value]) => {
    if (typeof value !== 'object') return [key, String(value)];
    if ('Ref' in value && typeof value.Ref === 'string') return [key, resolveRef(value.Ref)];
    throw new Error(`${key}: unsupported CloudFormation value ${JSON.stringify(value)}`);
  }));
}

const STATIC_IMPORTS = [/\bfrom\s*["']([^"']+)["']/g, /\bimport\s*["']([^"']+)["']/g];
const LAZY_IMPORTS = [/\bimport\s*\(\s*["']([^"']+)["']\s*\)/g, /\brequire\s*\(\s*["']([^"']+)["']\s*\)/g];

/** Bare module specifiers a bundle imports or requires (node: builtins excluded); `onlyStatic`: those loaded at init. */
export function bareImports(source: string, { onlyStatic = false } = {}): string[] {
  const found = new Set<string>();
  for (const pattern of onlyStatic ? STATIC_IMPORTS : [...STATIC_IMPORTS, ...LAZY_IMPORTS]) for (const m of source.matchAll(pattern)) found.add(m[1]);
  // Only what can be a package specifier: minified code also has `from","…` in strings (nodemailer's address fields).
  return [...found].filter((s) => !s.startsWith('.') && !s.startsWith('/') && !s.startsWith('node:') && /^(@[\w.-]+\/)?[\w.-]+(\/[\w.@/-]*)?$/.test(s)).sort();
}

/** The package a specifier names: `@scope/name/sub` → `@scope/name`. */
export const packageOf = (specifier: string) => specifier.split('/').slice(0, specifier.startsWith('@') ? 2 : 1).join('/');

/** True if the runtime provides the package (a pattern ends in /* for a whole scope). */
export function providedByRuntime(specifier: string, provided = runtimePackages.provided): boolean {
  const pkg = packageOf(specifier);
  return provided.some((p) => (p.endsWith('/*') ? pkg.startsWith(p.slice(0, -1)) : pkg === p));
}

/**
 * <dir>/node_modules holding what the runtime ships: every installed package the provided patterns
 * match and its dependencies, linked from the project's node_modules. Returns the package names.
 */
export function linkRuntimeModules(dir: string): string[] {
  const projectModules = path.join(root, 'node_modules');
  const target = path.join(dir, 'node_modules');
  mkdirSync(target, { recursive: true });
  const scoped = (scope: string) => (existsSync(path.join(projectModules, scope)) ? readdirSync(path.join(projectModules, scope)).map((n) => `${scope}/${n}`) : []);
  const roots = runtimePackages.provided.flatMap((p) => (p.endsWith('/*') ? scoped(p.slice(0, -2)) : [p]));
  const linked = new Set<string>();
  const queue = [...roots];
  while (queue.length) {
    const name = queue.shift()!;
    if (linked.has(name)) continue;
    const source = path.join(projectModules, name);
    if (!existsSync(source)) continue; // nested under a dependant: travels with it
    linked.add(name);
    mkdirSync(path.dirname(path.join(target, name)), { recursive: true });
    symlinkSync(realpathSync(source), path.join(target, name), 'dir');
    const manifest = JSON.parse(readFileSync(path.join(source, 'package.json'), 'utf8')) as { dependencies?: Record<string, string> };
    queue.push(...Object.keys(manifest.dependencies ?? {}));
  }
  return [...linked].sort();
}

/** A task folder for the function under `runtimeDir` (which holds the runtime's node_modules). */
export function taskFolder(runtimeDir: string, fn: SynthesizedFunction): string {
  const task = path.join(runtimeDir, fn.name);
  cpSync(fn.assetDir, task, { recursive: true });
  cpSync(path.join(here, 'bootstrap.mjs'), path.join(runtimeDir, 'bootstrap.mjs'));
  return task;
}

/** One warm Lambda container: the bundle imported once, then invoked event by event. */
export class LambdaContainer {
  logs = '';
  private next = 0;
  private waiting = new Map<number, { resolve(v: unknown): void; reject(e: Error): void }>();

  private constructor(private readonly child: ChildProcess, readonly fn: SynthesizedFunction) {}

  static async start(runtimeDir: string, fn: SynthesizedFunction, env: Record<string, string>): Promise<LambdaContainer> {
    const task = path.join(runtimeDir, fn.name);
    const child = spawn(process.execPath, [path.join(runtimeDir, 'bootstrap.mjs'), task, fn.handler, fn.name, String(fn.timeoutSeconds), String(fn.memoryMb)], {
      cwd: task,
      env,
      stdio: ['pipe', 'pipe', 'pipe', 'pipe'],
    });
    const container = new LambdaContainer(child, fn);
    child.stdout!.on('data', (c) => (container.logs += c));
    child.stderr!.on('data', (c) => (container.logs += c));
    const init = new Promise<void>((resolve, reject) => {
      child.once('exit', (code, signal) => {
        const error = new Error(`${fn.name} exited (${code ?? signal}):\n${container.logs}`);
        reject(error);
        for (const waiter of container.waiting.values()) waiter.reject(error);
      });
      createInterface({ input: child.stdio[3] as NodeJS.ReadableStream }).on('line', (line) => {
        const message = JSON.parse(line) as { init?: string; id?: number; result?: unknown; error?: { message: string; stack?: string } };
        if (message.init === 'ok') return resolve();
        if (message.init === 'error') return reject(new Error(`${fn.name} init failed: ${message.error!.stack ?? message.error!.message}\n${container.logs}`));
        const waiter = container.waiting.get(message.id!);
        container.waiting.delete(message.id!);
        if (message.error) waiter?.reject(new Error(`${fn.name} failed: ${message.error.stack ?? message.error.message}`));
        else waiter?.resolve(message.result);
      });
    });
    await init;
    return container;
  }

  invoke<T = unknown>(event: unknown): Promise<T> {
    const id = this.next++;
    return new Promise<T>((resolve, reject) => {
      this.waiting.set(id, { resolve: resolve as (v: unknown) => void, reject });
      this.child.stdin!.write(JSON.stringify({ id, event }) + '\n');
    });
  }

  async stop(): Promise<void> {
    if (this.child.exitCode !== null) return;
    // Lambda freezes and later kills an idle container; open keep-alive sockets would keep it alive.
    const exited = new Promise((resolve) => this.child.once('exit', resolve));
    this.child.kill('SIGTERM');
    await exited;
  }
}
