/**
 * AWS Control Tower's proactive controls, as a governed account runs them at deploy time: cfn-guard
 * (the binary the CDK policy-validation plugin @cdklabs/cdk-validator-cfnguard ships) with the
 * plugin's Control Tower rule set, on every stage's synthesized template. A failure fails the test
 * unless it is one of the exceptions below, each explained in docs/deploy.md "Control Tower".
 */
import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { arch, platform } from 'node:os';
import path from 'node:path';
import { describe, it, expect, beforeAll, afterAll } from '@jest/globals';
import { stages, type StageConfig } from '../../lib/stages.js';
import { functions, queues, type FunctionName, type QueueName, type QueueSpec } from '../../lib/topology.js';
import { synthStage, type Synthesized } from './support/synth.js';

const plugin = path.dirname(createRequire(import.meta.url).resolve('@cdklabs/cdk-validator-cfnguard/package.json'));
/** The binary for this machine, picked as the plugin picks it (its names for the platform and the architecture). */
const guardBinary = path.join(plugin, 'bin', { linux: 'ubuntu', darwin: 'macos' }[platform() as string] ?? platform(), { x64: 'x86_64', arm64: 'aarch64' }[arch() as string] ?? arch(), 'cfn-guard');
const rulesDir = path.join(plugin, 'rules', 'control-tower', 'cfn-guard');

/** Every rule file of the set, with the resource types it reports on (none named: always run). */
const ruleFiles = (readdirSync(rulesDir, { recursive: true }) as string[])
  .filter((f) => f.endsWith('.guard'))
  .map((f) => {
    const file = path.join(rulesDir, f);
    return { file, types: [...readFileSync(file, 'utf8').matchAll(/"(AWS::\w+::\w+)"/g)].map((m) => m[1]) };
  });

interface Failure { control: string; resource: string }

/**
 * Runs cfn-guard once on the templates, with the rules that report on a resource type they hold
 * (the others would only SKIP: 237 rules take ~5 s of CPU, these ~1 s). Answers each template's
 * failing controls and resources, and the names of the rules that passed.
 */
