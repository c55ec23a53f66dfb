/**
 * Plays Lambda's DynamoDB Streams event-source mapping: shards read in order (parents before
 * children), batches of up to `batchSize`, partial batch responses (resume from the first failed
 * record), bisect on error, a bounded retry count, then the batch's description goes to the
 * on-failure queue and the shard moves on; that is said in one line (`onError`, a `GaveUp` naming the
 * records and each failed attempt's reason), as Lambda's destination record names no cause.
 *
 * ParallelizationFactor (docs/capacity.md "Fan-out lanes"): each shard's records are dealt to
 * `parallelizationFactor` lanes by a hash of their partition key, as Lambda does; a lane runs one
 * batch at a time, in order, and the lanes run at once. Every CRM item of an organization shares
 * its partition key, so one organization's bulk import fills one lane while the others flow.
 *
 * The checkpoint of a shard is the last record before which every record is done (whatever lane
 * it ran in), written to a file: a restart resumes after it, so nothing is lost; records done in
 * other lanes past it run again (the fan-out is idempotent: docs/webhooks.md).
 */
import { createHash } from 'node:crypto';
import { readFileSync, writeFileSync, renameSync } from 'node:fs';
import {
  DynamoDBStreamsClient, DescribeStreamCommand, GetShardIteratorCommand, GetRecordsCommand,
  ExpiredIteratorException, TrimmedDataAccessException, type Shard, type _Record,
} from '@aws-sdk/client-dynamodb-streams';
import { SendMessageCommand, type SQSClient } from '@aws-sdk/client-sqs';
import type { DynamoDBStreamEvent, DynamoDBRecord, DynamoDBBatchResponse } from 'aws-lambda';
import type { FilterPattern } from '../topology.js';
import { matchesFilter } from './stream-filter.js';

/**
 * A Streams API record in the shape Lambda's event source hands the fan-out handler: the poller
 * plays that event source, so the handler runs on what it gets on AWS.
 */
export function toLambdaRecord(r: _Record, streamArn: string): DynamoDBRecord {
  const d = r.dynamodb ?? {};
  return {
    eventID: r.eventID,
    eventName: r.eventName as DynamoDBRecord['eventName'],
    eventVersion: r.eventVersion ?? '1.1',
    eventSource: 'aws:dynamodb',
    awsRegion: r.awsRegion ?? 'us-east-1',
    eventSourceARN: streamArn,
    ...(r.userIdentity ? { userIdentity: { type: r.userIdentity.Type, principalId: r.userIdentity.PrincipalId } } : {}),
    dynamodb: {
      ApproximateCreationDateTime: d.ApproximateCreationDateTime ? Math.floor(new Date(d.ApproximateCreationDateTime).getTime() / 1000) : undefined,
      Keys: d.Keys as never,
      NewImage: d.NewImage as never,
      OldImage: d.OldImage as never,
      SequenceNumber: d.SequenceNumber,
      SizeBytes: d.SizeBytes,
      StreamViewType: d.StreamViewType as never,
    },
  };
}

/**
 * Pause after a poll that found nothing: short while the stream was busy within the last second,
 * so a record written just after a poll waits at most this long (a healthy event is delivered in well under a
 * second: docs/architecture.md#fair-delivery); once it has been idle longer, doubling up to IDLE_MAX_DELAY_MS (Lambda polls a shard
 * about 4 times a second). An empty GetRecords costs DynamoDB Local ~1.5 ms of CPU: polling two
 * idle tables every 20 ms kept a fifth of a core busy, taken from the requests being served or
 * measured (docs/benchmarks.md); a steady trickle (a lead every few hundred ms) keeps the short pause.
 */
const IDLE_DELAY_MS = 20;
const IDLE_GRACE_MS = 1000;
const IDLE_MAX_DELAY_MS = 100;
const SHARD_REFRESH_MS = 1000;
/** Records read ahead of the lanes per shard, per lane: reading stops there until lanes catch up. */
const READ_AHEAD_BATCHES = 2;

/** The lane of a partition key (Lambda hashes the partition key; any stable hash keeps per-key order). */
export function laneOf(partitionKey: string, lanes: number): number {
  return lanes <= 1 ? 0 : createHash('md5').update(partitionKey).digest().readUInt32BE(0) % lanes;
}

/** A batch given up on: its line is the message alone (no stack: nothing threw). */
export class GaveUp extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'GaveUp';
    this.stack = message;
  }
}

