/**
 * Builds the CDK app: one stack per stage (`-c stage=<stage>`, default in cdk.json), checked by
 * cdk-nag's AwsSolutions rules at synth (an unacknowledged finding fails it). bin/app.ts synthesizes
 * it; test/infra builds the same app with bundling skipped.
 */
import { App, Validations, type AppProps } from 'aws-cdk-lib';
import { AwsSolutionsChecks } from 'cdk-nag';
import { stackName } from '../topology.js';
import { CrmStack } from './crm-stack.js';

export function buildApp(props: AppProps = {}): { app: App; stack: CrmStack } {
  const app = new App(props);
  const stage = String(app.node.tryGetContext('stage') ?? 'dev');
  if (!/^[a-z][a-z0-9-]{0,19}$/.test(stage)) throw new Error(`Invalid stage "${stage}": use lower-case letters, digits and dashes (e.g. -c stage=prod).`);
  const alarmEmail = app.node.tryGetContext('alarmEmail') as string | undefined;
  if (alarmEmail !== undefined && !/^[^@\s]+@[^@\s]+$/.test(alarmEmail)) throw new Error(`Invalid alarmEmail "${alarmEmail}".`);
  const count = (name: string, min: number, max: number): number | undefined => {
    const raw = app.node.tryGetContext(name) as string | number | undefined;
    if (raw === undefined) return undefined;
    const n = Number(raw);
    if (!Number.isInteger(n) || n < min || n > max) throw new Error(`Invalid ${name} "${raw}": a whole number from ${min} to ${max}.`);
    return n;
  };
  const stack = new CrmStack(app, stackName(stage), {
    stage,
    alarmEmail,
    deliveryMaxConcurrency: count('deliveryMaxConcurrency', 2, 1000),
    leadIntakeReservedConcurrency: count('leadIntakeReservedConcurrency', 0, 1000),
    deliveryReservedConcurrency: count('deliveryReservedConcurrency', 0, 1000),
    description: `CRM integration API (${stage}): lead intake, API keys, signed outgoing webhooks`,
    // Environment-agnostic unless the CLI resolved credentials: synth needs no AWS account.
    env: { account: process.env.CDK_DEFAULT_ACCOUNT, region: process.env.CDK_DEFAULT_REGION },
  });
  Validations.of(app).addPlugins(new AwsSolutionsChecks(app));
  return { app, stack };
}
