/**
 * Settings are read per invocation through the SSM cache, as on Lambda: a changed parameter reaches
 * the running handlers after its max age, and a failing SSM never breaks a container for good.
 * The first test changes the parameter of the suite's stack through its SSM stand-in; the others
 * run a real handler in this process against a stand-in of their own, where failures are injected.
 */
import { describe, it, expect, beforeAll, afterAll, beforeEach, jest } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import { SSMClient, GetParameterCommand, PutParameterCommand } from '@aws-sdk/client-ssm';
import type { DynamoDBStreamEvent, Context } from 'aws-lambda';
import { testStack, newTenant, eventually } from '../support/stack.js';
import { startSsmStandIn, type SsmStandIn } from '../../../lib/local/ssm-stand-in.js';
import { settingsParameterEnvVar } from '../../../lib/topology.js';
import { localStackMarkerEnvVar, resetSettingsCache } from '../../../functions/core/settings.js';
import { lambdaDeps } from '../../../functions/core/clients.js';
import { logger } from '../../../functions/core/observability.js';

const credentials = { accessKeyId: 'local', secretAccessKey: 'local' };

describe('the local stack reads settings from its SSM stand-in', () => {
  it('a PutParameter reaches the running handlers after the max age', async () => {
    const { info, api } = await testStack();
    expect(info.ssmEndpoint).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    const ssm = new SSMClient({ region: info.region, endpoint: info.ssmEndpoint, credentials });
    const plan = `probe-${randomUUID().slice(0, 8)}`;
    const tenant = await newTenant({ plan });
    const limit = async () => (await api('/api/webhook/leads', { headers: { 'X-API-Key': tenant.key } })).headers.get('X-RateLimit-Limit');
    expect(await limit()).toBe('100'); // no limit for this plan yet: the default

    const current = JSON.parse((await ssm.send(new GetParameterCommand({ Name: info.settingsParameter }))).Parameter!.Value!);
    expect(current.settingsMaxAgeSeconds).toBe(1);
    const changed = { ...current, planRateLimits: { ...current.planRateLimits, [plan]: 7 } };
    await ssm.send(new PutParameterCommand({ Name: info.settingsParameter, Value: JSON.stringify(changed), Type: 'String', Overwrite: true }));
    await eventually(async () => (await limit()) === '7', { timeoutMs: 10_000, what: 'the new plan limit in X-RateLimit-Limit' });
    ssm.destroy();
  });
});

describe('a handler whose SSM fails', () => {
  const name = '/crm/probe/settings';
  const saved = { ...process.env };
  let standIn: SsmStandIn;
  let handler: (event: DynamoDBStreamEvent, context: Context) => Promise<unknown>;
  const invoke = () => handler({ Records: [] }, {} as Context);
  const put = (settings: Record<string, unknown>) => standIn.put(name, JSON.stringify({ settingsMaxAgeSeconds: 1, ...settings }));
  const unavailable = { type: 'InternalServerError', status: 500 };

  beforeAll(async () => {
    standIn = await startSsmStandIn();
    delete process.env.CRM_SETTINGS;
    delete process.env[localStackMarkerEnvVar];
    Object.assign(process.env, { AWS_REGION: 'us-east-1', AWS_ACCESS_KEY_ID: 'local', AWS_SECRET_ACCESS_KEY: 'local', AWS_ENDPOINT_URL_SSM: standIn.endpoint, [settingsParameterEnvVar]: name });
    ({ handler } = await import('../../../functions/event-fanout/handler.js'));
  });
  afterAll(async () => {
    process.env = { ...saved };
    await standIn.stop();
  });
  beforeEach(() => {
    resetSettingsCache();
    standIn.failWith(undefined);
  });

  it('retries a transient error within the invocation', async () => {
    put({ pricePerCallMicros: 1111 });
    standIn.failWith(unavailable, 1);
    const before = standIn.requests;
    await expect(invoke()).resolves.toEqual({ batchItemFailures: [] });
    expect(standIn.requests - before).toBe(2);
  });

  it('fails the invocation while SSM is down on a cold start, and the next one succeeds once it is back', async () => {
    put({ pricePerCallMicros: 2222 });
    standIn.failWith(unavailable);
    await expect(invoke()).rejects.toThrow();
    standIn.failWith(undefined);
    await expect(invoke()).resolves.toEqual({ batchItemFailures: [] });
    expect((await lambdaDeps()).settings.pricePerCallMicros).toBe(2222);
  });

  it('serves the previous settings while SSM is down, then picks up the new value', async () => {
    put({ pricePerCallMicros: 3333 });
    expect((await lambdaDeps()).settings.pricePerCallMicros).toBe(3333);
    const warn = jest.spyOn(logger, 'warn').mockImplementation(() => undefined);
    put({ pricePerCallMicros: 4444 });
    standIn.failWith(unavailable);
    const failedReads = standIn.requests;
    // Past the max age the read fails: every invocation still succeeds on the previous value.
    await eventually(async () => (await invoke()) && standIn.requests > failedReads, { what: 'a failed read after the max age' });
    expect((await lambdaDeps()).settings.pricePerCallMicros).toBe(3333);
    expect(warn).toHaveBeenCalledWith(expect.stringMatching(/serving the previous value/), expect.anything());
    standIn.failWith(undefined);
    await eventually(async () => (await lambdaDeps()).settings.pricePerCallMicros === 4444, { what: 'the new value after SSM recovered' });
    warn.mockRestore();
  });

  it('never enables local mode from settings read on Lambda', async () => {
    put({ local: true });
    const warn = jest.spyOn(logger, 'warn').mockImplementation(() => undefined);
    process.env.AWS_LAMBDA_FUNCTION_NAME = 'Crm-prod-eventFanout';
    try {
      expect((await lambdaDeps()).settings.local).toBe(false);
      expect(warn).toHaveBeenCalledWith(expect.stringMatching(/"local": true ignored/));
      // The local stack (which sets its marker) is the one place it takes effect.
      resetSettingsCache();
      process.env[localStackMarkerEnvVar] = '1';
      expect((await lambdaDeps()).settings.local).toBe(true);
    } finally {
      delete process.env.AWS_LAMBDA_FUNCTION_NAME;
      delete process.env[localStackMarkerEnvVar];
      warn.mockRestore();
    }
  });
});
