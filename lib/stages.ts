/**
 * Per-stage deployment settings, in the repository so that every `cdk deploy -c stage=<name>` reads
 * the same ones (docs/deploy.md "Stages"). A setting given once on a command line would vanish at
 * the next deploy without it (an alarm subscription deleted, a reservation a small account refuses):
 * nothing here is taken from `-c`, except `account`/`region` for a stage that names none.
 * Pure data: no CDK imports (bin/app.ts and lib/stacks/app.ts read it).
 */
export interface BackupConfig {
  /** Days a daily backup is kept (AWS Backup, in this region). */
  retentionDays: number;
  /** A second region the daily backups are copied to (a vault named `crm-<stage>-copy` must exist there), or none. */
  copyToRegion?: string;
}

export interface StageConfig {
  /**
   * The AWS account: 12 digits, or 'any' for a template that deploys to the account of whatever
   * credentials run `cdk deploy` (a developer's own account). Absent: `-c account=…`.
   */
  account?: string;
  /** The AWS region. Absent: `-c region=…`. Never guessed: the CDK CLI would fall back to us-east-1. */
  region?: string;
  /** Subscribed to the page topic (alarms worth waking for) and the ticket topic. */
  alarmEmail?: string;
  /**
   * An https endpoint of the pager (PagerDuty, Opsgenie, …) subscribed to the page topic, so that no
   * deploy drops a subscription made by hand. Absent: none.
   */
  pagerEndpoint?: string;
  /** Lead intake's reserved concurrency (0: none; a new account's limit of 10 needs 0). docs/capacity.md. */
  leadIntakeReservedConcurrency: number;
  /** The delivery function's reserved concurrency; absent: the sum of its mappings' (0: none). */
  deliveryReservedConcurrency?: number;
  /** The bulk fan-out's reserved concurrency; absent: its mapping's maximum concurrency (0: none). docs/capacity.md. */
  bulkReservedConcurrency?: number;
  /**
   * The delivery sweeper's reserved concurrency: 1 (absent) runs one sweep at a time, a second
   * overlapping run is refused; 0 reserves none (an account whose limit is 10 can reserve nothing).
   */
  sweeperReservedConcurrency?: 0 | 1;
  /** The main delivery lane's MaximumConcurrency; absent: the topology's (docs/capacity.md). */
  deliveryMaxConcurrency?: number;
  /** Days the functions', API Gateway's and WAF's log groups keep their lines. */
  logRetentionDays: number;
  /** AWS Backup of the tables (on top of point-in-time recovery), or none. */
  backup?: BackupConfig;
  /** Notices by e-mail (docs/deploy.md "E-mail"); absent: the configuration's default sender, whose domain must then be verified. */
  notices?: NoticesConfig;
}

export interface NoticesConfig {
  /** The From of every notice, an address of a domain verified in SES in the stage's region: `CRM <notices@crm.example.com>`. */
  sender: string;
  /** The base URL of the confirm and unsubscribe links (a custom domain of the API); absent: the API's execute-api URL. */
  linkBaseUrl?: string;
}

/**
 * The stages. Edit here, commit, deploy: `npx cdk deploy -c stage=prod`. `dev` synthesizes offline
 * with no credentials (tests, CI) and deploys to the caller's own account.
 */
export const stages: Record<string, StageConfig> = {
  dev: {
    account: 'any',
    region: 'eu-west-1',
    // A new account's concurrency limit is 10: nothing reserved.
    leadIntakeReservedConcurrency: 0,
    deliveryReservedConcurrency: 0,
    bulkReservedConcurrency: 0,
    sweeperReservedConcurrency: 0,
    logRetentionDays: 14,
  },
  prod: {
    // Replace with the production account: a deploy with other credentials is refused by the CDK.
    account: '111111111111',
    region: 'eu-west-1',
    alarmEmail: 'oncall@example.com',
    notices: { sender: 'CRM notices <notices@crm.example.com>' },
    leadIntakeReservedConcurrency: 100,
    logRetentionDays: 90,
    backup: { retentionDays: 35, copyToRegion: 'eu-central-1' },
  },
};
