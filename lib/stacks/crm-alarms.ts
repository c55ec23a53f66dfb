/**
 * The alarms of a stage and where they go: two TLS-only SNS topics, `page` (someone wakes up: the
 * service is failing for many) and `ticket` (look during the day: one customer's receiver, a slow
 * lane behind). Every alarm notifies its topic when it fires AND when it clears (OK action), so a
 * page is never left open in the pager. Each description links its runbook section in
 * docs/operations.md "Alarm runbooks"; docs/deploy.md "Alarms" has one row per alarm.
 */
import { ArnFormat, Duration, Stack, Validations } from 'aws-cdk-lib';
import type * as apigw from 'aws-cdk-lib/aws-apigateway';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import { SnsAction } from 'aws-cdk-lib/aws-cloudwatch-actions';
import type * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as iam from 'aws-cdk-lib/aws-iam';
import type * as lambda from 'aws-cdk-lib/aws-lambda';
import * as sns from 'aws-cdk-lib/aws-sns';
import { EmailSubscription, UrlSubscription } from 'aws-cdk-lib/aws-sns-subscriptions';
import type * as sqs from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import { functions as functionSpecs, queues as queueSpecs, tables as tableSpecs, type FunctionName, type FunctionSpec, type QueueName, type TableName } from '../topology.js';
import { metricsNamespace, serviceName } from '../../functions/core/platform/bindings.js';

/** Ready deliveries the delivery function (10 batches of 10 at a time) should have taken within minutes. */
const deliveryBacklogThreshold = 100;
/** Delivery messages in flight: the attempts under way are ≤ 10 × maxConcurrency (500); SQS's ceiling is ~120,000. */
const deliveryInFlightThreshold = 5_000;
/** Attempts in 15 minutes below which the delivery failure rate does not alarm. */
const failureRateMinAttempts = 50;
/** Webhook endpoints whose circuit opened in 15 minutes that page: one is a customer's receiver down; many at once is usually ours (egress, DNS, TLS). */
const circuitsOpenedThreshold = 10;
/**
 * New dead letters in an hour that open a ticket. A receiver dead for days sends its deliveries there
 * one by one: this counts the new ones (the depth would stay high for ever and never fire again).
 */
export const deadLettersPerHourThreshold = 25;
/** New dead letters in 15 minutes that page: many receivers exhausting at once is our side. */
export const deadLetterSurgeThreshold = 200;
/** 5XX as a share of requests (%) that pages, over at least `api5xxMinRequests` requests in 5 minutes. */
export const api5xxSharePercent = 5;
export const api5xxMinRequests = 20;

export type Severity = 'page' | 'ticket';

/** Where the alarms' runbooks are: each description ends with `Runbook: <this>#<section>`. */
export const runbookDoc = 'docs/operations.md';
/** The runbook section of each alarm that has its own kind (docs/operations.md "Alarm runbooks"). */
const runbookSections: Record<string, string> = {
  DeliveryDeadLetters: 'alarm-delivery-dead-letters', DeliveryDeadLetterSurge: 'alarm-delivery-dead-letters', DeliveryQueueDeadLetters: 'alarm-delivery-dead-letters',
  DeliveryFailureRate: 'alarm-delivery-failing', CircuitsOpened: 'alarm-delivery-failing', DeliveryOutcomesUnwritten: 'alarm-delivery-failing',
  DeliveryQueueBacklog: 'alarm-delivery-backlog', DeliveryInFlight: 'alarm-delivery-backlog', DeliveryOldestMessageAge: 'alarm-delivery-backlog',
  DeliverySlowLaneOldestMessageAge: 'alarm-delivery-backlog',
  DueSweepLag: 'alarm-due-sweep', DueSweepNotRunning: 'alarm-due-sweep',
  FanoutFailures: 'alarm-fan-out', FanoutIteratorAge: 'alarm-fan-out', TenantMismatch: 'alarm-fan-out',
  BulkDeadLetters: 'alarm-bulk-fan-out', BulkSharesFailed: 'alarm-bulk-fan-out', BulkOldestMessageAge: 'alarm-bulk-fan-out',
  Api5xxShare: 'alarm-api', ApiLatency: 'alarm-api', RateLimitFailOpen: 'alarm-api', CaptchaUnavailable: 'alarm-api',
  LeadRefundFailed: 'alarm-lead-billing', LeadUsageCountFailed: 'alarm-lead-billing',
  BackupJobsFailed: 'alarm-backups', BackupCopyJobsFailed: 'alarm-backups',
  NoticesRedriveFailed: 'alarm-notices', NoticeCapFailed: 'alarm-notices',
  NoticeDeadLetters: 'alarm-notices', MailFeedbackDeadLetters: 'alarm-notices', NoticesNotQueued: 'alarm-notices', DigestDeadLetters: 'alarm-notices',
  UnqueuedNoticesWaiting: 'alarm-notices', NoticesSetAside: 'alarm-notices', DigestOldestMessageAge: 'alarm-notices', MailRejectionsHeld: 'alarm-notices',
  StatisticsIteratorAge: 'alarm-statistics', StatisticsUnwritten: 'alarm-statistics',
  DigestJobsUnqueued: 'alarm-notices',
};

