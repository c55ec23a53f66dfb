/**
 * The local SQS takes the message bodies AWS takes (lib/local/sqs-characters.ts): a character past
 * U+FFFF, an emoji in a lead's name, is queued and read back whole, one message or a batch; what
 * SQS refuses is still refused. fauxqs runs in this process on 127.0.0.1.
 */
import { describe, it, expect, beforeAll, afterAll } from '@jest/globals';
import { SQSClient, CreateQueueCommand, SendMessageCommand, SendMessageBatchCommand, ReceiveMessageCommand } from '@aws-sdk/client-sqs';
import { startSqsEmulator, localCredentials, type Emulator } from '../../../lib/local/emulators.js';
import { OUTSIDE_SQS_CHARACTERS } from '../../../lib/local/sqs-characters.js';

let emulator: Emulator;
let sqs: SQSClient;
let queueUrl: string;
beforeAll(async () => {
  emulator = await startSqsEmulator({});
  sqs = new SQSClient({ endpoint: emulator.endpoint, region: 'us-east-1', credentials: localCredentials, maxAttempts: 1, useQueueUrlAsEndpoint: false });
  ({ QueueUrl: queueUrl } = (await sqs.send(new CreateQueueCommand({ QueueName: 'characters' }))) as { QueueUrl: string });
});
afterAll(async () => {
  sqs.destroy();
  await emulator.stop();
});

const body = JSON.stringify({ kind: 'lead.created', data: { name: '💧'.repeat(3) + ' Plumbing', note: 'Zoë 𝄞 \u{10FFFF}' } });

async function receiveAll(): Promise<string[]> {
  const { Messages = [] } = await sqs.send(new ReceiveMessageCommand({ QueueUrl: queueUrl, MaxNumberOfMessages: 10 }));
  return Messages.map((m) => m.Body!);
}

describe('the local SQS’s message characters (as AWS)', () => {
  it('queues a body with characters past U+FFFF, alone and in a batch, and gives it back unchanged', async () => {
    await sqs.send(new SendMessageCommand({ QueueUrl: queueUrl, MessageBody: body }));
    const batch = await sqs.send(new SendMessageBatchCommand({ QueueUrl: queueUrl, Entries: [{ Id: 'a', MessageBody: body }, { Id: 'b', MessageBody: 'plain' }] }));
    expect(batch.Failed ?? []).toEqual([]);
    expect((await receiveAll()).sort()).toEqual([body, body, 'plain'].sort());
  });

  it('still refuses what SQS refuses: a lone surrogate, U+FFFE, a raw control character', async () => {
    for (const bad of ['half \uD83D of a pair', 'not \uFFFE a character', 'bell \u0007']) {
      expect(OUTSIDE_SQS_CHARACTERS.test(bad)).toBe(true);
      await expect(sqs.send(new SendMessageCommand({ QueueUrl: queueUrl, MessageBody: bad }))).rejects.toMatchObject({ name: expect.stringContaining('InvalidMessageContents') });
      const batch = await sqs.send(new SendMessageBatchCommand({ QueueUrl: queueUrl, Entries: [{ Id: 'x', MessageBody: bad }] }));
      expect(batch.Failed?.map((f) => f.Code)).toEqual(['InvalidMessageContents']);
    }
    expect(OUTSIDE_SQS_CHARACTERS.test(body)).toBe(false);
  });
});
