/**
 * The producers never send a body SQS refuses (platform/batches.ts sqsMessageBody): a lead's U+FFFE
 * or U+FFFF (valid UTF-8, noncharacters outside SQS's characters) is escaped in the JSON body, so
 * its notice and its deliveries are queued and read back as they were, where a raw one would fail
 * the fan-out's batch on every retry until it was parked. Against the local SQS (fauxqs, as strict
 * as SQS about characters: lib/local/sqs-characters.ts), in this process on 127.0.0.1.
 */
import { describe, it, expect, beforeAll, afterAll } from '@jest/globals';
import { SQSClient, CreateQueueCommand, ReceiveMessageCommand } from '@aws-sdk/client-sqs';
import { startSqsEmulator, localCredentials, type Emulator } from '../../../lib/local/emulators.js';
import { OUTSIDE_SQS_CHARACTERS } from '../../../lib/local/sqs-characters.js';
import { enqueueNotices } from '../../../functions/core/notify/notices-queue.js';
import { sqsDeliveryQueue } from '../../../functions/core/delivery/sqs-delivery-queue.js';
import { sqsMessageBody } from '../../../functions/core/platform/batches.js';
import type { Deps } from '../../../functions/core/platform/deps.js';
import type { NoticeMessage } from '../../../functions/core/notify/notice.js';
import type { DeliveryMessage } from '../../../functions/core/platform/model.js';

let emulator: Emulator;
let sqs: SQSClient;
beforeAll(async () => {
  emulator = await startSqsEmulator({});
  sqs = new SQSClient({ endpoint: emulator.endpoint, region: 'us-east-1', credentials: localCredentials, maxAttempts: 1, useQueueUrlAsEndpoint: false });
});
afterAll(async () => {
  sqs.destroy();
  await emulator.stop();
});

it('a body is the JSON of its value with U+FFFE and U+FFFF escaped, and parses back to the value', () => {
  const value = { name: 'a\uFFFFb\uFFFE💧', n: 1 };
  expect(sqsMessageBody(value)).toBe('{"name":"a\\uffffb\\ufffe💧","n":1}');
  expect(JSON.parse(sqsMessageBody(value))).toEqual(value);
  expect(OUTSIDE_SQS_CHARACTERS.test(sqsMessageBody(value))).toBe(false);
});

describe('what the producers queue', () => {
  const name = 'Zoë \uFFFF \uFFFE 💧';

  it('a notice and a delivery whose lead holds U+FFFE and U+FFFF are queued, and read back as they were', async () => {
    expect(OUTSIDE_SQS_CHARACTERS.test(JSON.stringify({ name }))).toBe(true); // as JSON.stringify writes it, SQS refuses it
    const { QueueUrl } = await sqs.send(new CreateQueueCommand({ QueueName: 'producers' }));
    const deps = { sqs, queues: { noticesQueue: QueueUrl, deliveryQueue: QueueUrl } } as unknown as Deps;
    const notice: NoticeMessage = { organizationId: 'org_chars', kind: 'lead.created', key: 'lead.created|org_chars|cli_1', at: '2030-01-15T12:00:00.000Z', data: { clientId: 'cli_1', name } };
    await enqueueNotices(deps, [notice]);
    const delivery = { deliveryId: 'dlv_1', organizationId: 'org_chars', endpointId: 'ep_1', round: 1, payload: { id: 'evt_1', type: 'client.created', organization_id: 'org_chars', data: { object: { first_name: name } } } } as unknown as DeliveryMessage;
    await sqsDeliveryQueue(deps).send('deliveryQueue', [{ message: delivery, delaySeconds: 0 }]);
    const { Messages = [] } = await sqs.send(new ReceiveMessageCommand({ QueueUrl, MaxNumberOfMessages: 10 }));
    const received = Messages.map((m) => JSON.parse(m.Body!) as unknown);
    expect(received).toHaveLength(2);
    expect(received).toEqual(expect.arrayContaining([notice, delivery]));
  });
});