/** An alarm's runbook section: its own kind's, or the one for every function's errors, throttles, or every table's throttles; 'alarm-runbooks' (the list) for an alarm not mapped yet, which test/infra refuses. */
export function runbookSection(id: string): string {
  if (runbookSections[id]) return runbookSections[id];
  for (const name of Object.keys(functionSpecs)) {
    if (id === `${name}Errors`) return 'alarm-function-errors';
    if (id === `${name}Throttles`) return 'alarm-function-throttles';
  }
  if (Object.keys(tableSpecs).some((name) => id === `${name}TableThrottles`)) return 'alarm-table-throttles';
  return 'alarm-runbooks';
}
const fiveMinutesPeriod = Duration.minutes(5);
/** The functions whose failure pages: callers see it at once (lead intake), or every delivery stops. */
const pagingFunctions: FunctionName[] = ['leadIntake', 'eventFanout', 'bulkFanout', 'webhookDelivery'];

/**
 * The iterator-age alarm of each function reading a table's stream (lib/topology.ts): a function
 * given a stream source must be named here (`streamConsumerNames` refuses one that is not).
 */
const streamConsumers: Partial<Record<FunctionName, { id: string; severity: Severity; minutes: number; description: string }>> = {
  eventFanout: {
    id: 'FanoutIteratorAge', severity: 'page', minutes: 5,
    description: 'The fan-out is more than 5 minutes behind the table streams: events are late (records older than 24 h are lost).',
  },
  // Best effort, a minute's batching window of its own: behind by half an hour is worth a look, not a page.
  deliveryStatistics: {
    id: 'StatisticsIteratorAge', severity: 'ticket', minutes: 30,
    description: 'The delivery statistics are more than 30 minutes behind the deliveries table\'s stream: the charts lag (records older than 24 h are never counted). See the deliveryStatistics function\'s errors and log (docs/deploy.md).',
  },
};

/** The functions with a stream event source, each with its entry in `streamConsumers`. */
export function streamConsumerNames(): FunctionName[] {
  const names = (Object.entries(functionSpecs) as [FunctionName, FunctionSpec][]).filter(([, spec]) => spec.events.some((e) => e.kind === 'stream')).map(([name]) => name);
  for (const name of names) if (!streamConsumers[name]) throw new Error(`${name} reads a stream but has no iterator-age alarm: add it to streamConsumers (lib/stacks/crm-alarms.ts)`);
  return names;
}
/** How far behind its stream a consumer is (ms, the maximum over 5 minutes): the alarm's and the dashboard's metric. */
export const iteratorAge = (fn: lambda.IFunction) => fn.metric('IteratorAge', { period: fiveMinutesPeriod, statistic: 'Maximum' });

export interface CrmAlarmsProps {
  stage: string;
  alarmEmail?: string;
  pagerEndpoint?: string;
  tables: Record<TableName, dynamodb.Table>;
  queues: Record<QueueName, sqs.Queue>;
  functions: Record<FunctionName, lambda.Function>;
  api: apigw.RestApi;
}

const entries = <K extends string, V>(o: Record<K, V>) => Object.entries(o) as [K, V][];
const fiveMinutes = fiveMinutesPeriod;

export class CrmAlarms extends Construct {
  readonly topics: Record<Severity, sns.Topic>;
  readonly alarms: { alarm: cloudwatch.Alarm; severity: Severity }[] = [];