/** Each distinct reason once, in order, with how many attempts it failed. */
const tally = (reasons: string[]) => [...reasons.reduce((m, r) => m.set(r, (m.get(r) ?? 0) + 1), new Map<string, number>())]
  .map(([reason, times]) => (times > 1 ? `${reason} (${times} times)` : reason)).join('; ');

export type StreamHandler = (event: DynamoDBStreamEvent) => Promise<DynamoDBBatchResponse | void>;

export interface StreamPollerOptions {
  streams: DynamoDBStreamsClient;
  streamArn: string;
  handler: StreamHandler;
  batchSize: number;
  /** Concurrent batches per shard (Lambda's ParallelizationFactor, 1..10), lanes keyed by partition key. */
  parallelizationFactor?: number;
  /** The table's partition key attribute (what the lanes hash). */
  partitionKey?: string;
  maxRetries: number;
  bisectOnError: boolean;
  /** Lambda's event filtering: records not matching it are skipped (checkpointed, never handed to the function). */
  filter?: FilterPattern;
  /** Where exhausted batches are described (Lambda's on-failure destination). */
  onFailure?: { sqs: SQSClient; queueUrl: string };
  /** JSON file of shardId → last processed sequence number. */
  checkpointFile?: string;
  /** Pause after an empty poll; after `idleGraceMs` without records it doubles, up to `idleMaxDelayMs`. */
  idleDelayMs?: number;
  idleGraceMs?: number;
  idleMaxDelayMs?: number;
  /** Told each pause after an empty poll (tests watch the backoff). */
  onIdlePause?: (ms: number) => void;
  onError?: (error: unknown) => void;
}

interface Pending { record: DynamoDBRecord; done: boolean }
interface ShardState {
  shard: Shard;
  iterator?: string;
  /** No more records to read (a closed shard read to its end). */
  drained: boolean;
  /** Drained and every record read is done: its children may start. */
  done: boolean;
  /** Records read and not yet checkpointed, in stream order. */
  window: Pending[];
  /** Per lane: records waiting for it, and whether a batch of it is running. */
  lanes: { waiting: Pending[]; running: boolean }[];
}

export class StreamPoller {
  private active = false;
  private loop?: Promise<void>;
  private shards = new Map<string, ShardState>();
  private checkpoints: Record<string, string> = {};
  private wake?: () => void;
  private shardsReadAt = 0;
  /** Lane batches under way. */
  private readonly running = new Set<Promise<void>>();

  constructor(private readonly options: StreamPollerOptions) {
    if (options.checkpointFile) {
      try {
        this.checkpoints = JSON.parse(readFileSync(options.checkpointFile, 'utf8'));
      } catch {
        this.checkpoints = {};
      }
    }
  }

  start(): void {
    if (this.active) return;
    this.active = true;
    this.loop = this.run();
  }

  /** Stops reading; the lane batches under way finish first. */
  async stop(): Promise<void> {
    this.active = false;
    this.wake?.();
    await this.loop;
    while (this.running.size > 0) await Promise.all(this.running);
  }

  private get lanes(): number {
    return Math.max(1, Math.min(10, this.options.parallelizationFactor ?? 1));
  }

