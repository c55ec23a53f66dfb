/**
 * The stage's CloudWatch dashboard, one row per part of the topology (lib/topology.ts): the API,
 * every function, every queue, every table, the delivery metrics, and the alarms' states. A
 * function, queue or table added to the topology gets its row with no change here.
 */
import { Duration } from 'aws-cdk-lib';
import type * as apigw from 'aws-cdk-lib/aws-apigateway';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import type * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import type * as lambda from 'aws-cdk-lib/aws-lambda';
import type * as sqs from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import type { FunctionName, QueueName, TableName } from '../topology.js';
import { iteratorAge, serviceMetric, streamConsumerNames } from './crm-alarms.js';

export interface CrmDashboardProps {
  stage: string;
  tables: Record<TableName, dynamodb.Table>;
  queues: Record<QueueName, sqs.Queue>;
  functions: Record<FunctionName, lambda.Function>;
  api: apigw.RestApi;
  alarms: cloudwatch.IAlarm[];
}

const entries = <K extends string, V>(o: Record<K, V>) => Object.entries(o) as [K, V][];
const period = Duration.minutes(5);
const graph = (title: string, left: cloudwatch.IMetric[], width = 6) => new cloudwatch.GraphWidget({ title, left, width, height: 6 });

export class CrmDashboard extends Construct {
  readonly dashboard: cloudwatch.Dashboard;

  constructor(scope: Construct, id: string, { stage, tables, queues, functions, api, alarms }: CrmDashboardProps) {
    super(scope, id);
    const apiStage = api.deploymentStage;
    this.dashboard = new cloudwatch.Dashboard(this, 'Dashboard', { dashboardName: `crm-${stage}`, defaultInterval: Duration.hours(3) });
    this.dashboard.addWidgets(
      new cloudwatch.AlarmStatusWidget({ title: 'Alarms', alarms, width: 24, height: 4 }),
    );
    this.dashboard.addWidgets(
      graph('API requests', [apiStage.metricCount({ period, statistic: 'Sum' })]),
      graph('API 5xx share (%)', [new cloudwatch.MathExpression({
        expression: 'IF(requests > 0, 100 * errors / requests, 0)', label: '5xx %', period,
        usingMetrics: { requests: apiStage.metricCount({ period, statistic: 'Sum' }), errors: apiStage.metricServerError({ period, statistic: 'Sum' }) },
      })]),
      graph('API 4xx', [apiStage.metricClientError({ period, statistic: 'Sum' })]),
      graph('API latency p50 / p99', [apiStage.metricLatency({ period, statistic: 'p50' }), apiStage.metricLatency({ period, statistic: 'p99' })]),
    );
    for (const [name, fn] of entries(functions)) {
      this.dashboard.addWidgets(
        graph(`${name}: invocations`, [fn.metricInvocations({ period })]),
        graph(`${name}: errors / throttles`, [fn.metricErrors({ period }), fn.metricThrottles({ period })]),
        graph(`${name}: concurrency`, [fn.metric('ConcurrentExecutions', { period, statistic: 'Maximum' })]),
        graph(`${name}: duration p99`, [fn.metricDuration({ period, statistic: 'p99' })]),
      );
    }
    // Every stream consumer's lag behind its stream (its alarm: crm-alarms.ts streamConsumers).
    this.dashboard.addWidgets(...streamConsumerNames().map((name) => graph(`${name}: iterator age (max)`, [iteratorAge(functions[name])])),
      graph('deliveries: attempts / failures', [serviceMetric('DeliveryAttempts', period), serviceMetric('DeliveryFailures', period)]),
      graph('circuits opened / retries parked', [serviceMetric('CircuitOpened', period), serviceMetric('DeliveryRetriesParked', period)]),
      // Deferred, not attempted: an endpoint's own rate limit at work (no alarm: a customer's choice), or its open circuit.
      graph('deliveries deferred: rate limit / circuit', [serviceMetric('DeliveriesThrottled', period), serviceMetric('DeliveriesDeferredByCircuit', period)]));
    for (const [name, queue] of entries(queues)) {
      this.dashboard.addWidgets(
        graph(`${name}: sent`, [queue.metricNumberOfMessagesSent({ period, statistic: 'Sum' })], 8),
        graph(`${name}: visible / in flight`, [queue.metricApproximateNumberOfMessagesVisible({ period, statistic: 'Maximum' }), queue.metricApproximateNumberOfMessagesNotVisible({ period, statistic: 'Maximum' })], 8),
        graph(`${name}: oldest message age (s)`, [queue.metricApproximateAgeOfOldestMessage({ period, statistic: 'Maximum' })], 8),
      );
    }
    for (const [name, table] of entries(tables)) {
      this.dashboard.addWidgets(
        graph(`${name}: consumed RCU / WCU`, [table.metricConsumedReadCapacityUnits({ period, statistic: 'Sum' }), table.metricConsumedWriteCapacityUnits({ period, statistic: 'Sum' })], 12),
        graph(`${name}: throttle events`, [table.metric('ReadThrottleEvents', { period, statistic: 'Sum' }), table.metric('WriteThrottleEvents', { period, statistic: 'Sum' })], 12),
      );
    }
  }
}