  constructor(scope: Construct, id: string, private readonly props: CrmAlarmsProps) {
    super(scope, id);
    this.topics = {
      page: this.topic('page', 'Page', props),
      ticket: this.topic('ticket', 'Ticket', props),
    };
    this.createAlarms();
  }

  /** Failed AWS Backup backup and copy jobs of the stage's vault (a day without a backup is a ticket, not a page). */
  watchBackups(vaultName: string): void {
    const failed = (metricName: string) => new cloudwatch.Metric({
      namespace: 'AWS/Backup', metricName, dimensionsMap: { BackupVaultName: vaultName }, statistic: 'Sum', period: Duration.hours(1),
    });
    this.add('ticket', 'BackupJobsFailed', 'An AWS Backup job of the tables failed: see the AWS Backup console (Jobs) for the reason; point-in-time recovery still covers the tables.',
      failed('NumberOfBackupJobsFailed'), { threshold: 1 });
    this.add('ticket', 'BackupCopyJobsFailed', 'Copying a table backup to the second region failed (the copy vault missing there, or its access policy): see the AWS Backup console (Jobs, Copy jobs).',
      failed('NumberOfCopyJobsFailed'), { threshold: 1 });
  }

  private topic(severity: Severity, id: string, { stage, alarmEmail, pagerEndpoint }: CrmAlarmsProps): sns.Topic {
    const topic = new sns.Topic(this, id, { topicName: `crm-${stage}-${severity}`, displayName: `CRM integration API (${stage}) ${severity}`, enforceSSL: true });
    Validations.of(topic).acknowledge({
      id: 'AwsSolutions-SNS2',
      reason: 'Alarm notifications carry alarm names and states, no customer data; CloudWatch cannot publish to a topic encrypted with the AWS-managed SNS key, and a customer-managed key for this alone is not worth its cost.',
    });
    // enforceSSL writes a topic policy holding only its Deny, and a topic policy replaces SNS's
    // default one: without this Allow, no alarm could publish (they would fail silently).
    const stack = Stack.of(this);
    topic.addToResourcePolicy(new iam.PolicyStatement({
      sid: 'AllowCloudWatchAlarms',
      principals: [new iam.ServicePrincipal('cloudwatch.amazonaws.com')],
      actions: ['sns:Publish'],
      resources: [topic.topicArn],
      conditions: {
        StringEquals: { 'aws:SourceAccount': stack.account },
        ArnLike: { 'aws:SourceArn': stack.formatArn({ service: 'cloudwatch', resource: 'alarm', resourceName: '*', arnFormat: ArnFormat.COLON_RESOURCE_NAME }) },
      },
    }));
    // From lib/stages.ts: every deploy of the stage keeps it (a -c flag forgotten once would delete it).
    if (alarmEmail) topic.addSubscription(new EmailSubscription(alarmEmail));
    if (pagerEndpoint && severity === 'page') topic.addSubscription(new UrlSubscription(pagerEndpoint));
    return topic;
  }