  private async run(): Promise<void> {
    const first = this.options.idleDelayMs ?? IDLE_DELAY_MS;
    const max = Math.max(first, this.options.idleMaxDelayMs ?? IDLE_MAX_DELAY_MS);
    const grace = this.options.idleGraceMs ?? IDLE_GRACE_MS;
    let idle = first;
    let idleSince: number | undefined;
    while (this.active) {
      let progressed = false;
      try {
        // New shards appear rarely (a split every few hours on AWS): look for them once a second, not every poll.
        if (Date.now() - this.shardsReadAt >= SHARD_REFRESH_MS || this.readyShards().length === 0) {
          await this.refreshShards();
          this.shardsReadAt = Date.now();
        }
        for (const state of this.readyShards()) {
          if (!this.active) break;
          progressed = (await this.pollShard(state)) || progressed;
          this.dispatch(state);
        }
      } catch (error) {
        this.options.onError?.(error);
      }
      if (progressed) {
        idle = first;
        idleSince = undefined;
      } else if (this.active) {
        idleSince ??= Date.now();
        const backingOff = Date.now() - idleSince >= grace;
        const pause = backingOff ? idle : first;
        this.options.onIdlePause?.(pause);
        await this.sleep(pause);
        if (backingOff) idle = Math.min(max, idle * 2);
      }
    }
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(resolve, ms);
      this.wake = () => (clearTimeout(timer), resolve());
    });
  }

  private async refreshShards(): Promise<void> {
    let exclusiveStartShardId: string | undefined;
    do {
      const { StreamDescription } = await this.options.streams.send(
        new DescribeStreamCommand({ StreamArn: this.options.streamArn, ExclusiveStartShardId: exclusiveStartShardId }),
      );
      for (const shard of StreamDescription?.Shards ?? []) {
        const known = this.shards.get(shard.ShardId!);
        if (known) known.shard = shard;
        else this.shards.set(shard.ShardId!, { shard, drained: false, done: false, window: [], lanes: Array.from({ length: this.lanes }, () => ({ waiting: [], running: false })) });
      }
      exclusiveStartShardId = StreamDescription?.LastEvaluatedShardId;
    } while (exclusiveStartShardId);
  }

  /** Shards whose parent is fully read (or unknown, i.e. trimmed away): records stay in order. */
  private readyShards(): ShardState[] {
    return [...this.shards.values()].filter((s) => {
      if (s.done) return false;
      const parent = s.shard.ParentShardId ? this.shards.get(s.shard.ParentShardId) : undefined;
      return !parent || parent.done;
    });
  }

  /** Reads one page into the lanes, unless the shard is drained or its lanes are full; true if it read records. */
  private async pollShard(state: ShardState): Promise<boolean> {
    const shardId = state.shard.ShardId!;
    if (state.drained) return false;
    if (state.window.length >= this.options.batchSize * READ_AHEAD_BATCHES * this.lanes) return false;
    if (!state.iterator) {
      const after = this.checkpoints[shardId];
      const { ShardIterator } = await this.options.streams.send(new GetShardIteratorCommand({
        StreamArn: this.options.streamArn,
        ShardId: shardId,
        ShardIteratorType: after ? 'AFTER_SEQUENCE_NUMBER' : 'TRIM_HORIZON',
        SequenceNumber: after,
      }));
      state.iterator = ShardIterator;
    }
    let records: _Record[];
    let next: string | undefined;
    try {
      const out = await this.options.streams.send(new GetRecordsCommand({ ShardIterator: state.iterator, Limit: this.options.batchSize }));
      records = out.Records ?? [];
      next = out.NextShardIterator;
    } catch (error) {
      // DynamoDB Local sometimes refuses an iterator taken on a still-empty shard once records
      // arrive (TrimmedDataAccessException); a fresh iterator from the checkpoint reads them.
      if (error instanceof ExpiredIteratorException || error instanceof TrimmedDataAccessException) {
        state.iterator = undefined;
        return false;
      }
      throw error;
    }
    const keyName = this.options.partitionKey ?? 'pk';
    for (const r of records) {
      const record = toLambdaRecord(r, this.options.streamArn);
      const skipped = this.options.filter !== undefined && !matchesFilter(this.options.filter, record);
      const pending = { record, done: skipped };
      state.window.push(pending);
      if (skipped) continue;
      const key = r.dynamodb?.Keys?.[keyName];
      state.lanes[laneOf(JSON.stringify(key ?? null), this.lanes)].waiting.push(pending);
    }
    // An empty page is not the end of an open shard (DynamoDB Streams may answer empty before it):
    // read on with the next iterator; only a missing one means a closed shard, fully read.
    state.iterator = next;
    if (!next) state.drained = true;
    this.settle(state);
    return records.length > 0;
  }

  /** Starts a batch on every idle lane that has records waiting. */
  private dispatch(state: ShardState): void {
    for (const lane of state.lanes) {
      if (lane.running || lane.waiting.length === 0) continue;
      const batch = lane.waiting.splice(0, this.options.batchSize);
      lane.running = true;
      const run = this.deliver(state.shard.ShardId!, batch.map((p) => p.record))
        .then(() => {
          for (const p of batch) p.done = true;
          return true;
        }, (error: unknown) => {
          // Only the on-failure send throws (the handler's errors are retried inside): the batch
          // runs again, ahead of its lane's later records, at the main loop's next pass.
          lane.waiting.unshift(...batch);
          this.options.onError?.(error);
          return false;
        })
        .then((ok) => {
          lane.running = false;
          this.running.delete(run);
          this.settle(state);
          if (ok) this.dispatch(state);
          this.wake?.();
        });
      this.running.add(run);
    }
  }

  /** Moves the shard's checkpoint past the records done in stream order (whatever lane ran them). */
  private settle(state: ShardState): void {
    let last: DynamoDBRecord | undefined;
    while (state.window.length > 0 && state.window[0].done) last = state.window.shift()!.record;
    if (last) this.checkpoint(state.shard.ShardId!, last);
    if (state.drained && state.window.length === 0) state.done = true;
  }

  /**
   * Runs one lane's batch to completion the way Lambda does; returns when every record is handled
   * or given up (the caller then marks them done for the checkpoint).
   */
  private async deliver(shardId: string, batch: DynamoDBRecord[]): Promise<void> {
    let pending = batch;
    let attempts = 0;
    let size = pending.length;
    const reasons: string[] = [];
    while (pending.length > 0) {
      const slice = pending.slice(0, size);
      const { failedAt, reason } = await this.invoke(slice);
      if (failedAt === -1) {
        pending = pending.slice(slice.length);
        size = pending.length;
        attempts = 0;
        reasons.length = 0;
        continue;
      }
      pending = pending.slice(failedAt);
      attempts += 1;
      reasons.push(reason);
      if (attempts > this.options.maxRetries) {
        const failed = pending.slice(0, Math.max(1, Math.min(size, pending.length)));
        await this.sendToOnFailure(shardId, failed, reasons);
        pending = pending.slice(failed.length);
        size = pending.length;
        attempts = 0;
        reasons.length = 0;
        continue;
      }
      if (this.options.bisectOnError && failedAt === 0 && size > 1) size = Math.ceil(size / 2);
      else size = Math.min(size, pending.length);
    }
  }

  /**
   * `failedAt`: -1 when the whole slice succeeded, else the index of the first failed record;
   * `reason`: what failed it (the handler's error, or the record its partial batch response named).
   */
  private async invoke(slice: DynamoDBRecord[]): Promise<{ failedAt: number; reason: string }> {
    try {
      const response = await this.options.handler({ Records: slice });
      const failures = new Set((response?.batchItemFailures ?? []).map((f) => f.itemIdentifier));
      if (failures.size === 0) return { failedAt: -1, reason: '' };
      const index = slice.findIndex((r) => failures.has(r.dynamodb!.SequenceNumber!));
      // An unknown identifier fails the whole batch, as on Lambda.
      return { failedAt: index === -1 ? 0 : index, reason: `batchItemFailures from ${index === -1 ? `unknown ${[...failures].join(',')}` : slice[index].dynamodb!.SequenceNumber}` };
    } catch (error) {
      this.options.onError?.(error);
      return { failedAt: 0, reason: `error: ${error instanceof Error ? error.message : String(error)}` };
    }
  }

  private checkpoint(shardId: string, record: DynamoDBRecord): void {
    this.checkpoints[shardId] = record.dynamodb!.SequenceNumber!;
    if (!this.options.checkpointFile) return;
    const tmp = `${this.options.checkpointFile}.tmp`;
    writeFileSync(tmp, JSON.stringify(this.checkpoints));
    renameSync(tmp, this.options.checkpointFile);
  }

  /**
   * Describes the exhausted records on the on-failure queue, and says so: Lambda's destination
   * record names no cause, so the line (with each attempt's reason) is what an operator finds.
   */
  private async sendToOnFailure(shardId: string, records: DynamoDBRecord[], reasons: string[]): Promise<void> {
    const first = records[0].dynamodb!;
    const last = records[records.length - 1].dynamodb!;
    // The shape of Lambda's on-failure record for stream sources (abridged). A send that fails
    // throws: the batch runs again (dispatch), and this line is written once it is sent.
    await this.options.onFailure?.sqs.send(new SendMessageCommand({
      QueueUrl: this.options.onFailure.queueUrl,
      MessageBody: JSON.stringify({
        requestContext: { condition: 'RetryAttemptsExhausted', approximateInvokeCount: this.options.maxRetries + 1 },
        timestamp: new Date().toISOString(),
        DDBStreamBatchInfo: {
          shardId,
          startSequenceNumber: first.SequenceNumber,
          endSequenceNumber: last.SequenceNumber,
          batchSize: records.length,
          streamArn: this.options.streamArn,
        },
      }),
    }));
    this.options.onError?.(new GaveUp(`${records.length} record(s) ${first.SequenceNumber}..${last.SequenceNumber} of shard ${shardId} `
      + `${this.options.onFailure ? 'sent to the on-failure queue' : 'skipped (no on-failure queue)'} after ${reasons.length} failed attempts: ${tally(reasons)}`));
  }
}
