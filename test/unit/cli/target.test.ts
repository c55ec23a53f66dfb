/**
 * The CLI's AWS target: table names and queue URLs come from the stage's stack outputs, settings
 * from its SSM parameter. CloudFormation and SSM have no local emulator here, so their answers
 * (and failures) are injected with aws-sdk-client-mock; nothing leaves the process.
 */
import { describe, it, expect, afterEach } from '@jest/globals';
import { mockClient } from 'aws-sdk-client-mock';
import { CloudFormationClient, DescribeStacksCommand } from '@aws-sdk/client-cloudformation';
import { SSMClient, GetParameterCommand } from '@aws-sdk/client-ssm';
import { resolveTarget } from '../../../lib/cli/target.js';
import { outputKeys, queues, tables, type QueueName, type TableName } from '../../../lib/topology.js';

const cfn = mockClient(CloudFormationClient);
const ssm = mockClient(SSMClient);
afterEach(() => {
  cfn.reset();
  ssm.reset();
});

const outputs = [
  { OutputKey: outputKeys.apiUrl, OutputValue: 'https://abc123.execute-api.eu-west-1.amazonaws.com/prod' },
  { OutputKey: outputKeys.settingsParameter, OutputValue: '/crm/prod/settings' },
  ...Object.keys(tables).map((t) => ({ OutputKey: outputKeys.table(t as TableName), OutputValue: `Crm-prod-${t}-XYZ` })),
  ...Object.keys(queues).map((q) => ({ OutputKey: outputKeys.queue(q as QueueName), OutputValue: `https://sqs.eu-west-1.amazonaws.com/123456789012/${q}` })),
];

describe('crm --stage <stage>', () => {
  it('reads table names and queue URLs from the stack outputs and settings from SSM', async () => {
    cfn.on(DescribeStacksCommand, { StackName: 'Crm-prod' }).resolves({ Stacks: [{ StackName: 'Crm-prod', StackStatus: 'UPDATE_COMPLETE', CreationTime: new Date(), Outputs: outputs }] });
    ssm.on(GetParameterCommand).resolves({ Parameter: { Name: '/crm/prod/settings', Value: JSON.stringify({ stage: 'prod', pricePerCallMicros: 2500 }) } });
    const target = await resolveTarget({ stage: 'prod', stackFile: '/nonexistent/stack.json' });
    expect(target.kind).toBe('aws');
    expect(target.apiUrl).toBe('https://abc123.execute-api.eu-west-1.amazonaws.com/prod');
    expect(target.deps.tables.clients).toBe('Crm-prod-clients-XYZ');
    expect(target.deps.queues.deliveryDlq).toBe('https://sqs.eu-west-1.amazonaws.com/123456789012/deliveryDlq');
    expect(target.deps.settings).toMatchObject({ stage: 'prod', pricePerCallMicros: 2500, local: false });
  });

  it('says how to deploy when the stack does not exist', async () => {
    cfn.on(DescribeStacksCommand).rejects(Object.assign(new Error('Stack with id Crm-qa does not exist'), { name: 'ValidationError' }));
    await expect(resolveTarget({ stage: 'qa', stackFile: '/nonexistent/stack.json' })).rejects.toThrow(/npx cdk deploy -c stage=qa/);
  });

  it('asks for a redeploy when an output is missing', async () => {
    cfn.on(DescribeStacksCommand).resolves({ Stacks: [{ StackName: 'Crm-prod', StackStatus: 'UPDATE_COMPLETE', CreationTime: new Date(), Outputs: outputs.slice(0, 3) }] });
    await expect(resolveTarget({ stage: 'prod', stackFile: '/nonexistent/stack.json' })).rejects.toThrow(/has no output .*redeploy/);
  });
});