  private createAlarms(): void {
    const { queues, functions, tables } = this.props;
    const stage = this.props.api.deploymentStage;
    const sent = (queue: QueueName, period: Duration) => queues[queue].metricNumberOfMessagesSent({ period, statistic: 'Sum' });

    // Dead letters by cause: the rate of new ones, never the depth (a dead receiver keeps it up for days).
    this.add('ticket', 'DeliveryDeadLetters', `${deadLettersPerHourThreshold} or more webhook deliveries used all their attempts in an hour (cause: receivers failing): \`crm deliveries list --org <id> --status failed\`, then re-drive per organization (docs/deploy.md).`,
      sent('deliveryDlq', Duration.hours(1)), { threshold: deadLettersPerHourThreshold });
    this.add('page', 'DeliveryDeadLetterSurge', `${deadLetterSurgeThreshold} or more webhook deliveries used all their attempts in 15 minutes: many receivers at once is usually our egress, DNS, TLS or signing.`,
      sent('deliveryDlq', Duration.minutes(15)), { threshold: deadLetterSurgeThreshold });
    this.add('page', 'FanoutFailures', 'The fan-out gave up on a stream batch (cause: events not derived): events may be missing. Fix the cause, then `crm events replay-failures` (within 24 h, the stream retention).',
      sent('fanoutFailures', fiveMinutes), { threshold: 1 });
    // A floor of attempts, as for the API's 5xx share: one receiver's 3 failures of a quiet night's 4 attempts is no trend.
    this.add('ticket', 'DeliveryFailureRate', `More than 25% of webhook delivery attempts failed over 15 minutes (at least ${failureRateMinAttempts} attempts).`,
      new cloudwatch.MathExpression({
        expression: `IF(attempts >= ${failureRateMinAttempts}, 100 * failures / attempts, 0)`,
        usingMetrics: { attempts: serviceMetric('DeliveryAttempts'), failures: serviceMetric('DeliveryFailures') },
        period: Duration.minutes(15),
      }), { threshold: 25, above: true });
    // Visible = ready and not taken.
    this.add('page', 'DeliveryQueueBacklog', `Over ${deliveryBacklogThreshold} webhook deliveries have waited ready but unconsumed for 15 minutes: the delivery function is not keeping up or not consuming.`,
      queues.deliveryQueue.metricApproximateNumberOfMessagesVisible({ period: fiveMinutes, statistic: 'Maximum' }), { threshold: deliveryBacklogThreshold, above: true, periods: 3 });
    // Retries never wait in flight (docs/webhooks.md): in flight are only the attempts under way (at
    // most maxConcurrency × 10) and crashed ones awaiting their visibility time-out. SQS stops handing
    // out messages at ~120,000 in flight, for every organization.
    this.add('page', 'DeliveryInFlight', `Over ${deliveryInFlightThreshold} delivery messages have been in flight for 15 minutes (SQS stalls the whole queue at ~120,000): attempts are crashing or hanging.`,
      queues.deliveryQueue.metricApproximateNumberOfMessagesNotVisible({ period: fiveMinutes, statistic: 'Maximum' }), { threshold: deliveryInFlightThreshold, above: true, periods: 3 });
    // A message waits at most 15 min delayed, then is taken within seconds: older means stuck.
    this.add('page', 'DeliveryOldestMessageAge', 'The oldest delivery message is over 30 minutes old: deliveries are not being consumed (or keep crashing).',
      queues.deliveryQueue.metricApproximateAgeOfOldestMessage({ period: fiveMinutes, statistic: 'Maximum' }), { threshold: 30 * 60, above: true });
    // The slow lane has a small concurrency of its own: its backlog grows unseen by the main lane's alarms.
    this.add('ticket', 'DeliverySlowLaneOldestMessageAge', 'The oldest slow-lane delivery message is over 30 minutes old: the slow lane (failing, hanging or slow endpoints) is not keeping up or not consuming. Healthy endpoints are not affected.',
      queues.deliverySlowQueue.metricApproximateAgeOfOldestMessage({ period: fiveMinutes, statistic: 'Maximum' }), { threshold: 30 * 60, above: true });
    this.add('page', 'DueSweepLag', 'Parked webhook retries are re-queued more than 5 minutes late: the delivery sweeper is failing, throttled or capped (see its log group).',
      serviceMetric('DueSweepLagSeconds', fiveMinutes).with({ statistic: 'Maximum' }), { threshold: 300, above: true });
    // A sweeper that does not run at all publishes no lag: missing invocations are the alarm here.
    this.add('page', 'DueSweepNotRunning', 'The delivery sweeper has not run for 15 minutes (its schedule rule disabled or its invoke permission gone): parked webhook retries are not being re-queued.',
      functions.deliverySweeper.metricInvocations({ period: Duration.minutes(15), statistic: 'Sum' }), { threshold: 1, below: true });
    // SQS's own moves (redrive policy) are not in a dead-letter queue's NumberOfMessagesSent: they are
    // seen by depth (the bulk DLQ is only emptied by a replay) or by the consumer's own count.
    this.add('ticket', 'DeliveryQueueDeadLetters', 'A delivery message\'s receives kept breaking off (crashes, time-outs, throttles) until the queue moved it to the dead-letter queue: see the delivery function\'s log; its record says failed, re-drive it once the cause is fixed (docs/deploy.md).',
      serviceMetric('DeliveriesMovedByQueue', Duration.hours(1)), { threshold: 1 });
    // The bulk queue holds the only copy of an import's share (the lane has moved past it): a dead letter is a loss until replayed.
    this.add('page', 'BulkDeadLetters', `The bulk dead-letter queue holds an organization's large share the bulk fan-out gave up on (${queueSpecs.bulkQueue.deadLetter.maxReceiveCount} receives): its webhooks are not recorded. Fix the cause (BulkSharesFailed, the bulk fan-out's log), then \`crm events replay-bulk\` (docs/deploy.md).`,
      queues.bulkDlq.metricApproximateNumberOfMessagesVisible({ period: fiveMinutes, statistic: 'Maximum' }), { threshold: 1 });
    // Reported as a partial batch response, so the invocation succeeds: bulkFanoutErrors never sees it.
    this.add('page', 'BulkSharesFailed', 'The bulk fan-out failed to record and queue an organization\'s large share (it is received again, then dead-lettered): see the bulk fan-out\'s log for the cause.',
      serviceMetric('BulkSharesFailed', fiveMinutes), { threshold: 1 });
    this.add('page', 'BulkOldestMessageAge', 'The oldest bulk message is over 15 minutes old: an import\'s webhooks are late (the bulk fan-out is throttled, failing or not consuming).',
      queues.bulkQueue.metricApproximateAgeOfOldestMessage({ period: fiveMinutes, statistic: 'Maximum' }), { threshold: 15 * 60, above: true });
    // A re-drive that cannot read the kept items emits no backlog at all: its own count says so (5 of 15 runs).
    this.add('ticket', 'NoticesRedriveFailed', 'The delivery sweeper\'s re-drive of kept notices keeps failing (it cannot read them from the deliveries table): notices the notices queue refused are not handed over, and UnqueuedNoticesWaiting cannot see them. See the delivery sweeper\'s log, "re-drive failed".',
      serviceMetric('NoticesRedriveFailed', Duration.minutes(15)), { threshold: 5 });
    // A batch the lead notices' cap counter could not count: its leads went uncounted (one by one, or a summary of their own).
    this.add('ticket', 'NoticeCapFailed', 'The lead notices\' cap counter failed (the rateWindows table throttled or unavailable): those batches\' leads were mailed uncounted, one by one or in a summary of their own, and the window may mail more than its cap (docs/notifications.md "Bulk-safe: the cap"). See the fan-out\'s log, "cap counter failed".',
      serviceMetric('NoticeCapFailed', fiveMinutes), { threshold: 1 });
    // Notices the mailer could not send in all its tries (the mail server or SES refusing for hours): people were not told.
    this.add('ticket', 'NoticeDeadLetters', 'The notices dead-letter queue holds notices the mailer could not send after every try: see the mailer\'s log (its SMTP server or SES: sandbox, sending quota, identity) (docs/notifications.md).',
      queues.noticesDlq.metricApproximateNumberOfMessagesVisible({ period: fiveMinutes, statistic: 'Maximum' }), { threshold: 1 });
    // Notices the notices queue refused (the deliveries went on): kept and re-driven by the sweeper.
    this.add('ticket', 'NoticesNotQueued', 'The notices queue refused notices: they are kept and the delivery sweeper re-drives them every minute (docs/notifications.md); a log line "could not be queued nor kept" names one that was lost (the settings page shows the endpoint\'s state).',
      serviceMetric('NoticesNotQueued', fiveMinutes), { threshold: 1 });
    // The kept notices' backlog (the sweeper's every run) and the ones it set aside (docs/operations.md "Alarm: notices").
    this.add('ticket', 'UnqueuedNoticesWaiting', 'Notices kept while the notices queue refused them have waited over 15 minutes: the delivery sweeper cannot hand them over (docs/notifications.md "Once, never twice").',
      serviceMetric('UnqueuedNoticesOldestAgeSeconds', fiveMinutes).with({ statistic: 'Maximum' }), { threshold: 15 * 60, above: true });
    this.add('ticket', 'NoticesSetAside', 'The delivery sweeper set aside kept notices the notices queue refused for good 10 times, the last while it took others: they are not mailed until an operator hands them over.',
      serviceMetric('NoticesSetAside', fiveMinutes), { threshold: 1 });
    this.add('ticket', 'DigestDeadLetters', 'Daily digests could not be made for some organizations after 3 tries (the digest dead-letter queue): see the daily-digest function\'s log, "digest not made" (docs/notifications.md "The daily digest").',
      queues.digestDlq.metricApproximateNumberOfMessagesVisible({ period: fiveMinutes, statistic: 'Maximum' }), { threshold: 1 });
    // The queue keeps a job a day: a job 2 hours old is a digest late, long before one is lost.
    this.add('ticket', 'DigestOldestMessageAge', 'The oldest daily-digest job is over 2 hours old: digests are late (the daily digest is throttled, failing or not consuming its queue), and a job is lost after a day.',
      queues.digestQueue.metricApproximateAgeOfOldestMessage({ period: fiveMinutes, statistic: 'Maximum' }), { threshold: 2 * 3600, above: true });
    this.add('ticket', 'MailRejectionsHeld', 'The SMTP server refused more addresses within 10 minutes than dead mailboxes explain: the mailer stopped suppressing them and tries again (docs/notifications.md "An address refused for good"). Check the server and the sender\'s setup.',
      serviceMetric('MailRejectionsHeld', fiveMinutes), { threshold: 1 });
    this.add('ticket', 'MailFeedbackDeadLetters', 'SES bounce or complaint events could not be recorded: their addresses are not suppressed yet. See the mail-feedback function\'s log.',
      queues.mailFeedbackDlq.metricApproximateNumberOfMessagesVisible({ period: fiveMinutes, statistic: 'Maximum' }), { threshold: 1 });
    // Every stream consumer of the topology: how far behind its stream it is (records older than 24 h are lost).
    for (const name of streamConsumerNames()) {
      const { id, severity, minutes, description } = streamConsumers[name]!;
      this.add(severity, id, description, iteratorAge(functions[name]), { threshold: minutes * 60_000, above: true });
    }
    // Counter writes the statistics gave up on (never retried: an ADD retried after a lost answer would count twice).
    this.add('ticket', 'StatisticsUnwritten', 'Delivery statistics could not be written (the deliveries table refused a counter update): the endpoints\' charts undercount the hours logged; deliveries are unaffected. See the deliveryStatistics function\'s log (docs/deploy.md).',
      serviceMetric('StatisticsUnwritten', fiveMinutes), { threshold: 1 });
    // A share, not a count: 5 errors are nothing at 10,000 requests and everything at 10.
    this.add('page', 'Api5xxShare', `More than ${api5xxSharePercent}% of the API's answers were 5xx in 2 consecutive 5-minute periods (at least ${api5xxMinRequests} requests each).`,
      new cloudwatch.MathExpression({
        expression: `IF(requests >= ${api5xxMinRequests}, 100 * errors / requests, 0)`,
        usingMetrics: { requests: stage.metricCount({ period: fiveMinutes, statistic: 'Sum' }), errors: stage.metricServerError({ period: fiveMinutes, statistic: 'Sum' }) },
        period: fiveMinutes,
      }), { threshold: api5xxSharePercent, above: true, periods: 2 });
    this.add('page', 'ApiLatency', 'The API\'s p99 latency was over 3 s for 15 minutes.',
      stage.metricLatency({ period: fiveMinutes, statistic: 'p99' }), { threshold: 3000, above: true, periods: 3 });
    this.add('ticket', 'RateLimitFailOpen', 'The rate limiter could not reach its table and admitted requests unchecked (rateLimitFailMode "open").',
      serviceMetric('RateLimitFailOpen', fiveMinutes), { threshold: 1 });
    this.add('page', 'CircuitsOpened', `${circuitsOpenedThreshold} or more webhook endpoints' circuits opened in 15 minutes (their deliveries are re-scheduled, not attempted): check the delivery function's egress, DNS and TLS before blaming receivers; \`crm webhooks list\` shows each endpoint's circuit.`,
      serviceMetric('CircuitOpened'), { threshold: circuitsOpenedThreshold });
    this.add('page', 'DeliveryOutcomesUnwritten', 'Webhooks were delivered but their outcome could not be recorded (the deliveries table refused both the batch write and the per-record updates): their messages are received again and sent twice (same webhook-id). See the delivery function\'s log.',
      serviceMetric('DeliveryOutcomesUnwritten', fiveMinutes), { threshold: 1 });
    this.add('ticket', 'TenantMismatch', 'A stream record\'s organization attribute disagreed with its partition key: it was dropped, not delivered. Inspect the item the fan-out logged.',
      serviceMetric('TenantMismatch', fiveMinutes), { threshold: 1 });
    this.add('ticket', 'CaptchaUnavailable', 'A CAPTCHA could not be verified (provider down or slow, or an organization\'s secret rejected): publishable-key leads were refused with 503 (fail closed). See lead intake\'s log.',
      serviceMetric('CaptchaUnavailable', fiveMinutes), { threshold: 1 });
    // Lead billing (docs/leads.md "Billing"): money or usage a lead intake could not put right itself.
    this.add('ticket', 'LeadRefundFailed', 'A prepaid lead\'s client write failed and its wallet debit could not be refunded: refund by hand (lead intake log "could not refund a lead whose write failed": organization, micros, day; docs/deploy.md).',
      serviceMetric('LeadRefundFailed', fiveMinutes), { threshold: 1 });
    this.add('ticket', 'LeadUsageCountFailed', 'A lead\'s usage count (or its take-back) failed: the day\'s usage is off by the logged calls and micros (lead intake log; docs/deploy.md).',
      serviceMetric('LeadUsageCountFailed', fiveMinutes), { threshold: 1 });
    for (const [name, fn] of entries(functions)) {
      const severity: Severity = pagingFunctions.includes(name) ? 'page' : 'ticket';
      this.add(severity, `${name}Errors`, `The ${name} function is failing (unhandled errors or timeouts): see its log group.`,
        fn.metricErrors({ period: fiveMinutes }), { threshold: 5 });
      this.add(severity, `${name}Throttles`, `The ${name} function was refused concurrency: the account's Lambda concurrency is exhausted (docs/capacity.md).`,
        fn.metricThrottles({ period: fiveMinutes }), { threshold: 1 });
    }
    // On-demand tables throttle too: past twice their previous peak within 30 minutes, or at a hot partition.
    for (const [name, table] of entries(tables)) {
      this.add('ticket', `${name}TableThrottles`, `Requests to the ${name} table were throttled (reads or writes, 5 minutes): see docs/capacity.md for its partitions and peaks.`,
        new cloudwatch.MathExpression({
          expression: 'FILL(reads, 0) + FILL(writes, 0)',
          usingMetrics: { reads: table.metric('ReadThrottleEvents', { period: fiveMinutes, statistic: 'Sum' }), writes: table.metric('WriteThrottleEvents', { period: fiveMinutes, statistic: 'Sum' }) },
          period: fiveMinutes,
        }), { threshold: 1 });
    }
    // One failed run is below the Errors alarm's threshold, and its organizations get no digest that day.
    this.add('ticket', 'DigestJobsUnqueued', 'The daily digest\'s run could not queue some organizations\' jobs after 3 rounds: they get no digest today unless queued by hand (docs/notifications.md "The daily digest"). See the daily-digest function\'s log.',
      serviceMetric('DigestJobsUnqueued', fiveMinutes), { threshold: 1 });
  }

