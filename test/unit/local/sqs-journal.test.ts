/**
 * The local SQS's journal (lib/local/sqs-journal.ts): what was sent and not deleted survives the
 * emulator's restart, as on SQS, with its MessageId, body and delay; what was deleted does not come
 * back, and a message moved to its dead-letter queue comes back there. fauxqs runs in this process
 * on 127.0.0.1, reached through the SQS API.
 */
import { describe, it, expect, afterAll } from '@jest/globals';
import { mkdtempSync, mkdirSync, rmSync, appendFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { SQSClient, CreateQueueCommand, GetQueueAttributesCommand, SendMessageBatchCommand, ReceiveMessageCommand, DeleteMessageCommand, PurgeQueueCommand, DeleteQueueCommand, type Message } from '@aws-sdk/client-sqs';
import { startSqsEmulator, localCredentials } from '../../../lib/local/emulators.js';
import { journalMissingOverData } from '../../../lib/local/sqs-journal.js';

const dir = mkdtempSync(path.join(tmpdir(), 'crm-sqs-journal-'));
const journal = path.join(dir, 'sqs-journal.jsonl');
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** The emulator on the journal, its queues created (as provisioning does at every start). */
async function started() {
  const sqs = await startSqsEmulator({ port: 0, journal });
  const client = new SQSClient({ region: 'us-east-1', endpoint: sqs.endpoint, credentials: localCredentials, useQueueUrlAsEndpoint: false });
  const dlq = (await client.send(new CreateQueueCommand({ QueueName: 'dead' }))).QueueUrl!;
  const { Attributes } = await client.send(new GetQueueAttributesCommand({ QueueUrl: dlq, AttributeNames: ['QueueArn'] }));
  const url = (await client.send(new CreateQueueCommand({
    QueueName: 'work', Attributes: { VisibilityTimeout: '0', RedrivePolicy: JSON.stringify({ deadLetterTargetArn: Attributes!.QueueArn, maxReceiveCount: 1 }) },
  }))).QueueUrl!;
  const receive = async (queue: string): Promise<Message[]> => (await client.send(new ReceiveMessageCommand({ QueueUrl: queue, MaxNumberOfMessages: 10, WaitTimeSeconds: 0 }))).Messages ?? [];
  return { sqs, client, url, dlq, receive, stop: async () => { client.destroy(); await sqs.stop(); } };
}

describe('a journaled local SQS', () => {
  it('gives back, after a restart, exactly the messages sent and not deleted: same ids and bodies, a delayed one still delayed, a dead-lettered one in its dead-letter queue', async () => {
    let stack = await started();
    await stack.client.send(new SendMessageBatchCommand({ QueueUrl: stack.url, Entries: ['kept', 'deleted', 'dead'].map((body, i) => ({ Id: String(i), MessageBody: body, MessageGroupId: 'org_a' })) }));
    await stack.client.send(new SendMessageBatchCommand({ QueueUrl: stack.url, Entries: [{ Id: '0', MessageBody: 'later', DelaySeconds: 60, MessageGroupId: 'org_b' }] }));
    const first = await stack.receive(stack.url);
    expect(first.map((m) => m.Body).sort()).toEqual(['dead', 'deleted', 'kept']);
    const byBody = new Map(first.map((m) => [m.Body!, m]));
    await stack.client.send(new DeleteMessageCommand({ QueueUrl: stack.url, ReceiptHandle: byBody.get('deleted')!.ReceiptHandle! }));
    await stack.client.send(new DeleteMessageCommand({ QueueUrl: stack.url, ReceiptHandle: byBody.get('kept')!.ReceiptHandle! }));
    // `dead` was received once (maxReceiveCount 1): the next receive moves it to the dead-letter queue. `kept` is sent again, as a new message.
    await stack.client.send(new SendMessageBatchCommand({ QueueUrl: stack.url, Entries: [{ Id: '0', MessageBody: 'kept', MessageGroupId: 'org_a' }] }));
    expect((await stack.receive(stack.url)).map((m) => m.Body)).toEqual(['kept']);
    await stack.stop();
    appendFileSync(journal, '{"put":"work","mess'); // a line cut short by a kill: its send was never answered

    stack = await started();
    const again = await stack.receive(stack.url);
    expect(again.map((m) => m.Body)).toEqual(['kept']);
    expect(again[0].MessageId).not.toBe(byBody.get('kept')!.MessageId); // the second send's, the first was deleted
    expect((await stack.receive(stack.dlq)).map((m) => [m.Body, m.MessageId])).toEqual([['dead', byBody.get('dead')!.MessageId]]);
    await stack.stop();

    stack = await started(); // twice: the compacted journal holds the same
    expect((await stack.receive(stack.url)).map((m) => m.Body)).toEqual(['kept']);
    expect((await stack.receive(stack.dlq)).map((m) => m.Body)).toEqual(['dead']);
    const { Attributes } = await stack.client.send(new GetQueueAttributesCommand({ QueueUrl: stack.url, AttributeNames: ['ApproximateNumberOfMessagesDelayed'] }));
    expect(Attributes?.ApproximateNumberOfMessagesDelayed).toBe('1'); // `later`, still delayed
    await stack.stop();
  });

  it('keeps a purge and a deleted queue across a restart: their messages do not come back, and what is sent after a purge does', async () => {
    let stack = await started();
    await stack.client.send(new SendMessageBatchCommand({ QueueUrl: stack.url, Entries: ['p1', 'p2'].map((body, i) => ({ Id: String(i), MessageBody: body })) }));
    await stack.client.send(new SendMessageBatchCommand({ QueueUrl: stack.dlq, Entries: [{ Id: '0', MessageBody: 'in a deleted queue' }] }));
    await stack.client.send(new PurgeQueueCommand({ QueueUrl: stack.url }));
    await stack.client.send(new SendMessageBatchCommand({ QueueUrl: stack.url, Entries: [{ Id: '0', MessageBody: 'after the purge' }] }));
    await stack.client.send(new DeleteQueueCommand({ QueueUrl: stack.dlq }));
    await stack.stop();

    for (let restart = 0; restart < 2; restart++) { // the compacted journal holds the same
      stack = await started(); // creates `dead` again, by the same name
      const kept = await stack.receive(stack.url);
      expect(kept.map((m) => m.Body)).toEqual(['after the purge']);
      expect((await stack.receive(stack.dlq)).map((m) => m.Body)).not.toContain('in a deleted queue');
      await stack.stop();
    }
  });

  it('tells a stack folder from before the journal (tables, no journal: its pending deliveries are queued again once) from a new one and a journaled one', () => {
    const folder = mkdtempSync(path.join(dir, 'stack-'));
    const [file, tables] = [path.join(folder, 'sqs-journal.jsonl'), path.join(folder, 'dynamodb')];
    expect(journalMissingOverData(file, tables)).toBe(false); // a new stack
    mkdirSync(tables);
    expect(journalMissingOverData(file, tables)).toBe(false); // no data yet
    writeFileSync(path.join(tables, 'shared-local-instance.db'), '');
    expect(journalMissingOverData(file, tables)).toBe(true); // an upgraded stack
    writeFileSync(file, '');
    expect(journalMissingOverData(file, tables)).toBe(false); // journaled since
  });
});
