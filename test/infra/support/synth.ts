/**
 * A stage's CloudFormation template as `cdk synth -c stage=<stage>` writes it, minus esbuild
 * (bundling skipped: ~2 s instead of ~5 s), into a scratch directory the caller removes. The CDK's
 * built-in CloudFormation validation is skipped too: it changes no template, its engine costs ~5 s
 * of CPU to load in each file, and stack.test.ts asserts its verdict (with cdk-nag's) on the stack.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { buildApp } from '../../../lib/stacks/app.js';
import { stages, type StageConfig } from '../../../lib/stages.js';
import type { CrmStack } from '../../../lib/stacks/crm-stack.js';

export interface Synthesized {
  stack: CrmStack;
  /** The template file's path. */
  file: string;
  template: { Resources: Record<string, { Type: string; Properties?: Record<string, unknown> }> };
  /** Removes the scratch directory. */
  remove: () => void;
}

/** Synthesizes `stage` of lib/stages.ts (or `config` under that name). cdk-nag's verdict is test/infra/stack.test.ts's business. */
export function synthStage(stage: string, config: StageConfig | undefined = stages[stage]): Synthesized {
  const outdir = mkdtempSync(path.join(tmpdir(), `crm-${stage}-`));
  const { app, stack } = buildApp({ outdir, builtinCloudFormationValidation: false, context: { 'aws:cdk:bundling-stacks': [], stage } }, { ...stages, [stage]: config! });
  try {
    app.synth();
  } catch {
    // Templates are written before the validation plugins run: a cdk-nag finding fails stack.test.ts.
  }
  const file = path.join(outdir, stack.templateFile);
  return { stack, file, template: JSON.parse(readFileSync(file, 'utf8')), remove: () => rmSync(outdir, { recursive: true, force: true }) };
}