  /** An alarm on one period (unless `periods`), missing data = fine (`below`: missing = firing); `threshold` reached fires, or exceeded with `above`. */
  private add(severity: Severity, id: string, description: string, metric: cloudwatch.IMetric, opts: { threshold: number; above?: boolean; below?: boolean; periods?: number }): void {
    const alarm = new cloudwatch.Alarm(this, id, {
      alarmName: `${Stack.of(this).stackName}-${id}`,
      alarmDescription: `[${severity}] ${description} Runbook: ${runbookDoc}#${runbookSection(id)}`,
      metric,
      threshold: opts.threshold,
      evaluationPeriods: opts.periods ?? 1,
      comparisonOperator: opts.below ? cloudwatch.ComparisonOperator.LESS_THAN_THRESHOLD
        : opts.above ? cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD : cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
      treatMissingData: opts.below ? cloudwatch.TreatMissingData.BREACHING : cloudwatch.TreatMissingData.NOT_BREACHING,
    });
    alarm.addAlarmAction(new SnsAction(this.topics[severity]));
    alarm.addOkAction(new SnsAction(this.topics[severity]));
    this.alarms.push({ alarm, severity });
  }
}

/** A Powertools metric of the functions (namespace and `service` dimension shared with them). */
export function serviceMetric(metricName: string, period = Duration.minutes(15)): cloudwatch.Metric {
  return new cloudwatch.Metric({ namespace: metricsNamespace, metricName, dimensionsMap: { service: serviceName }, statistic: 'Sum', period });
}
