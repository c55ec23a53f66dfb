/**
 * The CLI's AWS target: table names and queue URLs come from the stage's stack outputs, settings
 * from its SSM parameter. CloudFormation and SSM have no local emulator here, so their answers
 * (and failures) are injected with aws-sdk-client-mock; nothing leaves the process.
 */
import { describe, it, expect, afterEach, beforeEach, jest } from '@jest/globals';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
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
  beforeEach(() => void (process.env.AWS_REGION = 'eu-west-1'));
  it('reads table names and queue URLs from the stack outputs and settings from SSM', async () => {
    cfn.on(DescribeStacksCommand, { StackName: 'Crm-prod' }).resolves({ Stacks: [{ StackName: 'Crm-prod', StackStatus: 'UPDATE_COMPLETE', CreationTime: new Date(), Outputs: outputs }] });
    ssm.on(GetParameterCommand).resolves({ Parameter: { Name: '/crm/prod/settings', Value: JSON.stringify({ stage: 'prod', pricePerCallMicros: 2500 }) } });
    const target = await resolveTarget({ stage: 'prod', stackFile: '/nonexistent/stack.json' });
    expect(target.kind).toBe('aws');
    expect(target.apiUrl).toBe('https://abc123.execute-api.eu-west-1.amazonaws.com/prod');
    expect(target.deps.tables.clients).toBe('Crm-prod-clients-XYZ');
    expect(target.deps.queues.deliveryDlq).toBe('https://sqs.eu-west-1.amazonaws.com/123456789012/deliveryDlq');
    expect(target.deps.config).toMatchObject({ stage: 'prod', pricePerCallMicros: 2500, local: false });
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

describe('crm --stage <stage>: region and local mode', () => {
  const saved = { ...process.env };
  beforeEach(() => {
    cfn.on(DescribeStacksCommand).resolves({ Stacks: [{ StackName: 'Crm-prod', StackStatus: 'UPDATE_COMPLETE', CreationTime: new Date(), Outputs: outputs }] });
    ssm.on(GetParameterCommand).resolves({ Parameter: { Name: '/crm/prod/settings', Value: JSON.stringify({ stage: 'prod', local: true }) } });
  });
  afterEach(() => {
    process.env = { ...saved };
    jest.restoreAllMocks();
  });

  it("builds every client with the profile's region when AWS_REGION is unset", async () => {
    jest.spyOn(console, 'error').mockImplementation(() => undefined);
    const dir = mkdtempSync(path.join(tmpdir(), 'crm-aws-config-'));
    writeFileSync(path.join(dir, 'config'), '[profile crm-eu]\nregion = eu-west-1\n');
    writeFileSync(path.join(dir, 'credentials'), '[crm-eu]\naws_access_key_id = AKIDEXAMPLE\naws_secret_access_key = secret\n');
    delete process.env.AWS_REGION;
    delete process.env.AWS_DEFAULT_REGION;
    Object.assign(process.env, { AWS_PROFILE: 'crm-eu', AWS_CONFIG_FILE: path.join(dir, 'config'), AWS_SHARED_CREDENTIALS_FILE: path.join(dir, 'credentials') });
    const target = await resolveTarget({ stage: 'prod', stackFile: '/nonexistent/stack.json' });
    const regions = await Promise.all([target.deps.dynamodb, target.deps.doc, target.deps.sqs, target.streams].map((c) => c.config.region()));
    expect(regions).toEqual(['eu-west-1', 'eu-west-1', 'eu-west-1', 'eu-west-1']);
    // The SSM read went to the same region.
    expect(await (ssm.call(0).thisValue as SSMClient).config.region()).toBe('eu-west-1');
    expect(target.describe).toContain('eu-west-1');
  });

  it('uses the stage\'s region from lib/stages.ts over AWS_REGION (the stack lives there); a stage without one falls back to the SDK\'s', async () => {
    process.env.AWS_REGION = 'us-east-2';
    jest.spyOn(console, 'error').mockImplementation(() => undefined);
    const target = await resolveTarget({ stage: 'prod', stackFile: '/nonexistent/stack.json' });
    expect(await Promise.all([target.deps.dynamodb, target.deps.sqs, target.streams].map((c) => c.config.region()))).toEqual(['eu-west-1', 'eu-west-1', 'eu-west-1']);
    expect(await (cfn.call(0).thisValue as { config: { region: () => Promise<string> } }).config.region()).toBe('eu-west-1');
    const other = await resolveTarget({ stage: 'qa', stackFile: '/nonexistent/stack.json' });
    expect(await other.deps.dynamodb.config.region()).toBe('us-east-2');
  });

  it('never runs a deployed stage in local mode, even if its parameter says local: true', async () => {
    process.env.AWS_REGION = 'eu-west-1';
    const warn = jest.spyOn(console, 'error').mockImplementation(() => undefined);
    const target = await resolveTarget({ stage: 'prod', stackFile: '/nonexistent/stack.json' });
    expect(target.deps.config.local).toBe(false);
    expect(warn).toHaveBeenCalledWith(expect.stringMatching(/"local": true ignored/));
  });

  it('drops allow-list entries over loopback or cloud metadata on a deployed stage, with a warning', async () => {
    process.env.AWS_REGION = 'eu-west-1';
    const allow = ['127.0.0.0/8', '10.20.0.0/16', '169.254.0.0/16', '::ffff:a9fe:a9fe', 'fd00:1234::/32'];
    ssm.on(GetParameterCommand).resolves({ Parameter: { Name: '/crm/prod/settings', Value: JSON.stringify({ stage: 'prod', ssrfAllowList: allow }) } });
    const warn = jest.spyOn(console, 'error').mockImplementation(() => undefined);
    const target = await resolveTarget({ stage: 'prod', stackFile: '/nonexistent/stack.json' });
    expect(target.deps.config.ssrfAllowList).toEqual(['10.20.0.0/16', 'fd00:1234::/32']);
    const warnings = warn.mock.calls.map((c) => String(c[0]));
    for (const cidr of ['127.0.0.0/8', '169.254.0.0/16', '::ffff:a9fe:a9fe']) expect(warnings).toContainEqual(expect.stringContaining(`"${cidr}" ignored`));
  });
});
