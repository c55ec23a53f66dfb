/**
 * The local SQS's fair queues, held to AWS's documented rule ("How Amazon SQS fair queues work"):
 * first the rule on plain values (each threshold at its edge), then the emulator itself, through
 * the SQS API, with fauxqs running in this process on 127.0.0.1.
 */
import { describe, it, expect, beforeAll, afterAll } from '@jest/globals';
import { SQSClient, CreateQueueCommand, SendMessageBatchCommand, SendMessageCommand, ReceiveMessageCommand, DeleteMessageCommand, type Message } from '@aws-sdk/client-sqs';
import { fairOrder, noisyTenants, MIN_NOISY_IN_FLIGHT, type TenantLoad } from '../../../lib/local/sqs-fair.js';
import { startSqsEmulator, localCredentials, type Emulator } from '../../../lib/local/emulators.js';

const loads = (entries: Record<string, Partial<TenantLoad>>) =>
  new Map(Object.entries(entries).map(([t, l]) => [t, { inFlight: 0, processingMs: 0, ...l }]));

describe('the fair-queue rule', () => {
  it('calls a tenant noisy by concurrency share only past 10% of the in-flight messages AND with at least 30 of them', () => {
    // 30 of 100 in flight: noisy.
    expect(noisyTenants(loads({ a: { inFlight: 30 }, b: { inFlight: 70 } }))).toEqual(new Set(['a', 'b']));
    // 29 in flight, all of them: not noisy (too few).
    expect(noisyTenants(loads({ a: { inFlight: MIN_NOISY_IN_FLIGHT - 1 } }))).toEqual(new Set());
    // 30 of 300 (exactly 10%): not noisy; 31 of 301: noisy.
    expect(noisyTenants(loads({ a: { inFlight: 30 }, ...Object.fromEntries(Array.from({ length: 270 }, (_, i) => [`q${i}`, { inFlight: 1 }])) }))).toEqual(new Set());
    expect(noisyTenants(loads({ a: { inFlight: 31 }, ...Object.fromEntries(Array.from({ length: 270 }, (_, i) => [`q${i}`, { inFlight: 1 }])) }))).toEqual(new Set(['a']));
  });

  it('calls a tenant noisy by processing-time share past 10% of the recent processing time, whatever its in-flight count', () => {
    const quiet = Object.fromEntries(Array.from({ length: 9 }, (_, i) => [`q${i}`, { processingMs: 100 }]));
    expect(noisyTenants(loads({ slow: { processingMs: 100, inFlight: 1 }, ...quiet }))).toEqual(new Set()); // exactly 10%
    expect(noisyTenants(loads({ slow: { processingMs: 101, inFlight: 1 }, ...quiet }))).toEqual(new Set(['slow']));
  });

  it('serves quiet tenants first in arrival order, then the noisy ones, the one with the fewest in flight first', () => {
    const ready = ['A1', 'B1', 'A2', 'q1', 'C1', 'B2', 'q2', 'A3'];
    const load = loads({ A: { inFlight: 50 }, B: { inFlight: 40 }, C: { inFlight: 1 }, q: { inFlight: 0 } });
    expect(fairOrder(ready, (m) => m.slice(0, 1), load)).toEqual(['q1', 'C1', 'q2', 'B1', 'B2', 'A1', 'A2', 'A3']);
  });

  it('leaves the order alone while nobody is noisy (a standard queue)', () => {
    const ready = ['A1', 'B1', 'A2'];
    expect(fairOrder(ready, (m) => m.slice(0, 1), loads({ A: { inFlight: 3 }, B: { inFlight: 3 } }))).toEqual(ready);
  });
});

describe('the local SQS emulator’s fair standard queues', () => {
  let emulator: Emulator;
  let sqs: SQSClient;
  beforeAll(async () => {
    emulator = await startSqsEmulator({});
    sqs = new SQSClient({ endpoint: emulator.endpoint, region: 'us-east-1', credentials: localCredentials, maxAttempts: 1 });
  });
  afterAll(async () => {
    sqs.destroy();
    await emulator.stop();
  });

  const sendAll = async (QueueUrl: string, group: string | undefined, count: number, tag: string) => {
    for (let i = 0; i < count; i += 10) {
      await sqs.send(new SendMessageBatchCommand({
        QueueUrl,
        Entries: Array.from({ length: Math.min(10, count - i) }, (_, n) => ({ Id: String(n), MessageBody: `${tag}${i + n}`, ...(group ? { MessageGroupId: group } : {}) })),
      }));
    }
  };
  const receive = async (QueueUrl: string, n: number): Promise<Message[]> => {
    const out: Message[] = [];
    while (out.length < n) {
      const { Messages = [] } = await sqs.send(new ReceiveMessageCommand({ QueueUrl, MaxNumberOfMessages: Math.min(10, n - out.length), WaitTimeSeconds: 0 }));
      if (Messages.length === 0) break;
      out.push(...Messages);
    }
    return out;
  };

  it('given one tenant with 30+ messages in flight and a backlog, a quiet tenant’s later messages are received first', async () => {
    const { QueueUrl } = await sqs.send(new CreateQueueCommand({ QueueName: `fair-${Date.now()}` }));
    await sendAll(QueueUrl!, 'org_import', 100, 'import-');
    const held = await receive(QueueUrl!, 40); // the importer's first 40, in flight
    expect(held.map((m) => m.Body)).toEqual(Array.from({ length: 40 }, (_, i) => `import-${i}`));
    await sqs.send(new SendMessageCommand({ QueueUrl, MessageBody: 'quiet-0', MessageGroupId: 'org_quiet' }));
    await sendAll(QueueUrl!, 'org_other', 3, 'other-');
    const next = await receive(QueueUrl!, 6);
    expect(next.map((m) => m.Body)).toEqual(['quiet-0', 'other-0', 'other-1', 'other-2', 'import-40', 'import-41']);
  });

  it('given a tenant that took most of the recent processing time, its messages stay behind a quiet tenant’s even with none in flight', async () => {
    const { QueueUrl } = await sqs.send(new CreateQueueCommand({ QueueName: `fair-done-${Date.now()}` }));
    await sendAll(QueueUrl!, 'org_a', 35, 'a-');
    const held = await receive(QueueUrl!, 31);
    await new Promise((r) => setTimeout(r, 50)); // org_a's 31 receipts are worked on for 50 ms
    for (const m of held) await sqs.send(new DeleteMessageCommand({ QueueUrl, ReceiptHandle: m.ReceiptHandle! }));
    await sqs.send(new SendMessageCommand({ QueueUrl, MessageBody: 'b-0', MessageGroupId: 'org_b' }));
    const next = await receive(QueueUrl!, 5);
    expect(next.map((m) => m.Body)).toEqual(['b-0', 'a-31', 'a-32', 'a-33', 'a-34']);
  });

  it('treats messages without a MessageGroupId as tenants of their own: arrival order', async () => {
    const { QueueUrl } = await sqs.send(new CreateQueueCommand({ QueueName: `fair-none-${Date.now()}` }));
    await sendAll(QueueUrl!, undefined, 45, 'm-');
    const got = await receive(QueueUrl!, 45);
    expect(got.map((m) => m.Body)).toEqual(Array.from({ length: 45 }, (_, i) => `m-${i}`));
  });
});