function runControls(files: string[]): Map<string, { failures: Failure[]; passed: string[] }> {
  const types = new Set(files.flatMap((f) => Object.values((JSON.parse(readFileSync(f, 'utf8')) as Synthesized['template']).Resources).map((r) => r.Type)));
  const rules = ruleFiles.filter((r) => r.types.length === 0 || r.types.some((t) => types.has(t)));
  const run = spawnSync(guardBinary, [
    'validate', ...rules.flatMap((r) => ['--rules', r.file]), ...files.flatMap((f) => ['--data', f]),
    '--output-format', 'json', '--show-summary', 'none', '--structured',
  ], { encoding: 'utf8', maxBuffer: 256 * 1024 * 1024 });
  // 0: all pass; 19: some rule failed (what the plugin accepts too).
  if (run.error || (run.status !== 0 && run.status !== 19)) throw new Error(`cfn-guard failed (${run.status ?? run.error}): ${run.stderr}`);
  const reports = JSON.parse(run.stdout) as { name: string; compliant: string[]; not_compliant: unknown[] }[];
  return new Map(reports.map((report) => [report.name, {
    passed: report.compliant,
    // A failing rule's report is deeply nested and shaped by how the rule is written: its message
    // names the control (`[CT.X.PR.n]`), its checks the resources' paths.
    failures: report.not_compliant.flatMap((rule) => {
      const text = JSON.stringify(rule);
      const controls = [...new Set([...text.matchAll(/\[(CT\.[A-Z0-9]+\.PR\.\d+)\]/g)].map((m) => m[1]))];
      const resources = [...new Set([...text.matchAll(/\/Resources\/([A-Za-z0-9]+)\//g)].map((m) => m[1]))];
      // A failure naming no control or no resource is still a failure (and matches no exception).
      const name = (rule as { Rule?: { name?: string } }).Rule?.name ?? 'unnamed rule';
      return (controls.length ? controls : [name]).flatMap((control) => (resources.length ? resources : ['(template)']).map((resource) => ({ control, resource })));
    }),
  }]));
}

type Resources = Synthesized['template']['Resources'];
interface Exception {
  control: string;
  /** Whether the exception holds for this stage, and which of its resources it covers. */
  covers: (config: StageConfig, resource: string, built: Synthesized) => boolean;
}
const logicalId = (built: Synthesized, construct: { node: { defaultChild?: unknown } }) => built.stack.getLogicalId(construct.node.defaultChild as never);
const isFunction = (built: Synthesized, resource: string) => (Object.keys(functions) as FunctionName[]).some((name) => logicalId(built, built.stack.functions[name]) === resource);
/** The final parking queues: dead-letter and on-failure destinations, which have no dead-letter queue of their own. */
const isParkingQueue = (built: Synthesized, resource: string) => (Object.entries(queues) as [QueueName, QueueSpec][])
  .some(([name, spec]) => !spec.deadLetter && logicalId(built, built.stack.queues[name]) === resource);
const propertiesOf = (resources: Resources, resource: string) => resources[resource]?.Properties ?? {};

/** The documented exceptions (docs/deploy.md "Control Tower"): by design on every stage, or a cheaper stage's own options. */
const exceptions: Exception[] = [
  // By design: no VPC (no NAT to pay, no ENI cold starts); the functions call AWS APIs and the public webhook endpoints.
  { control: 'CT.LAMBDA.PR.3', covers: (_config, resource, built) => isFunction(built, resource) },
  // By design: a dead-letter queue is where failures end; one of its own would be a queue nobody reads.
  { control: 'CT.SQS.PR.1', covers: (_config, resource, built) => isParkingQueue(built, resource) },
  // A stage's options: logs kept less than a year, or without a key of their own (dev saves their cost).
  { control: 'CT.CLOUDWATCH.PR.2', covers: (config, resource, built) => config.logRetentionDays < 365 && built.template.Resources[resource]?.Type === 'AWS::Logs::LogGroup' },
  { control: 'CT.CLOUDWATCH.PR.3', covers: (config, resource, built) => !config.logEncryptionKey && built.template.Resources[resource]?.Type === 'AWS::Logs::LogGroup' },
  // A stage deploying to whatever account runs `cdk deploy` ('any') names it as { Ref: AWS::AccountId },
  // which the static rule cannot read (the deploy-time hook sees the resolved 12 digits).
  {
    control: 'CT.LAMBDA.PR.2',
    covers: (config, resource, built) => config.account === 'any'
      && JSON.stringify(propertiesOf(built.template.Resources, resource).SourceAccount) === JSON.stringify({ Ref: 'AWS::AccountId' }),
  },
];
const byDesign = ['CT.LAMBDA.PR.3', 'CT.SQS.PR.1'];

const built = new Map<string, Synthesized>();
let results: ReturnType<typeof runControls>;
let broken: string;

beforeAll(() => {
  for (const stage of Object.keys(stages)) built.set(stage, synthStage(stage));
  // Prod with each fix undone on one resource: the check must see all three.
  const prod = built.get('prod')!;
  const resources = structuredClone(prod.template.Resources);
  const [logGroup] = Object.keys(resources).filter((id) => resources[id].Type === 'AWS::Logs::LogGroup');
  const [permission] = Object.keys(resources).filter((id) => resources[id].Type === 'AWS::Lambda::Permission' && propertiesOf(resources, id).Principal === 'apigateway.amazonaws.com');
  resources[logGroup].Properties = { ...resources[logGroup].Properties, RetentionInDays: 90, KmsKeyId: undefined };
  resources[permission].Properties = { ...resources[permission].Properties, SourceAccount: undefined };
  broken = prod.file.replace(/\.template\.json$/, '.broken.template.json');
  writeFileSync(broken, JSON.stringify({ ...prod.template, Resources: resources }));
  results = runControls([...[...built.values()].map((b) => b.file), broken]);
});

afterAll(() => {
  for (const b of built.values()) b.remove();
});

describe('Control Tower proactive controls', () => {
  it.each(Object.keys(stages))('%s fails no control but the documented exceptions', (stage) => {
    const b = built.get(stage)!;
    const { failures, passed } = results.get(b.file)!;
    const unexcused = failures.filter((f) => !exceptions.some((e) => e.control === f.control && e.covers(stages[stage], f.resource, b)));
    expect(unexcused).toEqual([]);
    // The run really evaluated this template: the rules on log groups, functions and queues applied.
    expect(passed.length).toBeGreaterThan(5);
  });

  it('prod fails only the controls that are exceptions by design, and passes the log and permission controls', () => {
    const prod = built.get('prod')!;
    const { failures, passed } = results.get(prod.file)!;
    expect([...new Set(failures.map((f) => f.control))].sort()).toEqual([...byDesign].sort());
    expect(passed).toEqual(expect.arrayContaining([
      'cloudwatch_log_group_retention_period_check', 'cloudwatch_log_group_encrypted_check',
      'lambda_function_public_access_prohibited_check', 'kms_key_rotation_enabled_check', 'kms_create_grant_aws_service_check',
    ]));
  });

  it('catches a log group kept 90 days without a key, and an API Gateway permission without SourceAccount', () => {
    const controls = new Set(results.get(broken)!.failures.map((f) => f.control));
    expect([...controls].sort()).toEqual(['CT.CLOUDWATCH.PR.2', 'CT.CLOUDWATCH.PR.3', 'CT.LAMBDA.PR.2', ...byDesign].sort());
  });

  it('every service-principal Lambda permission of every stage names its source account', () => {
    for (const [stage, b] of built) {
      const account = stages[stage].account;
      const permissions = Object.values(b.template.Resources).filter((r) => r.Type === 'AWS::Lambda::Permission' && String(r.Properties?.Principal).endsWith('.amazonaws.com'));
      // One per routed function (test/infra/api-permissions.test.ts) and the sweeper's schedule.
      expect(permissions.length).toBeGreaterThanOrEqual(3);
      for (const p of permissions) expect(p.Properties?.SourceAccount).toEqual(account && /^\d{12}$/.test(account) ? account : { Ref: 'AWS::AccountId' });
    }
  });

  it('docs/deploy.md gives the reason of every exception', () => {
    const deploy = readFileSync(new URL('../../docs/deploy.md', import.meta.url), 'utf8');
    const section = deploy.slice(deploy.indexOf('## Control Tower'), deploy.indexOf('\n## ', deploy.indexOf('## Control Tower') + 1));
    expect(section.length).toBeGreaterThan(100);
    for (const { control } of exceptions) expect(section).toContain(control);
  });
});
