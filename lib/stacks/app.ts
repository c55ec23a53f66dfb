/**
 * Builds the CDK app: one stack per stage (`-c stage=<stage>`, default in cdk.json), configured by
 * lib/stages.ts, checked by cdk-nag's AwsSolutions rules at synth (an unacknowledged finding fails
 * it). bin/app.ts synthesizes it; test/infra builds the same app with bundling skipped.
 */
import { App, Validations, type AppProps } from 'aws-cdk-lib';
import { AwsSolutionsChecks } from 'cdk-nag';
import { stackName } from '../topology.js';
import { stages as repoStages, type StageConfig } from '../stages.js';
import { CrmStack } from './crm-stack.js';

/** A stage whose settings (lib/stages.ts, -c) are missing or wrong: bin/app.ts prints the message alone. */
export class StageConfigError extends Error {}

/** CloudWatch Logs accepts only these retention periods (days). */
const retentionDays = [1, 3, 5, 7, 14, 30, 60, 90, 120, 150, 180, 365, 400, 545, 731, 1096, 1827, 2192, 2557, 2922, 3288, 3653];
const whole = (n: number | undefined, min: number, max: number) => n === undefined || (Number.isInteger(n) && n >= min && n <= max);

/** The stage's settings, checked, with its account and region resolved (never a silent default). */
export function resolveStage(stage: string, config: StageConfig | undefined, context: { account?: string; region?: string }): StageConfig & { account: string; region: string } {
  const where = `lib/stages.ts`;
  if (!/^[a-z][a-z0-9-]{0,19}$/.test(stage)) throw new StageConfigError(`Invalid stage "${stage}": use lower-case letters, digits and dashes (e.g. -c stage=prod).`);
  if (!config) throw new StageConfigError(`Stage "${stage}" is not in ${where}: add it there (its account, region, alarm e-mail, concurrency, retention and backup) so every deploy reads the same settings. Known: ${Object.keys(repoStages).join(', ')}.`);
  const region = config.region ?? context.region;
  const account = config.account ?? context.account;
  if (!region) throw new StageConfigError(`No region for stage "${stage}": name it in ${where} (region: 'eu-west-1') or pass -c region=<region>. The CDK would otherwise deploy to us-east-1.`);
  if (!/^[a-z]{2}(-[a-z]+)+-\d$/.test(region)) throw new StageConfigError(`Invalid region "${region}" for stage "${stage}" (e.g. eu-west-1).`);
  if (!account) throw new StageConfigError(`No account for stage "${stage}": name it in ${where} (account: '123456789012', or 'any' for the deploying credentials' account) or pass -c account=<12 digits>.`);
  if (account !== 'any' && !/^\d{12}$/.test(account)) throw new StageConfigError(`Invalid account "${account}" for stage "${stage}": 12 digits or 'any'.`);
  if (config.alarmEmail !== undefined && !/^[^@\s]+@[^@\s]+$/.test(config.alarmEmail)) throw new StageConfigError(`Invalid alarmEmail "${config.alarmEmail}" for stage "${stage}".`);
  if (config.pagerEndpoint !== undefined && !/^https:\/\/[^\s]+$/.test(config.pagerEndpoint)) throw new StageConfigError(`Invalid pagerEndpoint for stage "${stage}": an https:// URL.`);
  const counts = { leadIntakeReservedConcurrency: [0, 1000], deliveryReservedConcurrency: [0, 1000], bulkReservedConcurrency: [0, 1000], deliveryMaxConcurrency: [2, 1000] } as const;
  for (const [name, [min, max]] of Object.entries(counts)) {
    const value = config[name as keyof typeof counts];
    if (!whole(value, min, max)) throw new StageConfigError(`Invalid ${name} ${value} for stage "${stage}": a whole number from ${min} to ${max}.`);
  }
  if (!retentionDays.includes(config.logRetentionDays)) throw new StageConfigError(`Invalid logRetentionDays ${config.logRetentionDays} for stage "${stage}": one of ${retentionDays.join(', ')}.`);
  if (!whole(config.pointInTimeRecoveryDays, 1, 35)) throw new StageConfigError(`Invalid pointInTimeRecoveryDays ${config.pointInTimeRecoveryDays} for stage "${stage}": a whole number from 1 to 35.`);
  if (config.backup) {
    for (const name of ['weeklyRetentionDays', 'monthlyRetentionDays'] as const) {
      if (!whole(config.backup[name], 0, 36500)) throw new StageConfigError(`Invalid backup.${name} ${config.backup[name]} for stage "${stage}": a whole number of days (0: none).`);
    }
    if (!config.backup.weeklyRetentionDays && !config.backup.monthlyRetentionDays) throw new StageConfigError(`backup of stage "${stage}" keeps nothing: give weeklyRetentionDays or monthlyRetentionDays, or remove backup.`);
    if (config.backup.copyToRegion === region) throw new StageConfigError(`backup.copyToRegion of stage "${stage}" is its own region: name another one.`);
  }
  return { ...config, account, region };
}

export function buildApp(props: AppProps = {}, stages: Record<string, StageConfig> = repoStages): { app: App; stack: CrmStack } {
  const app = new App(props);
  const stage = String(app.node.tryGetContext('stage') ?? 'dev');
  const context = (name: string) => app.node.tryGetContext(name) as string | undefined;
  const config = resolveStage(stage, stages[stage], { account: context('account'), region: context('region') });
  const stack = new CrmStack(app, stackName(stage), {
    stage,
    config,
    description: `CRM integration API (${stage}): lead intake, API keys, signed outgoing webhooks`,
    env: { account: config.account === 'any' ? undefined : config.account, region: config.region },
  });
  Validations.of(app).addPlugins(new AwsSolutionsChecks(app));
  return { app, stack };
}
