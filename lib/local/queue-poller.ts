/**
 * Plays Lambda's SQS event-source mapping: receive a batch, invoke, delete what succeeded, leave
 * `batchItemFailures` in the queue (visible again when their visibility timeout — possibly set by
 * the handler with ChangeMessageVisibility — runs out). The queue's redrive policy moves a message
 * received maxReceiveCount times to its dead-letter queue, exactly as on AWS.
 */
import { ReceiveMessageCommand, DeleteMessageBatchCommand, type SQSClient, type Message } from '@aws-sdk/client-sqs';
import type { SQSEvent, SQSRecord, SQSBatchResponse, SQSMessageAttributes } from 'aws-lambda';

export type QueueHandler = (event: SQSEvent) => Promise<SQSBatchResponse | void>;

export interface QueuePollerOptions {
  sqs: SQSClient;
  queueUrl: string;
  queueArn: string;
  handler: QueueHandler;
  batchSize: number;
  /** Batches processed at once (Lambda's maximum concurrency). */
  concurrency?: number;
  waitTimeSeconds?: number;
  onError?: (error: unknown) => void;
}

export class QueuePoller {
  private running = false;
  private loops: Promise<void>[] = [];
  private readonly abort = new AbortController();

  constructor(private readonly options: QueuePollerOptions) {}

  start(): void {
    if (this.running) return;
    this.running = true;
    this.loops = Array.from({ length: this.options.concurrency ?? 1 }, () => this.run());
  }

  /** Stops receiving; an in-flight batch finishes first. */
  async stop(): Promise<void> {
    this.running = false;
    this.abort.abort();
    await Promise.all(this.loops);
  }

  private async run(): Promise<void> {
    while (this.running) {
      let messages: Message[] = [];
      try {
        const out = await this.options.sqs.send(
          new ReceiveMessageCommand({
            QueueUrl: this.options.queueUrl,
            MaxNumberOfMessages: this.options.batchSize,
            WaitTimeSeconds: this.options.waitTimeSeconds ?? 1,
            MessageSystemAttributeNames: ['All'],
            MessageAttributeNames: ['All'],
          }),
          { abortSignal: this.abort.signal },
        );
        messages = out.Messages ?? [];
      } catch (error) {
        if (!this.running) break;
        this.options.onError?.(error);
        await new Promise((r) => setTimeout(r, 500));
        continue;
      }
      if (messages.length > 0) await this.process(messages);
    }
  }

  private async process(messages: Message[]): Promise<void> {
    const records = messages.map((m) => this.toRecord(m));
    let failed: Set<string>;
    try {
      const response = await this.options.handler({ Records: records });
      failed = new Set((response?.batchItemFailures ?? []).map((f) => f.itemIdentifier));
    } catch (error) {
      this.options.onError?.(error);
      return; // the whole batch failed: nothing deleted
    }
    const done = messages.filter((m) => !failed.has(m.MessageId!));
    if (done.length === 0) return;
    try {
      const out = await this.options.sqs.send(new DeleteMessageBatchCommand({
        QueueUrl: this.options.queueUrl,
        Entries: done.map((m, i) => ({ Id: String(i), ReceiptHandle: m.ReceiptHandle! })),
      }));
      if (out.Failed?.length) this.options.onError?.(new Error(`DeleteMessageBatch failed for ${out.Failed.length} message(s)`));
    } catch (error) {
      this.options.onError?.(error);
    }
  }

  private toRecord(m: Message): SQSRecord {
    const attributes: SQSMessageAttributes = {};
    for (const [name, a] of Object.entries(m.MessageAttributes ?? {})) {
      attributes[name] = { dataType: a.DataType!, stringValue: a.StringValue, stringListValues: [], binaryListValues: [] };
    }
    return {
      messageId: m.MessageId!,
      receiptHandle: m.ReceiptHandle!,
      body: m.Body ?? '',
      attributes: {
        ApproximateReceiveCount: m.Attributes?.ApproximateReceiveCount ?? '1',
        SentTimestamp: m.Attributes?.SentTimestamp ?? String(Date.now()),
        SenderId: m.Attributes?.SenderId ?? 'local',
        ApproximateFirstReceiveTimestamp: m.Attributes?.ApproximateFirstReceiveTimestamp ?? String(Date.now()),
      },
      messageAttributes: attributes,
      md5OfBody: m.MD5OfBody ?? '',
      eventSource: 'aws:sqs',
      eventSourceARN: this.options.queueArn,
      awsRegion: 'us-east-1',
    };
  }
}
