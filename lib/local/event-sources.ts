/**
 * Lambda's event-source mappings, played by pollers: one per stream or queue a function of the
 * topology reads, each invoking the function's real handler with a Lambda-shaped batch.
 */
import path from 'node:path';
import type { DynamoDBStreamsClient } from '@aws-sdk/client-dynamodb-streams';
import type { SQSClient } from '@aws-sdk/client-sqs';
import { functions, tables, type FunctionSpec } from '../topology.js';
import type { Provisioned } from './provision.js';
import { StreamPoller } from './stream-poller.js';
import { QueuePoller } from './queue-poller.js';
import { ScheduleTimer } from './schedule-timer.js';
import { lambdaContext } from './lambda-context.js';

export type AnyHandler = (event: unknown, context: unknown) => Promise<unknown>;

/** SQS pollers per queue at most, whatever the function's maximum concurrency (one machine). */
const LOCAL_MAX_CONCURRENCY = 4;

export function startEventSources(input: {
  handlers: Record<string, AnyHandler>;
  provisioned: Provisioned;
  streams: DynamoDBStreamsClient;
  sqs: SQSClient;
  /** Where stream checkpoints are kept across restarts. */
  dir: string;
  onError: (where: string) => (error: unknown) => void;
  /** A schedule source's period, by default its rate (tests compress it). */
  scheduleIntervalMs?: (rateMinutes: number) => number;
}): { stop(): Promise<void> } {
  const { handlers, provisioned, onError } = input;
  const pollers: { start(): void; stop(): Promise<void> }[] = [];
  for (const [name, spec] of Object.entries(functions) as [string, FunctionSpec][]) {
    const invoke = (event: unknown) => handlers[name](event, lambdaContext(name, spec.timeoutSeconds));
    for (const source of spec.events) {
      if (source.kind === 'schedule') {
        pollers.push(new ScheduleTimer({
          name,
          intervalMs: input.scheduleIntervalMs?.(source.rateMinutes) ?? source.rateMinutes * 60_000,
          handler: invoke as never,
          onError: onError(`${name} (schedule)`),
        }));
        continue;
      }
      pollers.push(source.kind === 'stream'
        ? new StreamPoller({
          streams: input.streams,
          streamArn: provisioned.streams[source.table]!,
          handler: invoke as never,
          batchSize: source.batchSize,
          parallelizationFactor: source.parallelizationFactor,
          partitionKey: tables[source.table].partitionKey.name,
          maxRetries: source.maxRetries,
          bisectOnError: source.bisectOnError,
          ...(source.filter ? { filter: source.filter } : {}),
          ...(source.onFailure ? { onFailure: { sqs: input.sqs, queueUrl: provisioned.queues[source.onFailure] } } : {}),
          checkpointFile: path.join(input.dir, `checkpoint-${name}-${source.table}.json`),
          onError: onError(`${name} (${source.table} stream)`),
        })
        : new QueuePoller({
          sqs: input.sqs,
          queueUrl: provisioned.queues[source.queue],
          queueArn: provisioned.queueArns[source.queue],
          handler: invoke as never,
          batchSize: source.batchSize,
          concurrency: Math.min(source.maxConcurrency, LOCAL_MAX_CONCURRENCY),
          onError: onError(`${name} (${source.queue} queue)`),
        }));
    }
  }
  for (const poller of pollers) poller.start();
  return { stop: async () => void (await Promise.all(pollers.map((p) => p.stop()))) };
}
