/**
 * The local SQS is as strict as AWS about the 12 h visibility maximum: it counts from the receive,
 * so the request the old delivery code made (43 200 s, moments after the receive) is refused with
 * AWS's error, and what schedule.ts's visibilityLeftSeconds allows is accepted. fauxqs runs in
 * this process on 127.0.0.1; the clock of the strictness layer is injected.
 */
import { describe, it, expect, beforeAll, afterAll } from '@jest/globals';
import {
  SQSClient, CreateQueueCommand, SendMessageCommand, ReceiveMessageCommand, ChangeMessageVisibilityCommand, ChangeMessageVisibilityBatchCommand, type Message,
} from '@aws-sdk/client-sqs';
import { buildApp } from 'fauxqs';
import { enforceVisibilityLimit } from '../../../lib/local/sqs-strict.js';
import { startSqsEmulator, localCredentials, type Emulator } from '../../../lib/local/emulators.js';
import { visibilityLeftSeconds, MAX_VISIBILITY_SECONDS } from '../../../functions/core/delivery/schedule.js';

const client = (endpoint: string) => new SQSClient({ endpoint, region: 'us-east-1', credentials: localCredentials, maxAttempts: 1 });

async function receiveThree(sqs: SQSClient, name: string): Promise<{ queueUrl: string; messages: Message[] }> {
  const { QueueUrl } = await sqs.send(new CreateQueueCommand({ QueueName: name }));
  for (const body of ['a', 'b', 'c']) await sqs.send(new SendMessageCommand({ QueueUrl, MessageBody: body }));
  const { Messages = [] } = await sqs.send(new ReceiveMessageCommand({ QueueUrl, MaxNumberOfMessages: 10 }));
  expect(Messages).toHaveLength(3);
  return { queueUrl: QueueUrl!, messages: Messages };
}

const refusal = (error: unknown) => {
  const e = error as { name: string; message: string; $metadata: { httpStatusCode?: number } };
  return { name: e.name, status: e.$metadata.httpStatusCode, message: e.message };
};

describe('the local SQS’s visibility limit (strict like AWS)', () => {
  let clock = 1_700_000_000_000;
  let app: ReturnType<typeof buildApp>;
  let sqs: SQSClient;
  beforeAll(async () => {
    app = buildApp({ logger: false, defaultRegion: 'us-east-1' });
    enforceVisibilityLimit(app, () => clock);
    await app.listen({ port: 0, host: '127.0.0.1' });
    const { port } = app.server.address() as { port: number };
    sqs = client(`http://127.0.0.1:${port}`);
  });
  afterAll(async () => {
    sqs.destroy();
    await app.close();
  });

  it('refuses 43 200 s asked a few seconds after the receive, and accepts what is left', async () => {
    const { queueUrl, messages: [m] } = await receiveThree(sqs, 'strict-single');
    clock += 5_000;
    const change = (seconds: number) => sqs.send(new ChangeMessageVisibilityCommand({ QueueUrl: queueUrl, ReceiptHandle: m.ReceiptHandle, VisibilityTimeout: seconds }));
    const refused = await change(43_200).then(() => undefined, refusal);
    expect(refused).toEqual({ name: 'InvalidParameterValue', status: 400, message: expect.stringContaining('Total VisibilityTimeout for the message is beyond the limit [43200 seconds]') });
    await expect(change(43_196)).rejects.toMatchObject({ name: 'InvalidParameterValue' });
    await expect(change(43_195)).resolves.toBeDefined();
    // A later change still counts from the receive, not from the previous change.
    clock += 60_000;
    await expect(change(43_195)).rejects.toMatchObject({ name: 'InvalidParameterValue' });
    await expect(change(visibilityLeftSeconds(clock - 65_000, clock))).resolves.toBeDefined();
  });

  it('fails only the offending entries of a batch', async () => {
    const { queueUrl, messages } = await receiveThree(sqs, 'strict-batch');
    clock += 3_000;
    const out = await sqs.send(new ChangeMessageVisibilityBatchCommand({
      QueueUrl: queueUrl,
      Entries: messages.map((m, i) => ({ Id: `m${i}`, ReceiptHandle: m.ReceiptHandle, VisibilityTimeout: i === 1 ? 60 : MAX_VISIBILITY_SECONDS })),
    }));
    expect(out.Successful?.map((s) => s.Id)).toEqual(['m1']);
    expect(out.Failed?.map((f) => [f.Id, f.Code, f.SenderFault])).toEqual([['m0', 'InvalidParameterValue', true], ['m2', 'InvalidParameterValue', true]]);
    const all = await sqs.send(new ChangeMessageVisibilityBatchCommand({ QueueUrl: queueUrl, Entries: [{ Id: 'only', ReceiptHandle: messages[0].ReceiptHandle, VisibilityTimeout: MAX_VISIBILITY_SECONDS }] }));
    expect(all).toMatchObject({ Successful: [], Failed: [{ Id: 'only', Code: 'InvalidParameterValue' }] });
  });
});

describe('the local stack’s SQS emulator', () => {
  let emulator: Emulator;
  beforeAll(async () => {
    emulator = await startSqsEmulator({});
  });
  afterAll(async () => emulator.stop());

  it('has the strictness layer: the old delivery code’s 43 200 s right after a receive is refused', async () => {
    const sqs = client(emulator.endpoint);
    const { queueUrl, messages: [m] } = await receiveThree(sqs, 'wired');
    const receivedAt = Date.now();
    await new Promise((r) => setTimeout(r, 20)); // the attempt's own time (the old code lost it)
    await expect(sqs.send(new ChangeMessageVisibilityCommand({ QueueUrl: queueUrl, ReceiptHandle: m.ReceiptHandle, VisibilityTimeout: MAX_VISIBILITY_SECONDS })))
      .rejects.toMatchObject({ name: 'InvalidParameterValue', $metadata: { httpStatusCode: 400 } });
    await expect(sqs.send(new ChangeMessageVisibilityCommand({ QueueUrl: queueUrl, ReceiptHandle: m.ReceiptHandle, VisibilityTimeout: visibilityLeftSeconds(receivedAt, Date.now()) })))
      .resolves.toBeDefined();
    sqs.destroy();
  });
});
