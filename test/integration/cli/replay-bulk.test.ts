/**
 * The runbook's answer to `BulkDeadLetters` (docs/deploy.md): `crm events replay-bulk` sends the
 * bulk shares the bulk fan-out gave up on back to the bulk queue, where the stack's bulk fan-out
 * records and delivers them once; a message that is no bulk share stays in the dead-letter queue.
 * The dead-letter queue is the test's own (the suites beside it share the stack's).
 */
import { randomUUID } from 'node:crypto';
import { rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, it, expect, beforeAll, afterAll } from '@jest/globals';
import { CreateQueueCommand, DeleteQueueCommand, GetQueueAttributesCommand, SendMessageCommand } from '@aws-sdk/client-sqs';
import { addEndpoint, updateEndpoint } from '../../../functions/core/delivery/endpoints.js';
import { listDeliveries } from '../../../functions/core/delivery/redeliver.js';
import type { BulkShare } from '../../../functions/core/events/bulk-share.js';
import { eventually, newTenant, runCli, testStack } from '../support/stack.js';
import { Receiver } from '../support/receiver.js';

const receiver = new Receiver();
let dlq: string;
let stackFile: string;
beforeAll(async () => {
  await receiver.start();
  const { deps, info, stackFile: shared } = await testStack();
  const name = `test-bulk-dlq-${randomUUID()}`;
  dlq = (await deps.sqs.send(new CreateQueueCommand({ QueueName: name }))).QueueUrl!;
  stackFile = path.join(path.dirname(shared), `${name}.json`);
  writeFileSync(stackFile, JSON.stringify({ ...info, queues: { ...info.queues, bulkDlq: dlq } }));
});
afterAll(async () => {
  await receiver.stop();
  await (await testStack()).deps.sqs.send(new DeleteQueueCommand({ QueueUrl: dlq }));
  rmSync(stackFile, { force: true });
});

const depth = async () => {
  const { Attributes = {} } = await (await testStack()).deps.sqs.send(new GetQueueAttributesCommand({
    QueueUrl: dlq, AttributeNames: ['ApproximateNumberOfMessages', 'ApproximateNumberOfMessagesNotVisible'],
  }));
  return Number(Attributes.ApproximateNumberOfMessages) + Number(Attributes.ApproximateNumberOfMessagesNotVisible);
};

describe('crm events replay-bulk', () => {
  it('moves a dead-lettered bulk share back to the bulk queue (delivered once), sends a repeat once, leaves a message that is no share, and a second run moves nothing', async () => {
    const { deps } = await testStack();
    const tenant = await newTenant({ name: 'Bulk Replay Co' });
    const { endpoint, secret } = await addEndpoint(deps, tenant.organizationId, { url: 'http://127.0.0.1:9/x', events: 'client.created' });
    await updateEndpoint(deps, tenant.organizationId, endpoint.id, { url: receiver.script('/bulk-replay', secret) });
    const at = new Date().toISOString();
    const ids = ['cli_replay1', 'cli_replay2', 'cli_replay3'];
    const share: BulkShare = {
      organizationId: tenant.organizationId,
      endpoints: [{ id: endpoint.id, enabled: true }],
      events: ids.map((id) => ({
        event: { id: `evt_${randomUUID()}`, type: 'client.created', api_version: '2024-01-01', timestamp: at, organization_id: tenant.organizationId, data: { object: { id, entity: 'client' } } },
        to: [0],
      })),
    };
    await deps.sqs.send(new SendMessageCommand({ QueueUrl: dlq, MessageBody: JSON.stringify(share), MessageGroupId: tenant.organizationId }));
    await deps.sqs.send(new SendMessageCommand({ QueueUrl: dlq, MessageBody: JSON.stringify(share), MessageGroupId: tenant.organizationId })); // a repeat (a stream batch's retry hands a share off twice): sent once

    // A dry run checks and counts, and moves nothing.
    const dry = await runCli(['events', 'replay-bulk', '--dry-run'], { stackFile });
    expect(dry.json()).toEqual({ messages: 2, moved: 1, duplicates: 1, failed: 0, dryRun: true });
    expect(await depth()).toBe(2);
    expect(await listDeliveries(deps, tenant.organizationId)).toEqual([]);

    const run = await runCli(['events', 'replay-bulk'], { stackFile });
    expect(run.code).toBe(0);
    expect(run.json()).toEqual({ messages: 2, moved: 1, duplicates: 1, failed: 0, dryRun: false });
    expect(await depth()).toBe(0);
    await eventually(async () => {
      const list = await listDeliveries(deps, tenant.organizationId);
      return list.length === 3 && list.every((d) => d.status === 'delivered') ? list : undefined;
    }, { what: 'the replayed share\'s deliveries' });
    await eventually(async () => receiver.on('/bulk-replay').length >= 3 || undefined, { what: 'the three webhooks' });
    // A second run finds nothing.
    expect((await runCli(['events', 'replay-bulk'], { stackFile })).json()).toEqual({ messages: 0, moved: 0, duplicates: 0, failed: 0, dryRun: false });

    // A message that is no bulk share is refused and stays, and the run says so in its exit code.
    await deps.sqs.send(new SendMessageCommand({ QueueUrl: dlq, MessageBody: '{"x":1}', MessageGroupId: tenant.organizationId }));
    const refused = await runCli(['events', 'replay-bulk'], { stackFile });
    expect(refused.code).toBe(1);
    expect(refused.json()).toEqual({ messages: 1, moved: 0, duplicates: 0, failed: 1, dryRun: false });
    expect(await depth()).toBe(1);

    // Each client's webhook once, signed, although the share was queued twice.
    await new Promise((resolve) => setTimeout(resolve, 1000));
    const received = receiver.on('/bulk-replay');
    expect(received.map((r) => r.event?.data.object.id).sort()).toEqual(ids);
    expect(received.every((r) => r.verifyError === undefined)).toBe(true);
    expect(await listDeliveries(deps, tenant.organizationId)).toHaveLength(3);
  }, 180_000);
});
